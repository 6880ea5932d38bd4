"""The leaderboard of published logs on logs built here: its rows and envelopes, ranks within input
sets, the comparisons with Gaussian training (a method that beats it, one that does not, the baseline
rule, Sun et al.'s second baseline, one Holm family, the headline), the figure of each family's best
log, p_A recovered, and a user's own log placed among them."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from published_helpers import (
    REPOSITORY,
    gaussian_like,
    git_repository,
    log_text,
    order_label_table,
    registry_row,
    write_families,
    write_registry,
)
from scipy.stats import binom, levene, norm
from scipy.stats import t as student_t
from statsmodels.stats.multitest import multipletests

from ddrs.analysis.metrics import paper_radii, true_class_p_a_lower
from ddrs.analysis.plots import save_figure
from ddrs.analysis.stats import Inference
from ddrs.errors import DDRSError
from ddrs.logs.certification_log import read_log
from ddrs.pipeline.build import write
from ddrs.pipeline.catalogue import CATALOGUE
from ddrs.published import builders
from ddrs.published.families import read_families
from ddrs.published.gaussian_comparisons import choose_baseline, gaussian_comparisons_table
from ddrs.published.headline import headline, run_margins
from ddrs.published.leaderboard import (
    ENVELOPE,
    dataset_logs,
    leaderboard_table,
    load_entries,
    read_entries,
    save_entries,
)
from ddrs.published.leaderboard_figures import curves_figure, family_lines, p_a_figure, recovered_p_a_lower
from ddrs.published.log_registry import load_registry
from ddrs.published.own_logs import OwnLogError, OwnLogWarning, own_entries
from ddrs.published.run_margin import levene_p, replicated_recipes, replication_table, run_spread, welch_margin

N = 600
RADII = (0.0, 0.25, 0.5, 0.75)
INFERENCE = Inference(n_boot=300, seed=0)


FAMILIES = {
    "gaussian": "Gaussian",
    "strong": "Strong",
    "same": "consistency",
    "pretrained": "Strong",
    "half": "Strong",
    "near": "Near",
    "far": "Far",
    "steady": "Steady",
    "wild": "Wild",
    "pair": "Pair",
    "single": "Single",
}


def build(tmp_path, logs: dict, extra_rows=()) -> tuple:
    """``logs`` (name → (text, registry fields)) written and registered, with their families; returns
    the registry, the local files and the families table."""
    rows, files = [], {}
    for name, (text, fields) in logs.items():
        path = tmp_path / name.replace("/", "_")
        path.write_text(text)
        rows.append(registry_row(f"data/{name}", text, **fields))
        files[rows[-1]["repository"], rows[-1]["path"]] = path
    for row, path in extra_rows:
        rows.append(row)
        files[row["repository"], row["path"]] = path
    registry = load_registry(write_registry(tmp_path / "registry.csv", rows))
    extra = {"pretrained": "ImageNet pre-training"}
    families = read_families(write_families(tmp_path / "families.csv", rows, FAMILIES, extra))
    return registry, files, families


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
    copy = registry_row("copy/gaussian_0.5", logs["gaussian/0.5"][0], repository="other/repo")
    registry, files, families = build(tmp_path, logs, [(copy, tmp_path / "gaussian_0.5")])
    return load_entries(registry, "cifar10", files, families)


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


def test_holm_adjusts_over_every_test_of_the_table_at_once(world):
    """One family: every tested row × radius and ACR, less the tests that cannot reject (fewer than
    two discordant or differing inputs); statsmodels' Holm on the same p gives the same adjusted p."""
    table = gaussian_comparisons_table(world, "cifar10", RADII, inference=INFERENCE)
    tested = table[table["tested"]]
    columns = ["0.00", "0.25", "0.50", "0.75", "ACR"]
    p = tested[[f"{c}_p" for c in columns]].to_numpy(float)
    discordant = (
        tested[[f"{c}_better" for c in columns[:-1]]].to_numpy()
        + tested[[f"{c}_worse" for c in columns[:-1]]].to_numpy()
    )
    can_reject = np.column_stack([discordant >= 2, np.ones(len(tested), dtype=bool)])
    expected = p.copy()
    expected[can_reject] = multipletests(p[can_reject], method="holm")[1]
    assert tested[[f"{c}_p_holm" for c in columns]].to_numpy(float) == pytest.approx(expected)
    assert can_reject.sum() > 5  # more than one method × σ in the family


def test_the_baseline_never_is_the_log_itself_nor_one_of_other_labels(world):
    by_name = {entry.name: entry for entry in world}
    strong = by_name["someone/smoothing:data/strong/0.5"]
    gaussians = [entry for entry in world if entry.family.name == "Gaussian"]
    assert choose_baseline(strong, gaussians).baseline.name == "someone/smoothing:data/gaussian/0.5"
    gaussian = by_name["someone/smoothing:data/gaussian/0.5"]
    assert choose_baseline(gaussian, [gaussian]) is None  # never itself
    relabelled = type(gaussian)(
        gaussian.log, gaussian.names, gaussian.frame.assign(label=gaussian.frame["label"] + 1), gaussian.family
    )
    assert choose_baseline(strong, [relabelled]) is None  # another order of the test set: no pairing


def test_the_baseline_rule_takes_the_same_inputs_then_architecture_then_repository(tmp_path):
    """A log of the full test set in repository A: its own repository's Gaussian of another architecture
    and another Gaussian over half the inputs lose to one of the same inputs and architecture elsewhere."""
    correct, radius = gaussian_like(N, 0.5, 0.6, 2.0, seed=1)
    half = np.arange(N // 2)
    text = log_text(correct, radius)
    logs = {
        "method": (
            log_text(*gaussian_like(N, 0.5, 0.8, 3.0, seed=2)),
            {"method_authors": "strong", "repository": "a/a"},
        ),
        "own_repository_other_arch": (text, {"repository": "a/a", "arch": "densenet40"}),
        "own_repository_half": (log_text(correct[half], radius[half], idx=half), {"repository": "a/a"}),
        # the same rows under another time stamp: another sha256, not a copy of the first
        "elsewhere_same_arch": (
            text.replace("0:00:01.250000", "0:00:01.250001"),
            {"repository": "b/b", "arch": "cifar_resnet110"},
        ),
    }
    registry, files, families = build(tmp_path, logs)
    entries = {entry.name.split("data/")[1]: entry for entry in load_entries(registry, "cifar10", files, families)}
    gaussians = [entry for entry in entries.values() if entry.family.name == "Gaussian"]
    assert choose_baseline(entries["method"], gaussians).baseline is entries["elsewhere_same_arch"]
    no_arch = [entries["own_repository_other_arch"], entries["own_repository_half"]]
    assert choose_baseline(entries["method"], no_arch).baseline is entries["own_repository_other_arch"]


def test_sun_et_al_s_gaussian_is_a_second_baseline_and_gaussian_logs_are_not_counted_as_winners(tmp_path):
    sun = gaussian_like(N, 0.5, 0.7, 2.5, seed=5)
    logs = {
        "gaussian": (log_text(*gaussian_like(N, 0.5, 0.6, 2.0, seed=1)), {}),
        "sun_gaussian": (log_text(*sun), {"repository": "eth-sri/acr-weakness", "paper": "sun2024"}),
        "strong": (log_text(*gaussian_like(N, 0.5, 0.9, 3.0, seed=2)), {"method_authors": "strong"}),
    }
    registry, files, families = build(tmp_path, logs)
    entries = load_entries(registry, "cifar10", files, families)
    table = gaussian_comparisons_table(entries, "cifar10", RADII, inference=INFERENCE)
    strong = table[table["method"] == "strong"].set_index("against")
    assert strong.loc["Gaussian", "baseline"] == "someone/smoothing:data/gaussian"  # its own repository's
    assert strong.loc["Gaussian (Sun et al. 2024)", "baseline"] == "eth-sri/acr-weakness:data/sun_gaussian"
    summary = headline(table, replication_table(entries, "cifar10", 0.05), 0.05).set_index(
        ["against", "logs", "family"]
    )
    assert summary.loc[("Gaussian", "all", "all"), ["compared", "better_ACR"]].tolist() == [1, 1]
    sun = ("Gaussian (Sun et al. 2024)", "those Gaussian (Sun et al. 2024) applies to", "all")
    assert summary.loc[sun, "compared"] == 1
    assert summary.loc[("Gaussian", "all", "all"), "gaussian_compared"] == 2  # each Gaussian log against the other
    assert summary.loc[("Gaussian", "all", "Strong"), "methods"] == 1


def test_the_leaderboard_ranks_within_input_sets(tmp_path):
    half = np.arange(0, N, 2)
    strong = gaussian_like(len(half), 0.5, 0.95, 3.5, seed=3)
    logs = {
        "gaussian": (log_text(*gaussian_like(N, 0.5, 0.6, 2.0, seed=1)), {}),
        "half": (log_text(*strong, idx=half), {"method_authors": "half"}),
    }
    registry, files, families = build(tmp_path, logs)
    table = leaderboard_table(load_entries(registry, "cifar10", files, families), "cifar10", RADII, inference=INFERENCE)
    envelopes = table[table["sigma"] == ENVELOPE].set_index("method")
    assert envelopes.loc["gaussian", "input_set"] == f"{N} inputs: idx 0:{N - 1}:1, standard order"
    assert envelopes.loc["half", "input_set"] == f"{N // 2} inputs: idx 0:{N - 2}:2, standard order"
    assert envelopes["rank"].tolist() == [1, 1]  # each first of its input set, the larger set first
    assert envelopes.loc["half", "family"] == "Strong"


def test_the_figure_draws_each_family_s_best_log_at_each_sigma_on_inputs_common_to_its_lines(tmp_path):
    """Strong's best on the full set is its weaker full log (its better log covers half the inputs);
    each panel is one σ, so Strong's σ = 0.25 log, of the higher ACR, is never drawn beside σ = 0.5
    logs; the extra-data family is dashed in the same panel; only Gaussian has a band; a radius past
    its log's cap σ·Φ⁻¹(α^(1/n)) is named in its panel."""
    half = np.arange(0, N, 2)
    correct, radius = gaussian_like(N, 0.5, 0.6, 2.0, seed=1)
    radius[np.flatnonzero(correct)[0]] = 2.5  # above the cap of n = 100,000 at σ = 0.5 (1.907)
    logs = {
        "gaussian": (log_text(correct, radius), {}),
        "gaussian_0.25": (log_text(*gaussian_like(N, 0.25, 0.7, 2.0, seed=5)), {"sigma": 0.25, "noise": 0.25}),
        "strong": (log_text(*gaussian_like(N, 0.5, 0.8, 3.0, seed=2)), {"method_authors": "strong"}),
        "strong_0.25": (
            log_text(*gaussian_like(N, 0.25, 0.99, 3.5, seed=6)),
            {"method_authors": "strong", "sigma": 0.25, "noise": 0.25},
        ),
        "half": (log_text(*gaussian_like(len(half), 0.5, 0.95, 3.5, seed=3), idx=half), {"method_authors": "half"}),
        "pretrained": (log_text(*gaussian_like(N, 0.5, 0.85, 3.0, seed=4)), {"method_authors": "pretrained"}),
    }
    registry, files, families = build(tmp_path, logs)
    entries = load_entries(registry, "cifar10", files, families)
    lines = family_lines(entries)
    assert len(lines.idx) == N and lines.left_out == ()
    figure = curves_figure(entries, "cifar10")
    panels = {ax.get_title(): ax for ax in figure.axes}
    assert list(panels) == ["σ = 0.25", "σ = 0.5"]
    at_half = panels["σ = 0.5"]
    drawn = {line.get_label(): line for line in at_half.get_lines() if not line.get_label().startswith("_")}
    assert list(drawn) == ["Gaussian", "Strong", "Strong + extra data (ImageNet pre-training)"]
    strong = next(entry for entry in entries if entry.name.endswith("data/strong"))
    assert drawn["Strong"].get_ydata()[0] == pytest.approx(100 * strong.frame["correct"].mean())
    assert drawn["Strong + extra data (ImageNet pre-training)"].get_linestyle() == "--"
    assert len(at_half.collections) == 1  # Gaussian's band alone
    assert [text.get_text() for text in at_half.texts] == ["past its cap: Gaussian"]
    assert len(panels["σ = 0.25"].texts) == 0
    assert "impossible_radius" in figure.legends[0].get_title().get_text()


def test_a_user_s_own_log_is_ranked_and_compared_with_gaussian_and_each_family_s_best(world, tmp_path):
    """The own log is an entry like the published ones (and survives the dataset's entries file), first
    on the leaderboard, compared with the matched Gaussian log and the best log of every family."""
    published = world
    (tmp_path / "mine.tsv").write_text(log_text(*gaussian_like(N, 0.5, 0.95, 3.5, seed=11)))
    own = {"mine": {"dataset": "cifar10", "sigma": 0.5, "path": str(tmp_path / "mine.tsv"), "n": 100_000}}
    save_entries([*published, *own_entries(own, "cifar10", published)], tmp_path / "entries.npz")
    entries = read_entries(tmp_path / "entries.npz")
    table = leaderboard_table(entries, "cifar10", RADII, inference=INFERENCE)
    assert table.iloc[0]["method"] == "mine" and table.iloc[0]["rank"] == 1 and table.iloc[0]["family"] == "mine"
    versus = gaussian_comparisons_table(entries, "cifar10", RADII, inference=INFERENCE)
    mine = versus[versus["method"] == "mine"].set_index("against")
    assert set(mine.index) == {"Gaussian", "best Gaussian", "best Strong", "best consistency"}
    assert mine.loc["best Strong", "baseline"] == "someone/smoothing:data/strong/0.5"  # the better of its two logs
    assert "ACR" in mine.loc["best Strong", "better_at"].split()
    summary = headline(versus, replication_table(entries, "cifar10", 0.05), 0.05)
    assert summary.loc[0, "compared"] == 3  # strong ×2 and same; not the user's log


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda idx, labels: (idx + 10_000, labels),
            r"mine\.tsv: own log 'mine': its 600 inputs are not a published input set of cifar10; the nearest, 600 "
            r"inputs: idx 0:599:1, standard order, has 600 it lacks .* holds 600 beyond it",
        ),
        (
            lambda idx, labels: (idx, (labels + 1) % 10),
            r"mine\.tsv: own log 'mine': 600 of its 600 labels differ from cifar10's published logs of these inputs",
        ),
    ],
)
def test_an_own_log_of_other_inputs_or_labels_is_refused_naming_the_file(world, tmp_path, change, message):
    idx, labels = change(np.arange(N), np.arange(N) % 10)
    text = log_text(*gaussian_like(N, 0.5, 0.9, 3.0, seed=12), idx=idx, labels=labels)
    (tmp_path / "mine.tsv").write_text(text)
    with pytest.raises(OwnLogError, match=message):
        own_entries(
            {"mine": {"dataset": "cifar10", "sigma": 0.5, "path": str(tmp_path / "mine.tsv"), "n": 100_000}},
            "cifar10",
            world,
        )


def _gaussian_and_strong_mirror(tmp_path) -> tuple:
    """A mirror at ``tmp_path/mirror`` holding a Gaussian log and a stronger method's, and the
    registry and families files naming them (what ``ddrs logs rank`` reads)."""
    gaussian = log_text(*gaussian_like(N, 0.5, 0.6, 2.0, seed=1))
    strong = log_text(*gaussian_like(N, 0.5, 0.8, 3.0, seed=2))
    commit = git_repository(tmp_path / "mirror", {"data/gaussian": gaussian, "data/strong": strong})
    rows = [
        registry_row("data/gaussian", gaussian, commit=commit),
        registry_row("data/strong", strong, commit=commit, method_authors="strong", method="external"),
    ]
    return write_registry(tmp_path / "registry.csv", rows), write_families(tmp_path / "families.csv", rows, FAMILIES)


def test_ddrs_logs_rank_places_an_own_log_from_the_command_line_and_refuses_one_of_other_labels(tmp_path, capsys):
    from ddrs.cli import main

    registry, families = _gaussian_and_strong_mirror(tmp_path)
    (tmp_path / "mine.tsv").write_text(log_text(*gaussian_like(N, 0.5, 0.95, 3.5, seed=3)))
    (tmp_path / "other.tsv").write_text(log_text(*gaussian_like(N, 0.5, 0.95, 3.5, seed=3), labels=np.zeros(N, int)))
    common = ["logs", "rank", "--dataset", "cifar10", "--registry", str(registry), "--families", str(families)]
    common += ["--cache", str(tmp_path / "cache"), "--offline", "--mirror", f"{REPOSITORY}={tmp_path / 'mirror'}"]
    common += ["--n", "100000"]
    out = tmp_path / "ranked"
    assert main([*common, "--own", "mine", "0.5", str(tmp_path / "mine.tsv"), "--out", str(out)]) == 0
    assert "mine: rank 1 of 600 inputs" in capsys.readouterr().out
    versus = pd.read_csv(out / "vs_gaussian.csv")
    mine = versus[versus["method"] == "mine"].set_index("against")
    assert set(mine.index) == {"Gaussian", "best Gaussian", "best Strong"}
    assert mine.loc["best Strong", "baseline"] == f"{REPOSITORY}:data/strong"
    headline_read = pd.read_csv(out / "headline.csv")
    assert headline_read.loc[0, "compared"] == 1  # strong, not the user's log
    assert pd.read_csv(out / "replication.csv")["note"].eq("no replication data").all()  # one log per σ: no runs
    assert (headline_read["run_margin"] == "no replication data").all()
    assert main([*common, "--own", "other", "0.5", str(tmp_path / "other.tsv"), "--out", str(out)]) == 2
    assert "other.tsv: " in capsys.readouterr().err


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
    figure = p_a_figure(world, "cifar10")
    panels = [ax for ax in figure.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["σ = 0.25", "σ = 0.5"]
    assert [len(ax.get_lines()) for ax in panels] == [2, 3]  # Gaussian and Strong; and consistency at 0.5
    note = figure.legends[0].get_title().get_text()
    assert "lower bound" in note and "predicted" in note and "≤ ½" in note


#: ImageNet's two orders as the small worlds label them: label idx % 10 (standard), (idx + 5) % 10 (Salman et al.'s)
SHIFTED = (np.arange(N) + 5) % 10
TWO_ORDERS = order_label_table(
    "imagenet", {"standard": (np.arange(N), np.arange(N) % 10), "salman2019": (np.arange(N), SHIFTED)}
)


def _two_order_logs() -> dict:
    """ImageNet idx 0:599 in two orders: Cohen-like Gaussian and a weak method in the standard order
    (label idx % 10), a strong method and its Gaussian in Salman et al.'s (label (idx + 5) % 10), the
    latter named by the shipped input-order table (Hadisalman/smoothing-adversarial data/certify/)."""
    shifted = SHIFTED
    salman = {"repository": "Hadisalman/smoothing-adversarial", "dataset": "imagenet", "arch": "resnet50"}
    logs = {
        "gaussian": (log_text(*gaussian_like(N, 0.5, 0.6, 2.0, seed=1)), {"dataset": "imagenet", "arch": "resnet50"}),
        "weak": (
            log_text(*gaussian_like(N, 0.5, 0.5, 1.5, seed=2)),
            {"dataset": "imagenet", "arch": "resnet50", "method_authors": "same", "method": "external"},
        ),
        "certify/strong": (
            log_text(*gaussian_like(N, 0.5, 0.95, 3.5, seed=3), labels=shifted),
            {**salman, "method_authors": "strong", "method": "external"},
        ),
        "certify/gaussian": (log_text(*gaussian_like(N, 0.5, 0.55, 2.0, seed=4), labels=shifted), salman),
    }
    return logs


def _two_order_world(tmp_path, orders=None):
    registry, files, families = build(tmp_path, _two_order_logs())
    return load_entries(registry, "imagenet", files, families, orders, TWO_ORDERS)


def test_logs_of_two_input_orders_are_never_ranked_paired_or_drawn_together(tmp_path):
    entries = _two_order_world(tmp_path)
    assert {entry.name: entry.order for entry in entries} == {
        "someone/smoothing:data/gaussian": "standard",
        "someone/smoothing:data/weak": "standard",
        "Hadisalman/smoothing-adversarial:data/certify/strong": "salman2019",
        "Hadisalman/smoothing-adversarial:data/certify/gaussian": "salman2019",
    }
    table = leaderboard_table(entries, "imagenet", RADII, inference=INFERENCE)
    envelopes = table[table["sigma"] == ENVELOPE].set_index(["repository", "method"])
    standard = f"{N} inputs: idx 0:{N - 1}:1, standard order"
    salman = f"{N} inputs: idx 0:{N - 1}:1, Salman et al.'s ImageNet order (label 65 at idx 0)"
    hadi = "Hadisalman/smoothing-adversarial"
    assert envelopes["input_set"].to_dict() == {
        (hadi, "strong"): salman,
        (hadi, "gaussian"): salman,
        (REPOSITORY, "gaussian"): standard,
        (REPOSITORY, "same"): standard,
    }
    assert envelopes.loc[(hadi, "strong"), "rank"] == 1 and envelopes.loc[(REPOSITORY, "gaussian"), "rank"] == 1
    versus = gaussian_comparisons_table(entries, "imagenet", RADII, inference=INFERENCE).set_index("log")
    assert versus.loc["Hadisalman/smoothing-adversarial:data/certify/strong", "baseline"] == (
        "Hadisalman/smoothing-adversarial:data/certify/gaussian"
    )
    assert versus.loc["someone/smoothing:data/weak", "baseline"] == "someone/smoothing:data/gaussian"
    lines = family_lines(entries)
    drawn = {entry.order for members in lines.members.values() for entry in members}
    assert len(drawn) == 1 and lines.order in drawn
    assert lines.order == "standard"  # two families each way: the first set of the most families
    figure = curves_figure(entries, "imagenet")  # a row of panels per order: Strong drawn, in Salman et al.'s row
    rows = [ax.get_ylabel().replace("\n", " ") for ax in figure.axes if ax.get_ylabel()]
    assert len(rows) == 2 and "standard order" in rows[0] and "Salman et al.'s" in rows[1]
    salman_row = figure.axes[-1]
    assert [line.get_label() for line in salman_row.get_lines() if line.get_label()[0] != "_"] == ["Gaussian", "Strong"]


def test_a_log_whose_labels_fit_another_order_than_its_registered_one_is_refused(tmp_path):
    from ddrs.published.input_orders import InputOrderError

    shifted = (np.arange(N) + 5) % 10
    salman = {"repository": "Hadisalman/smoothing-adversarial", "dataset": "imagenet"}
    logs = {
        "gaussian": (log_text(*gaussian_like(N, 0.5, 0.6, 2.0, seed=1)), {"dataset": "imagenet"}),
        "certify/gaussian": (log_text(*gaussian_like(N, 0.5, 0.6, 2.0, seed=5), labels=shifted), salman),
        "certify/weak": (
            log_text(*gaussian_like(N, 0.5, 0.5, 2.0, seed=6), labels=shifted),
            {**salman, "method_authors": "same"},
        ),
        "certify/strong": (  # the standard order's labels, under a path the table gives Salman et al.'s order
            log_text(*gaussian_like(N, 0.5, 0.9, 3.0, seed=3)),
            {**salman, "method_authors": "strong"},
        ),
    }
    registry, files, families = build(tmp_path, logs)
    with pytest.raises(
        InputOrderError,
        match=r"data/certify/strong: its labels agree with the Salman .*'s at 0 of 600; the standard order's at 600 of "
        r"600 shared idx, but .*input_orders.csv puts it in the Salman .*: it numbers its inputs in the standard order",
    ):
        load_entries(registry, "imagenet", files, families, order_labels=TWO_ORDERS)


@pytest.mark.parametrize(
    "declared",
    [
        pd.DataFrame(columns=["dataset", "repository", "path_prefix", "order", "note"]),  # no order table
        pd.DataFrame(  # only Salman et al.'s best_models/ prefix declared: the world's data/certify/ logs are not
            [["imagenet", "Hadisalman/smoothing-adversarial", "data/certify/best_models/", "salman2019", "narrowed"]],
            columns=["dataset", "repository", "path_prefix", "order", "note"],
        ),
    ],
    ids=["no_order_table", "narrowed_prefix"],
)
def test_an_order_table_that_leaves_salman_et_al_s_logs_standard_refuses_them_instead_of_ranking_two_orders(
    tmp_path, declared
):
    """The labels decide: a log declared standard whose labels are Salman et al.'s order's is refused,
    whatever the other logs are (the two orders' logs are two each: no majority could decide)."""
    from ddrs.published.input_orders import InputOrderError

    with pytest.raises(
        InputOrderError,
        match=r"Hadisalman/smoothing-adversarial:data/certify/strong: its labels agree with the Salman .*'s at 600 of "
        r"600; .* but .*input_orders.csv puts it in the standard order: it numbers its inputs in the salman2019 order",
    ):
        _two_order_world(tmp_path, declared)


def test_a_log_of_mixed_orders_is_refused_whichever_order_it_is_declared_in(tmp_path):
    from ddrs.published.input_orders import InputOrderError

    logs = _two_order_logs()
    mixed = np.where(np.arange(N) < N // 2, np.arange(N) % 10, SHIFTED)  # first half standard, second Salman's
    for name in ("weak", "certify/strong"):  # declared standard, then Salman et al.'s
        text, fields = logs[name]
        logs_mixed = {**logs, name: (log_text(*gaussian_like(N, 0.5, 0.6, 2.0, seed=8), labels=mixed), fields)}
        registry, files, families = build(tmp_path, logs_mixed)
        with pytest.raises(
            InputOrderError, match=rf"data/{name}: its labels agree with .* at 300 of 600; .* at 300 of 600"
        ):
            load_entries(registry, "imagenet", files, families, order_labels=TWO_ORDERS)


def test_the_shipped_fingerprints_hold_imagenet_s_two_orders_apart():
    """The standard order sorts the validation images by class (label idx // 50); Salman et al.'s
    starts with label 65; at no idx do the two give one label."""
    from ddrs.published.input_orders import fingerprints, read_order_labels

    prints = fingerprints(read_order_labels(), "imagenet")
    standard, salman = prints["standard"], prints["salman2019"]
    assert list(standard.index) == list(salman.index) == list(range(0, 50_000, 100))
    assert (standard.to_numpy() == standard.index.to_numpy() // 50).all() and salman.loc[0] == 65
    assert not (standard.to_numpy() == salman.to_numpy()).any()
    assert fingerprints(read_order_labels(), "cifar10") == {}  # one order: nothing to tell apart


def _own(tmp_path, world, text, **spec):
    (tmp_path / "mine.tsv").write_text(text)
    own = {"mine": {"dataset": "cifar10", "sigma": 0.5, "path": str(tmp_path / "mine.tsv"), **spec}}
    return own_entries(own, "cifar10", world)


def test_an_own_log_without_n_is_ranked_with_a_named_warning_and_time_is_optional(world, tmp_path):
    text = log_text(*gaussian_like(N, 0.5, 0.9, 3.0, seed=12))
    without_time = "\n".join("\t".join(line.split("\t")[:5]) for line in text.split("\n"))
    with pytest.warns(OwnLogWarning, match=r"own log 'mine' .*mine\.tsv.*no n is given"):
        (entry,) = _own(tmp_path, world, without_time)
    assert len(entry.frame) == N and entry.frame["time"].isna().all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # n given: the cap is checked, nothing to warn of
        _own(tmp_path, world, text, n=100_000, alpha=0.001)


def test_own_logs_leave_the_published_rows_adjusted_p_values_unchanged(world, tmp_path):
    (own,) = _own(tmp_path, world, log_text(*gaussian_like(N, 0.5, 0.95, 3.5, seed=11)), n=100_000)
    alone = gaussian_comparisons_table(world, "cifar10", RADII, inference=INFERENCE)
    joined = gaussian_comparisons_table([*world, own], "cifar10", RADII, inference=INFERENCE)
    holm = [column for column in alone.columns if column.endswith("_p_holm")]
    published = joined[joined["repository"] != "own"].reset_index(drop=True)
    pd.testing.assert_frame_equal(published[holm], alone[holm])
    assert joined.loc[joined["repository"] == "own", "ACR_p_holm"].notna().any()


def test_ddrs_logs_rank_and_the_config_route_give_the_same_ranks(tmp_path, capsys):
    from ddrs.cli import main
    from ddrs.published.manifest import fetch_repository

    registry, families = _gaussian_and_strong_mirror(tmp_path)
    (tmp_path / "mine.tsv").write_text(log_text(*gaussian_like(N, 0.5, 0.7, 2.5, seed=3)))
    command = ["logs", "rank", "--dataset", "cifar10", "--registry", str(registry), "--families", str(families)]
    command += ["--cache", str(tmp_path / "cache"), "--offline", "--mirror", f"{REPOSITORY}={tmp_path / 'mirror'}"]
    command += ["--own", "mine", "0.5", str(tmp_path / "mine.tsv"), "--n", "100000", "--out", str(tmp_path / "cli")]
    assert main(command) == 0
    cli = pd.read_csv(tmp_path / "cli" / "leaderboard.csv")
    manifest = tmp_path / "manifest.csv"
    fetch_repository(load_registry(registry), REPOSITORY, tmp_path / "cache", manifest, mirror=tmp_path / "mirror")
    own = {"mine": {"dataset": "cifar10", "sigma": 0.5, "path": str(tmp_path / "mine.tsv"), "n": 100_000}}
    builders.dataset_entries([manifest], "cifar10", tmp_path / "entries.npz", registry, families, own)
    config = builders.leaderboard(tmp_path / "entries.npz", "cifar10", paper_radii("cifar10"))
    key = ["method", "sigma", "log"]
    ranks = config[[*key, "rank"]].astype(str).merge(cli[[*key, "rank"]].astype(str), on=key, suffixes=("", "_cli"))
    assert len(ranks) == len(config) == len(cli) and (ranks["rank"] == ranks["rank_cli"]).all()
    assert (ranks["rank"] != "").all() and ranks["rank"].nunique() == 3


def test_a_byte_identical_log_is_credited_to_the_repository_that_produced_it(tmp_path):
    """The copier sorts first in registry order; the origins table credits the producer, and the
    copy is listed with it."""
    text = log_text(*gaussian_like(N, 0.5, 0.6, 2.0, seed=1))
    (tmp_path / "log").write_text(text)
    copy = registry_row("data_cohen/log", text, repository="Copier/repo", method_authors="data_cohen")
    original = registry_row("data/log", text, repository="producer/repo")
    registry = load_registry(write_registry(tmp_path / "registry.csv", [copy, original]))
    assert [names for _, names in dataset_logs(registry, "cifar10", origins={})] == [
        ("Copier/repo:data_cohen/log", "producer/repo:data/log")
    ]
    ((log, names),) = dataset_logs(registry, "cifar10", origins={original["sha256"]: ("producer/repo", "data/log")})
    assert (log.repository, log.method_authors) == ("producer/repo", "gaussian")
    assert names == ("producer/repo:data/log", "Copier/repo:data_cohen/log")


def test_the_shipped_origins_credit_cohen_et_al_s_logs_to_their_repository():
    from ddrs.published.origins import read_origins

    registry = load_registry()
    origins = read_origins()
    named = set(zip(registry["repository"], registry["path"], strict=True))
    copies = registry.groupby("sha256").size()
    assert all(origin in named and copies[sha256] > 1 for sha256, origin in origins.items())
    data_cohen = registry[registry["path"].str.startswith("data_cohen/")]
    assert len(data_cohen) == 13
    assert {origins[sha256][0] for sha256 in data_cohen["sha256"]} == {"locuslab/smoothing"}


def test_extra_data_families_get_distinct_dash_patterns_so_coinciding_curves_stay_visible():
    from ddrs.published.families import Family
    from ddrs.published.leaderboard_figures import line_styles

    families = [Family("Gaussian"), Family("SmoothAdv"), *(Family("SmoothAdv", extra) for extra in "abc")]
    styles = line_styles(families)
    dashes = [styles[family]["linestyle"] for family in families[2:]]
    assert len(set(dashes)) == 3 and "linestyle" not in styles[families[1]]
    assert len({style["color"] for style in styles.values()}) == 5


def test_an_own_log_takes_the_input_order_its_labels_fit_and_is_ranked_only_there(tmp_path):
    entries = _two_order_world(tmp_path)
    shifted = (np.arange(N) + 5) % 10
    (tmp_path / "mine.tsv").write_text(log_text(*gaussian_like(N, 0.5, 0.97, 3.8, seed=9), labels=shifted))
    spec = {"dataset": "imagenet", "sigma": 0.5, "path": str(tmp_path / "mine.tsv"), "n": 100_000}
    (own,) = own_entries({"mine": spec}, "imagenet", entries, TWO_ORDERS)
    assert own.order == "salman2019"
    table = leaderboard_table([*entries, own], "imagenet", RADII, inference=INFERENCE)
    mine = table[(table["method"] == "mine") & (table["sigma"] == ENVELOPE)].iloc[0]
    assert mine["input_order"] == "salman2019" and mine["rank"] == 1
    alone = leaderboard_table(entries, "imagenet", RADII, inference=INFERENCE)
    standard = table[table["input_order"] == "standard"].reset_index(drop=True)
    assert standard["rank"].tolist() == alone.loc[alone["input_order"] == "standard", "rank"].tolist()
    with pytest.raises(DDRSError, match=r"mine\.tsv \(own log 'mine'\): .* puts it in the standard order: it numbers"):
        own_entries({"mine": {**spec, "order": "standard"}}, "imagenet", entries, TWO_ORDERS)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("imagenet,standard,0,0\nimagenet,standard,100,2.5\n", r"line 3: label '2\.5' is not an integer"),
        ("imagenet,standard,0,0\nimagenet,standard,0,0\n", r"line 3 repeats a \(dataset, order, idx\)"),
    ],
)
def test_a_malformed_fingerprint_table_is_refused_naming_the_line(tmp_path, rows, message):
    from ddrs.published.input_orders import InputOrderError, read_order_labels

    (tmp_path / "labels.csv").write_text("dataset,order,idx,label\n" + rows)
    with pytest.raises(InputOrderError, match=rf"labels\.csv: {message}"):
        read_order_labels(tmp_path / "labels.csv")


# --- the run-level margin (issue 55) -------------------------------------------------------------------


def test_the_pooled_run_spread_is_the_one_way_anova_residual_mean_square():
    """Planted ACRs of unequal run counts: the pooled SD and its df are statsmodels' one-way ANOVA residual."""
    rng = np.random.default_rng(3)
    acrs = [rng.normal(mean, 0.01, runs) for mean, runs in ((0.5, 5), (0.7, 6), (0.9, 2), (0.4, 1))]
    spread = run_spread(acrs)
    frame = pd.DataFrame(
        {"acr": np.concatenate(acrs[:3]), "recipe": np.repeat([0, 1, 2], [5, 6, 2])}  # a single run adds no df
    )
    fit = smf.ols("acr ~ C(recipe)", frame).fit()
    assert spread.df == fit.df_resid == 10 and spread.recipes == 3
    assert spread.sd == pytest.approx(np.sqrt(fit.mse_resid), rel=1e-12)
    assert spread.margin(0.05) == pytest.approx(student_t.ppf(0.975, 10) * np.sqrt(2) * spread.sd, rel=1e-12)
    assert np.isnan(run_spread([np.array([0.5])]).sd) and np.isnan(run_spread([]).margin(0.05))


def test_two_runs_of_one_recipe_exceed_the_margin_at_its_level():
    """Runs with a planted spread (SD 0.01 around each recipe's own mean, 6 recipes × 5 runs): two fresh
    single runs of one recipe differ by more than the margin in α = 5 % of draws (binomial bounds),
    and the estimate of the spread is unbiased in its square."""
    rng = np.random.default_rng(0)
    draws, exceed, squares = 4000, 0, []
    for _ in range(draws):
        means = rng.uniform(0.3, 1.0, 6)
        spread = run_spread([rng.normal(mean, 0.01, 5) for mean in means])
        squares.append(spread.sd**2)
        fresh = rng.normal(means[0], 0.01, 2)
        exceed += abs(fresh[0] - fresh[1]) > spread.margin(0.05)
    low, high = binom.ppf([0.0005, 0.9995], draws, 0.05)
    assert low <= exceed <= high
    assert np.mean(squares) == pytest.approx(1e-4, rel=0.05)  # E s² = σ² (df 24: SE of the mean 0.5 %)


def replicated_world(tmp_path, *, runs_by_recipe: dict, extra: dict | None = None):
    """Logs whose runs shift every certified radius by a planted offset: run k of a recipe adds
    ``offsets[k]`` (so its ACR is the base ACR plus ``offsets[k]`` times the certified share); ``extra``:
    more logs (name → (text, fields))."""
    correct, radius = gaussian_like(N, 0.5, 0.7, 2.0, seed=1)
    logs = {}
    for (method, sigma), offsets in runs_by_recipe.items():
        for run, offset in enumerate(offsets):
            fields = {"sigma": sigma, "noise": sigma, "method_authors": method, "run": str(run + 1)}
            fields |= {} if method == "gaussian" else {"method": "external"}
            logs[f"{method}_{sigma}_{run}"] = (log_text(correct, np.where(correct, radius + offset, 0.0)), fields)
    logs |= extra or {}
    registry, files, families = build(tmp_path, logs)
    return load_entries(registry, "cifar10", files, families), correct


def test_the_replication_table_estimates_the_planted_spread_and_says_where_there_is_none(tmp_path):
    offsets = {("gaussian", 0.5): (0.0, 0.02, 0.04), ("far", 0.5): (0.3, 0.31, 0.35)}
    single = {"gaussian_0.25": (log_text(*gaussian_like(N, 0.25, 0.7, 2.0, seed=4)), {"sigma": 0.25, "noise": 0.25})}
    entries, correct = replicated_world(tmp_path, runs_by_recipe=offsets, extra=single)
    table = replication_table(entries, "cifar10", 0.05)
    pooled = table[table["kind"] == "pooled"].set_index("sigma")
    share = correct.mean()  # the radius is printed to 3 significant digits: ACRs agree to 1e-3 · radius
    planted = np.concatenate([np.array(runs) - np.mean(runs) for runs in offsets.values()]) * share
    sd = np.sqrt((planted**2).sum() / 4)  # df = 2 + 2
    assert pooled.loc[0.5, "df"] == 4 and pooled.loc[0.5, "ACR_sd"] == pytest.approx(sd, rel=0.02)
    assert pooled.loc[0.5, "margin"] == pytest.approx(student_t.ppf(0.975, 4) * np.sqrt(2) * sd, rel=0.02)
    assert pooled.loc[0.25, "note"] == "no replication data" and np.isnan(pooled.loc[0.25, "margin"])
    entry = CATALOGUE["published_replication"]
    outputs = {kind: str(tmp_path / f"published_replication_cifar10.{kind}") for kind in ("csv", "md", "tex")}
    write(table, outputs, decimals=entry.decimals, bold=entry.bold, measured=entry.measured)
    assert f"| {pooled.loc[0.5, 'ACR_sd']:.4f} " in Path(outputs["md"]).read_text()  # spreads shown to 4 places
    recipes = table[table["kind"] == "recipe"].set_index("method")
    assert recipes.loc["far", "run"] == "1 2 3"
    assert recipes.loc["far", "ACR_sd"] == pytest.approx(
        np.std(np.array(offsets["far", 0.5]) * share, ddof=1), rel=0.02
    )
    pairs = table[table["kind"] == "pair"]
    assert len(pairs) == 6 and pairs["note"].str.startswith("per-input test: a comparison of two fixed models").all()
    # the per-input test calls every two runs different (each shifts every certified radius); the run-level
    # rule, judged by the other recipe's spread, does not call Gaussian's runs 1 and 2 apart
    assert pairs["significant_per_input"].all()
    first = pairs[(pairs["method"] == "gaussian") & (pairs["run"] == "1 − 2")].iloc[0]
    assert first["ACR_difference"] == pytest.approx(-0.02 * share, rel=0.02) and first["beyond_runs"] == False  # noqa: E712
    margin_far = student_t.ppf(0.975, 2) * np.sqrt(2) * np.std(np.array(offsets["far", 0.5]) * share, ddof=1)
    assert first["margin"] == pytest.approx(margin_far, rel=0.02)  # without its own recipe


def two_sigma_world(tmp_path) -> list:
    """Gaussian and a far method replicated at σ 0.5 (three runs each: margin about 0.06); a near method
    0.007 ACR above Gaussian there, one run; at σ 0.25 one Gaussian log and a strong method, no runs."""
    correct, radius = gaussian_like(N, 0.25, 0.7, 2.0, seed=4)

    def at_quarter(by, **fields):
        return log_text(correct, np.where(correct, radius + by, 0.0)), {"sigma": 0.25, "noise": 0.25, **fields}

    extra = {
        "gaussian_quarter": at_quarter(0.0),
        "strong_quarter": at_quarter(0.3, method_authors="strong", method="external"),
    }
    recipes = {("gaussian", 0.5): (0.0, 0.02, 0.04), ("far", 0.5): (0.3, 0.31, 0.35), ("near", 0.5): (0.01,)}
    return replicated_world(tmp_path, runs_by_recipe=recipes, extra=extra)[0]


def test_a_win_counts_beyond_runs_only_past_the_margin_of_its_sigma(tmp_path):
    """The near method is significant per input but within the margin, the far one beyond it; the strong
    method at σ 0.25 is not counted beyond runs (no replication data there); two runs of Gaussian differ
    per input (two fixed models) but not beyond runs."""
    entries = two_sigma_world(tmp_path)
    table = gaussian_comparisons_table(entries, "cifar10", RADII, inference=INFERENCE)
    replication = replication_table(entries, "cifar10", 0.05)
    path = tmp_path / "versus.csv"
    table.to_csv(path, index=False)
    summary = headline(pd.read_csv(path), replication, 0.05)
    total = summary.iloc[0]
    counted = ["compared", "better_ACR", "compared_with_margin", "better_ACR_beyond_runs", "methods_better_beyond_runs"]
    assert total[counted].tolist() == [5, 5, 4, 3, 1]  # far's three runs, one method
    assert "σ 0.25: no replication data" in total["run_margin"] and "σ 0.5: pooled 0.06" in total["run_margin"]
    assert total["beyond_runs_by_margin"] == "σ 0.5 (pooled): 3 of 4"
    by_family = summary[summary["family"] != "all"].set_index("family")
    assert by_family.loc["Near", "better_ACR"] == 1 and by_family.loc["Near", "better_ACR_beyond_runs"] == 0
    assert by_family.loc["Strong", "better_ACR"] == 1 and by_family.loc["Strong", "compared_with_margin"] == 0
    pairs = ["gaussian_vs_gaussian", "gaussian_vs_gaussian_better", "gaussian_vs_gaussian_beyond_runs"]
    assert total[pairs].tolist() == [3, 2, 0]
    seeds = table[table["same_recipe"]]
    assert set(seeds["method"]) == {"gaussian"} and (seeds["ACR_p_holm"] < 1e-6).all()  # "different" per input


def test_a_dataset_without_replicated_runs_says_so_and_counts_no_win_beyond_runs(world):
    replication = replication_table(world, "cifar10", 0.05)
    assert (replication["kind"] == "pooled").all() and (replication["note"] == "no replication data").all()
    summary = headline(gaussian_comparisons_table(world, "cifar10", RADII, inference=INFERENCE), replication, 0.05)
    assert (summary["run_margin"] == "no replication data").all()
    assert summary[["better_ACR_beyond_runs", "methods_better_beyond_runs", "beyond_runs_rate"]].isna().all().all()
    assert summary["better_ACR"].iloc[0] >= 1 and (summary["compared_with_margin"] == 0).all()


def test_the_margin_figure_draws_wins_against_the_margin_per_sigma_and_marks_only_measured_margins(tmp_path):
    entries = two_sigma_world(tmp_path)
    versus, replication = tmp_path / "versus.csv", tmp_path / "replication.csv"
    gaussian_comparisons_table(entries, "cifar10", RADII, inference=INFERENCE).to_csv(versus, index=False)
    replication_table(entries, "cifar10", 0.05).to_csv(replication, index=False)
    figure = builders.leaderboard_margin(versus, replication, "cifar10", alpha=0.05)
    ax = figure.axes[0]
    steps = {line.get_label(): line for line in ax.lines if not line.get_label().startswith("_")}
    quarter, half = sorted(steps, key=lambda label: float(label.split(":")[0].removeprefix("σ = ")))
    assert quarter == "σ = 0.25: no replication data (1 wins per input)"
    assert half.startswith("σ = 0.5: margin 0.06") and half.endswith("3 of 4 wins")
    x, y = steps[half].get_xdata(), steps[half].get_ydata()
    assert x[0] == 0 and y[0] == 4 and (np.diff(y) <= 0).all() and y[-1] == 0  # the per-input count, falling
    margin = replication_table(entries, "cifar10", 0.05).query("kind == 'pooled' and sigma == 0.5")["margin"].item()
    marks = [line for line in ax.lines if line.get_marker() == "o"]
    assert len(marks) == 1 and marks[0].get_ydata()[0] == 3
    assert marks[0].get_xdata()[0] == pytest.approx(margin, rel=1e-12)  # read back from the CSV
    written = save_figure(figure, tmp_path / "published_margin_cifar10.png")
    assert {path.suffix for path in written} == {".png", ".pdf"} and all(path.stat().st_size > 0 for path in written)


def test_the_welch_margin_is_the_t_quantile_of_the_satterthwaite_df_times_the_combined_spread():
    (sd_a, df_a), (sd_b, df_b) = (0.01, 4), (0.03, 5)
    nu = (sd_a**2 + sd_b**2) ** 2 / (sd_a**4 / df_a + sd_b**4 / df_b)
    expected = student_t.ppf(0.975, nu) * np.hypot(sd_a, sd_b)
    assert welch_margin((sd_a, df_a), (sd_b, df_b), 0.05) == pytest.approx(expected, rel=1e-12)
    # two runs of one recipe: its own spread twice, on its own df (the two SDs are one estimate)
    assert welch_margin((sd_a, df_a), (sd_a, df_a), 0.05, same=True) == pytest.approx(
        student_t.ppf(0.975, df_a) * np.sqrt(2) * sd_a, rel=1e-12
    )


def unequal_spreads_world(tmp_path) -> list:
    """At σ 0.5, six runs each of Gaussian and of a steady method 0.1 above it (run spread about 0.015
    in radius) and of a wild one (about 0.23), two runs of a pair method, and one run of a single
    method (every log's offset its own: byte-identical logs would be one)."""
    recipes = {
        ("gaussian", 0.5): (0.0, 0.01, -0.01, 0.02, -0.02, 0.005),
        ("steady", 0.5): (0.1, 0.11, 0.09, 0.12, 0.08, 0.105),
        ("wild", 0.5): (0.15, 0.45, -0.15, 0.35, -0.05, 0.25),
        ("pair", 0.5): (0.102, 0.118),
        ("single", 0.5): (0.115,),
    }
    return replicated_world(tmp_path, runs_by_recipe=recipes)[0]


def test_where_levene_rejects_one_run_variance_each_comparison_gets_the_margin_of_its_two_recipes(tmp_path):
    entries = unequal_spreads_world(tmp_path)
    replication = replication_table(entries, "cifar10", 0.05)
    pooled = replication[replication["kind"] == "pooled"].iloc[0]
    recipes = replication[replication["kind"] == "recipe"].set_index("method")
    acrs = {recipe.runs[0].log.method_authors: recipe.acrs for recipe in replicated_recipes(entries)}
    own = [acrs[method] for method in ("gaussian", "steady", "wild")]  # the pair's 2 runs give no own spread
    assert pooled["levene_p"] == pytest.approx(levene(*own, center="median").pvalue, rel=1e-12)
    assert levene_p(list(acrs.values())) == pooled["levene_p"] < 0.05
    assert pooled["margin_rule"] == "per recipe" and np.isnan(pooled["margin"])
    table = gaussian_comparisons_table(entries, "cifar10", RADII, inference=INFERENCE)
    table = table[table["against"] == "Gaussian"].assign(margin=lambda frame: run_margins(frame, replication, 0.05))
    by_method = table.groupby("method")["margin"].first()
    spread = {m: (recipes.loc[m, "ACR_sd"], int(recipes.loc[m, "df"])) for m in ("gaussian", "steady", "wild")}
    assert by_method["steady"] == pytest.approx(welch_margin(spread["steady"], spread["gaussian"], 0.05), rel=1e-9)
    assert by_method["wild"] == pytest.approx(welch_margin(spread["wild"], spread["gaussian"], 0.05), rel=1e-9)
    steady_win = table.loc[table["method"] == "steady", "ACR"].min()
    assert by_method["steady"] < steady_win < by_method["wild"]  # steady's wins lie beyond runs, wild's do not
    assert np.isnan(by_method["pair"]) and np.isnan(by_method["single"])  # no spread of their own
    summary = headline(gaussian_comparisons_table(entries, "cifar10", RADII, inference=INFERENCE), replication, 0.05)
    total = summary.iloc[0]
    assert total["run_margin"].startswith("σ 0.5: per recipe, Welch–Satterthwaite")
    assert total["compared_with_margin"] == 12 and total["beyond_runs_by_margin"].startswith("σ 0.5 (per recipe): ")
