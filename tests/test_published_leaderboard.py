"""The leaderboard of published logs on logs built here: its rows and envelopes, the comparisons with
Gaussian training (a method that beats it, one that does not, the Holm family), and p_A recovered."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from published_helpers import gaussian_like, log_text, registry_row, write_registry
from scipy.stats import norm
from statsmodels.stats.multitest import multipletests

from ddrs.analysis.metrics import acr, true_class_p_a_lower
from ddrs.analysis.stats import Inference
from ddrs.jobs.logs import read_log
from ddrs.published.gaussian_comparisons import choose_baseline, gaussian_comparisons_table
from ddrs.published.leaderboard import ENVELOPE, leaderboard_table, load_entries, read_entries, save_entries
from ddrs.published.leaderboard_figures import p_a_figure, recovered_p_a_lower, shown_methods
from ddrs.published.registry import load_registry

N = 600
RADII = (0.0, 0.25, 0.5, 0.75)
INFERENCE = Inference(n_boot=300, seed=0)


@pytest.fixture
def world(tmp_path):
    """Gaussian at σ 0.25 and 0.5, a strong method at both, a method within noise of Gaussian at 0.5,
    and a byte-identical copy of the Gaussian σ = 0.5 log under another repository."""
    logs = {}
    gaussian = {s: gaussian_like(N, s, 0.6, 2.0, seed=int(100 * s)) for s in (0.25, 0.5)}
    for sigma, (correct, radius) in gaussian.items():
        logs[f"gaussian/{sigma}"] = (log_text(correct, radius), {"sigma": sigma, "noise": sigma})
    for sigma in (0.25, 0.5):
        correct, radius = gaussian_like(N, sigma, 0.85, 3.0, seed=7 + int(100 * sigma))
        fields = {"sigma": sigma, "noise": sigma, "method_authors": "strong", "method": "external"}
        logs[f"strong/{sigma}"] = (log_text(correct, radius), fields)
    correct, radius = gaussian[0.5]
    flip = np.arange(N) < 3  # three inputs changed: no test can tell it from Gaussian
    same = (correct ^ flip, np.where(flip, 0.1, radius))
    logs["same/0.5"] = (log_text(*same), {"method_authors": "same", "method": "consistency"})
    rows, files = [], {}
    for name, (text, fields) in logs.items():
        path = tmp_path / name.replace("/", "_")
        path.write_text(text)
        rows.append(registry_row(f"data/{name}", text, **fields))
        files[rows[-1]["repository"], rows[-1]["path"]] = path
    copy = registry_row("copy/gaussian_0.5", logs["gaussian/0.5"][0], repository="other/repo")
    rows.append(copy)
    files["other/repo", copy["path"]] = tmp_path / "gaussian_0.5"
    registry = load_registry(write_registry(tmp_path / "registry.csv", rows))
    return load_entries(registry, "cifar10", files)


def row_of(frame, method, sigma):
    return frame[(frame["method"] == method) & (frame["sigma"] == sigma)].iloc[0]


def test_a_byte_identical_copy_counts_once_under_its_first_name(world):
    names = [entry.name for entry in world]
    assert len(names) == 5
    gaussian = next(entry for entry in world if entry.name == "someone/smoothing:data/gaussian/0.5")
    assert gaussian.names == ("someone/smoothing:data/gaussian/0.5", "other/repo:copy/gaussian_0.5")
    assert gaussian.shipped_by("other/repo") and not gaussian.shipped_by("third/repo")


def test_the_leaderboard_holds_every_log_and_each_method_s_envelope_over_sigma(world):
    table = leaderboard_table(world, "cifar10", RADII, inference=INFERENCE)
    assert len(table) == 5 + 3  # the logs, and the envelopes of gaussian, strong and same
    strong = table[table["method"] == "strong"]
    assert list(strong["sigma"]) == [ENVELOPE, "0.25", "0.5"]
    envelope, logs = strong.iloc[0], strong.iloc[1:]
    for column in ("0.00", "0.50", "0.75"):
        assert envelope[column] == logs[column].max()
        assert envelope[f"{column}_low"] <= envelope[column] <= envelope[f"{column}_high"]
    assert envelope["ACR_per_log"] == pytest.approx(logs["ACR"].max())
    assert envelope["ACR_per_input_best"] >= envelope["ACR_per_log"]
    assert (table.loc[table["method"] == "strong", "rank"] == 1).all()  # the best ACR ranks first
    assert row_of(table, "gaussian", "0.5")["also_at"] == "other/repo:copy/gaussian_0.5"
    assert table.attrs["bold_cells"] == frozenset()


def test_a_dataset_s_logs_read_once_give_the_same_leaderboard(world, tmp_path):
    save_entries(world, tmp_path / "cifar10.npz")
    again = read_entries(tmp_path / "cifar10.npz")
    assert [(entry.log, entry.names) for entry in again] == [(entry.log, entry.names) for entry in world]
    expected = leaderboard_table(world, "cifar10", RADII, inference=INFERENCE)
    pd.testing.assert_frame_equal(leaderboard_table(again, "cifar10", RADII, inference=INFERENCE), expected)


def test_a_stronger_method_beats_gaussian_significantly_and_one_within_noise_does_not(world):
    table = gaussian_comparisons_table(world, "cifar10", RADII, inference=INFERENCE)
    strong = row_of(table, "strong", 0.5)
    assert strong["baseline"] == "someone/smoothing:data/gaussian/0.5"
    assert strong["inputs"] == N and strong["tested"]
    assert strong["ACR"] > 0 and strong["ACR_p_holm"] < 0.05 and strong["ACR_low"] > 0
    assert "ACR" in strong["better_at"].split() and "0.00" in strong["better_at"].split()
    assert strong["0.00_better"] > strong["0.00_worse"]
    same = row_of(table, "same", 0.5)
    assert same["better_at"] == same["worse_at"] == ""
    assert (same[[f"{c}_p_holm" for c in ("0.00", "0.25", "0.50", "0.75", "ACR")]] >= 0.05).all()
    bold = table.attrs["bold_cells"]
    assert (strong.name, "ACR") in bold and not any(row == same.name for row, _ in bold)


def test_holm_adjusts_over_one_method_at_one_sigma(world):
    """The family of a (method, σ): its radii and ACR, less the tests that cannot reject (fewer than
    two discordant inputs); statsmodels' Holm on the same p gives the same adjusted p."""
    table = gaussian_comparisons_table(world, "cifar10", RADII, inference=INFERENCE)
    strong = row_of(table, "strong", 0.25)
    columns = ["0.00", "0.25", "0.50", "0.75", "ACR"]
    p = strong[[f"{c}_p" for c in columns]].to_numpy(float)
    discordant = [strong[f"{c}_better"] + strong[f"{c}_worse"] for c in columns[:-1]]
    can_reject = np.array([d >= 2 for d in discordant] + [True])
    expected = p.copy()
    expected[can_reject] = multipletests(p[can_reject], method="holm")[1]
    assert strong[[f"{c}_p_holm" for c in columns]].to_numpy(float) == pytest.approx(expected)
    assert (expected[can_reject] >= p[can_reject]).all() and (expected[can_reject] > p[can_reject]).any()


def test_the_baseline_is_the_log_s_own_repository_s_gaussian_with_the_same_labels(world):
    by_name = {entry.name: entry for entry in world}
    strong = by_name["someone/smoothing:data/strong/0.5"]
    gaussians = [entry for entry in world if entry.log.method == "cohen"]
    assert choose_baseline(strong, gaussians).baseline.name == "someone/smoothing:data/gaussian/0.5"
    gaussian = by_name["someone/smoothing:data/gaussian/0.5"]
    assert choose_baseline(gaussian, [gaussian]) is None  # never itself
    relabelled = type(gaussian)(gaussian.log, gaussian.names, gaussian.frame.assign(label=gaussian.frame["label"] + 1))
    assert choose_baseline(strong, [relabelled]) is None  # another order of the test set: no pairing


def test_p_a_is_recovered_from_radius_and_sigma_where_the_radius_is_positive(tmp_path):
    p = np.array([0.6, 0.9, 0.999, 0.4, 0.5])
    sigma = 0.5
    radius = np.where(p > 0.5, sigma * norm.ppf(p), 0.0)
    text = log_text(np.array([True, True, True, False, True]), radius)
    (tmp_path / "log.tsv").write_text(text)
    frame = read_log(tmp_path / "log.tsv")
    recovered = recovered_p_a_lower(frame, sigma)["p_a_lower"].to_numpy()
    assert recovered[:3] == pytest.approx(p[:3], abs=2e-3)  # to the radius' three printed digits
    assert recovered[3] == recovered[4] == 0.5  # an abstention and radius 0: only p̲A ≤ ½
    true_class = true_class_p_a_lower(recovered_p_a_lower(frame, sigma)).to_numpy()
    assert true_class[3] == 0 and true_class[4] == 0.5


def test_the_p_a_figure_draws_one_panel_per_sigma_and_states_the_recovery_s_limits(world):
    shown = shown_methods(world, top=1)
    assert [key.method_authors for key in shown] == ["strong", "gaussian"]  # the best, and the best Gaussian
    assert acr(shown[next(iter(shown))][0].frame) > 0
    figure = p_a_figure(world, "cifar10", top=1)
    panels = [ax for ax in figure.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["σ = 0.25", "σ = 0.5"]
    assert all(len(ax.get_lines()) == 2 for ax in panels)
    note = figure.legends[0].get_title().get_text()
    assert "lower bound" in note and "predicted" in note and "≤ ½" in note
