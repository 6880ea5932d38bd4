"""The σ log: written by Algorithm 1 / the grid search over a test set (resumable), read by ``ddrs certify``."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys

import pandas as pd
import pytest
import torch
from killed_job import FailsAfter

from ddrs.cli import main
from ddrs.core.seeds import Stream
from ddrs.core.settings import Algorithm1Settings, GridSearchSettings
from ddrs.core.sigma import smoothed_top_class
from ddrs.core.streams import input_streams
from ddrs.data import TensorImages
from ddrs.errors import LogFormatError
from ddrs.jobs.sigma_search import sigma_log_dataset
from ddrs.logs.certification_log import partial_path
from ddrs.logs.sigma_log import read_sigma_log


def read_scales(path) -> pd.DataFrame:
    """A σ log without its ``time`` column (the seconds differ between runs; the rest must not)."""
    log = pd.read_csv(path, sep="\t")
    assert log.columns[-1] == "time" and (log["time"] > 0).all()
    return log.drop(columns="time")


def test_sigma_log_uses_the_smoothed_prediction_not_the_label(digits_model, digits_data, tmp_path):
    """In float64: the log counts the draws in batches of 3 inputs, the reference in one of 8; float32
    rounding that differs with the batch could tip a draw whose top two logits nearly tie."""
    digits_model = copy.deepcopy(digits_model).double()
    test = digits_data["test"]
    indices = list(range(8))
    images = torch.stack([test[i][0] for i in indices]).double()
    wrong = TensorImages(images, torch.tensor([(test[i][1] + 1) % 10 for i in indices]))
    settings = Algorithm1Settings(sigma0=0.25, steps=[0, 5], n0=50, lr=0.01)
    path = sigma_log_dataset(digits_model, wrong, indices, tmp_path / "sigma.tsv", settings, batch=3, num_classes=10)
    log = read_scales(path)
    assert list(log.columns) == ["idx", "c_a", "sigma_K0", "sigma_K5"]
    assert log["idx"].tolist() == indices
    expected = smoothed_top_class(
        digits_model,
        images,
        0.25,
        num_classes=10,
        noise="gaussian",
        n0=50,
        batch_size=400,
        generator=input_streams(0, indices, Stream.SELECTION, torch.device("cpu")),
    )
    assert log["c_a"].tolist() == expected.tolist()
    assert (log["c_a"] != pd.Series(wrong.targets)).sum() >= 6  # the model is ~95% accurate on true labels
    assert (log["sigma_K0"] == 0.25).all()


@pytest.mark.parametrize("objective", ["released", "fixed_class"])
def test_sigma_log_resumes_to_the_uninterrupted_result(digits_model, digits_data, tmp_path, objective):
    """Resumed with other batch sizes, in float64: batches of 4, 2 and 3 sum the network's products in
    other orders, which in float32 could move σ past the tolerance or tip a near-tie of c_A on some CPU."""

    settings = Algorithm1Settings(sigma0=0.25, steps=[2, 4], n0=20, lr=0.01, n=2, objective=objective)

    indices = list(range(0, 12, 2))
    digits_model = copy.deepcopy(digits_model).double()
    test = TensorImages(digits_data["test"].images.double(), digits_data["test"].targets)
    whole = sigma_log_dataset(digits_model, test, indices, tmp_path / "whole.tsv", settings, batch=4, num_classes=10)
    # an interrupted run: killed after two batches of two, in the middle of writing the next row
    with pytest.raises(RuntimeError, match="simulated crash"):
        sigma_log_dataset(
            FailsAfter(digits_model, 12), test, indices, tmp_path / "resumed.tsv", settings, batch=2, num_classes=10
        )
    partial = tmp_path / "resumed.tsv.partial"
    assert len(partial.read_text().splitlines()) == 1 + 4
    partial.write_text(partial.read_text()[:-9])
    # rerun with another batch size
    resumed = sigma_log_dataset(
        digits_model, test, indices, tmp_path / "resumed.tsv", settings, batch=3, num_classes=10
    )
    a, b = read_scales(whole), read_scales(resumed)
    assert a["idx"].tolist() == b["idx"].tolist() == indices
    pd.testing.assert_frame_equal(a, b, rtol=1e-5)
    # a rerun asking for fewer inputs publishes only those
    killed = tmp_path / "other_skip.tsv"
    with pytest.raises(RuntimeError, match="simulated crash"):
        sigma_log_dataset(FailsAfter(digits_model, 12), test, indices, killed, settings, batch=2, num_classes=10)
    with pytest.warns(UserWarning, match="dropping .* rows of inputs this run does not certify"):
        fewer = sigma_log_dataset(digits_model, test, indices[::2], killed, settings, batch=2, num_classes=10)
    pd.testing.assert_frame_equal(read_scales(fewer), a.iloc[::2].reset_index(drop=True), rtol=1e-5)


@pytest.mark.parametrize("changed", [dict(objective="fixed_class"), dict(clamp=0.01)], ids=["objective", "clamp"])
def test_a_partial_sigma_log_of_another_objective_or_clamp_starts_over(digits_model, digits_data, tmp_path, changed):
    out = tmp_path / "sigma.tsv"
    first = Algorithm1Settings(sigma0=0.25, steps=[2], n0=20, lr=0.01)
    with pytest.raises(RuntimeError, match="simulated crash"):
        sigma_log_dataset(
            FailsAfter(digits_model, 6), digits_data["test"], range(6), out, first, batch=2, num_classes=10
        )
    recorded = json.loads(partial_path(out).with_name("sigma.tsv.partial.json").read_text())
    assert (recorded["objective"], recorded["clamp"]) == ("released", 0.02)
    other = Algorithm1Settings(sigma0=0.25, steps=[2], n0=20, lr=0.01, **changed)
    with pytest.warns(UserWarning, match="other settings"):
        sigma_log_dataset(digits_model, digits_data["test"], range(6), out, other, batch=2, num_classes=10)


def test_grid_search_log_scores_with_the_chosen_objective(digits_model, digits_data, tmp_path):
    grid = [0.12, 0.25, 0.5, 1.0]
    logs = {}
    for objective in ("released", "fixed_class"):
        settings = GridSearchSettings(sigma0=0.25, grid=grid, n=4, n0=20, objective=objective)
        path = sigma_log_dataset(
            digits_model, digits_data["test"], range(40), tmp_path / f"{objective}.tsv", settings, num_classes=10
        )
        logs[objective] = read_scales(path)
        assert list(logs[objective].columns) == ["idx", "c_a", "sigma_grid_n4"]
        assert logs[objective]["sigma_grid_n4"].round(6).isin(grid).all()  # float32 grid points
    # same draws, other objective: the clamp at 0.98 favours larger scales for confident inputs
    assert (logs["released"]["sigma_grid_n4"] >= logs["fixed_class"]["sigma_grid_n4"]).mean() > 0.9
    assert not logs["released"]["sigma_grid_n4"].equals(logs["fixed_class"]["sigma_grid_n4"])


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (dict(sigma0=0.0), "sigma0 must be > 0, got 0.0"),
        (dict(objective="top1"), "unknown objective 'top1'"),
        (dict(clamp=0.0), r"clamp must lie in \(0, 0.5\), got 0.0"),
        (dict(n=0), "n must be an integer >= 1, got 0"),
        (dict(steps=[]), "steps must name at least one K"),
        (dict(lr=-1.0), "lr must be > 0"),
        (dict(max_sigma=1e-4), "max_sigma must exceed min_sigma"),
        (dict(min_sigma=0.3), r"sigma0=0.25 lies outside \[min_sigma, max_sigma\] = \[0.3, None\]"),
        (dict(max_sigma=0.2), r"sigma0=0.25 lies outside \[min_sigma, max_sigma\] = \[0.001, 0.2\]"),
        (dict(precision="fp8"), "unknown precision 'fp8'"),
    ],
)
def test_sigma_settings_name_the_bad_value(values, message):
    with pytest.raises(ValueError, match=message):
        Algorithm1Settings(**{"sigma0": 0.25, **values})


def test_settings_resolve_the_objectives_default_clamp():
    assert Algorithm1Settings(sigma0=0.25).clamp == 0.02
    assert Algorithm1Settings(sigma0=0.25, objective="fixed_class").clamp == 1e-6
    assert GridSearchSettings(sigma0=0.25, grid=[0.5], clamp=0.05).clamp == 0.05


# ---------------------------------------------------------------------------------------------
# Reading


def write_sigma_log(path, text):
    path.write_text(text)
    return path


def test_read_sigma_log_returns_the_requested_snapshot(tmp_path):
    path = write_sigma_log(
        tmp_path / "sigma.tsv", "idx\tc_a\tsigma_K0\tsigma_K100\n0\t3\t0.25\t0.31\n5\t1\t0.25\t0.19\n"
    )
    assert read_sigma_log(path, 100) == {0: 0.31, 5: 0.19}
    assert read_sigma_log(path, 0) == {0: 0.25, 5: 0.25}


def test_read_sigma_log_names_the_file_when_the_snapshot_is_absent(tmp_path):
    path = write_sigma_log(tmp_path / "sigma.tsv", "idx\tc_a\tsigma_K0\tsigma_K100\n0\t3\t0.25\t0.31\n")
    with pytest.raises(LogFormatError, match=r"sigma\.tsv: no column sigma_K50; has \['sigma_K0', 'sigma_K100'\]"):
        read_sigma_log(path, 50)


def test_read_sigma_log_rejects_non_positive_scales(tmp_path):
    path = write_sigma_log(tmp_path / "sigma.tsv", "idx\tc_a\tsigma_K0\n0\t3\t0.25\n1\t3\t-0.1\n")
    with pytest.raises(LogFormatError, match=r"sigma\.tsv: row 2 .* expected an integer idx and a positive scale"):
        read_sigma_log(path, 0)


def test_the_sigma_log_readers_load_without_torch():
    """``ddrs table`` reads σ logs for Appendix F without starting torch."""
    code = "import sys, ddrs.logs.sigma_log, ddrs.analysis.tables; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False"]


def test_read_sigma_log_reads_any_named_column(tmp_path):
    path = write_sigma_log(tmp_path / "grid.tsv", "idx\tc_a\tsigma_grid_n4\n2\t0\t0.5\n")
    assert read_sigma_log(path, column="sigma_grid_n4") == {2: 0.5}


def test_the_reader_reads_what_the_writer_wrote(digits_model, digits_data, tmp_path):
    settings = Algorithm1Settings(sigma0=0.25, steps=[0, 3], n0=20, lr=0.01)
    path = sigma_log_dataset(digits_model, digits_data["test"], [4, 1, 7], tmp_path / "s.tsv", settings, num_classes=10)
    log = pd.read_csv(path, sep="\t")
    assert read_sigma_log(path, 3) == dict(zip(log["idx"], log["sigma_K3"], strict=True))
    assert read_sigma_log(path, 0) == {1: 0.25, 4: 0.25, 7: 0.25}


# ---------------------------------------------------------------------------------------------
# ddrs optimize-sigma


def optimize_args(checkpoint, out, *flags):
    return ["optimize-sigma", "--checkpoint", str(checkpoint), "--dataset", "digits", *flags, "--out", str(out)]


def test_cli_optimize_sigma_end_to_end(digits_checkpoint, tmp_path, capsys):
    out = tmp_path / "sigma.tsv"
    flags = ["--sigma0", "0.25", "--k", "0", "3", "--n0", "20", "--lr", "0.01", "--max", "6", "--device", "cpu"]
    assert main(optimize_args(digits_checkpoint, out, *flags)) == 0
    log = read_scales(out)
    assert list(log.columns) == ["idx", "c_a", "sigma_K0", "sigma_K3"] and log["idx"].tolist() == list(range(6))
    assert "released objective" in capsys.readouterr().out
    grid_out = tmp_path / "grid.tsv"
    flags = ["--sigma0", "0.25", "--grid-search", "--grid-n", "10", "--grid-budget", "40", "--n0", "20", "--max", "4"]
    flags += ["--device", "cpu"]
    assert main(optimize_args(digits_checkpoint, grid_out, *flags)) == 0
    grid_log = read_scales(grid_out)
    assert list(grid_log.columns) == ["idx", "c_a", "sigma_grid_n10"]
    assert grid_log["sigma_grid_n10"].between(0.12, 1.0).all()
    assert "grid search over 4 scales" in capsys.readouterr().out


def test_cli_objective_and_clamp_flags_equal_the_library(digits_checkpoint, digits_model, digits_data, tmp_path):
    out = tmp_path / "sigma.tsv"
    flags = ["--sigma0", "0.25", "--k", "5", "--n0", "20", "--lr", "0.01", "--max", "5", "--batch", "5"]
    flags += ["--device", "cpu"]  # the library call below runs on the CPU; CUDA draws other noise
    assert main(optimize_args(digits_checkpoint, out, *flags, "--objective", "fixed_class", "--clamp", "0.001")) == 0
    settings = Algorithm1Settings(sigma0=0.25, steps=[5], n0=20, lr=0.01, objective="fixed_class", clamp=1e-3)
    expected = sigma_log_dataset(
        digits_model, digits_data["test"], range(5), tmp_path / "lib.tsv", settings, batch=5, num_classes=10
    )
    pd.testing.assert_frame_equal(read_scales(out), read_scales(expected))
    released = tmp_path / "released.tsv"
    assert main(optimize_args(digits_checkpoint, released, *flags)) == 0
    assert not read_scales(released).equals(read_scales(out))


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--sigma0", "0"], "sigma0 must be > 0"),
        (["--sigma0", "0.25", "--noise", "laplace"], "unknown noise"),
        (["--sigma0", "0.25", "--k", "-5"], "K must be an integer >= 0"),
        (["--sigma0", "0.25", "--clamp", "0.7"], r"clamp must lie in \(0, 0.5\), got 0.7"),
    ],
)
def test_cli_optimize_sigma_bad_inputs(digits_checkpoint, tmp_path, capsys, flags, message):
    out = tmp_path / "s.tsv"
    assert main(optimize_args(digits_checkpoint, out, *flags)) == 2
    assert re.search(message, capsys.readouterr().err)
    assert not out.exists() and not partial_path(out).exists()
