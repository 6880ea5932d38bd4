"""``ddrs certify`` end to end on digits, in process."""

import re

import pandas as pd
import pytest

from ddrs.cli import main
from ddrs.logs import COHEN_COLUMNS, partial_path, read_log


def certify_args(checkpoint, out, *extra):
    return [
        "certify",
        "--checkpoint",
        str(checkpoint),
        "--dataset",
        "digits",
        "--n0",
        "20",
        "--n",
        "300",
        "--alpha",
        "0.01",
        "--batch",
        "160",
        "--skip",
        "3",
        "--max",
        "30",
        "--out",
        str(out),
        *extra,
    ]


def test_certify_fixed_scale_writes_a_cohen_log(digits_checkpoint, tmp_path, capsys):
    out = tmp_path / "certify.tsv"
    assert main(certify_args(digits_checkpoint, out, "--scale", "0.25", "--device", "cpu")) == 0
    log = read_log(out)
    assert list(log.columns[: len(COHEN_COLUMNS)]) == list(COHEN_COLUMNS)
    assert log["idx"].tolist() == list(range(0, 30, 3))
    assert set(log["noise"]) == {"gaussian"} and set(log["scale"]) == {0.25}
    # the fixture model is ≈95 % accurate under σ = 0.25 noise: most inputs certify correctly
    assert log["correct"].mean() >= 0.7
    assert (log.loc[log["correct"] == 1, "radius"] > 0).all()
    assert not partial_path(out).exists()
    assert f"-> {out}" in capsys.readouterr().out


def test_certify_is_reproducible_and_seeded(digits_checkpoint, tmp_path):
    logs = []
    for name, seed in (("a", "0"), ("b", "0"), ("c", "1")):
        out = tmp_path / f"{name}.tsv"
        assert main(certify_args(digits_checkpoint, out, "--scale", "0.5", "--seed", seed, "--noise", "uniform")) == 0
        logs.append(read_log(out).drop(columns="time"))
    assert logs[0].equals(logs[1])
    assert not logs[0]["p_a_lower"].equals(logs[2]["p_a_lower"])


def test_certify_with_per_input_scales_from_a_sigma_log(digits_checkpoint, tmp_path):
    sigma_log = tmp_path / "sigma.tsv"
    rows = [f"{i}\t0\t0.25\t{0.1 + 0.01 * i:.2f}" for i in range(0, 30)]
    sigma_log.write_text("idx\tc_a\tsigma_K0\tsigma_K100\n" + "\n".join(rows) + "\n")
    out = tmp_path / "certify_K100.tsv"
    assert main(certify_args(digits_checkpoint, out, "--sigma-log", str(sigma_log), "--k", "100")) == 0
    log = read_log(out)
    assert log["scale"].tolist() == pytest.approx([0.1 + 0.01 * i for i in range(0, 30, 3)])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--scale", "0.25", "--noise", "laplace"], "unknown noise 'laplace'"),
        (["--scale", "0.25", "--n0", "0"], "n0 must be positive, got 0"),
        (["--scale", "0.25", "--alpha", "1.5"], r"alpha must lie in \(0, 1\), got 1.5"),
        (["--scale", "0.0"], "--scale must be > 0, got 0.0"),
        (["--scale", "0.25", "--k", "100"], "drop them with --scale"),
        (["--sigma-log", "SIGMA", "--k", "50"], r"sigma\.tsv: no column sigma_K50"),
        (["--sigma-log", "SIGMA"], "needs exactly one of --k and --sigma-column"),
    ],
)
def test_bad_input_exits_2_and_leaves_no_log(digits_checkpoint, tmp_path, capsys, extra, message):
    sigma_log = tmp_path / "sigma.tsv"
    sigma_log.write_text("idx\tc_a\tsigma_K0\n0\t0\t0.25\n")
    out = tmp_path / "certify.tsv"
    extra = [str(sigma_log) if arg == "SIGMA" else arg for arg in extra]
    assert main(certify_args(digits_checkpoint, out, *extra)) == 2
    err = capsys.readouterr().err
    assert err.startswith("ddrs certify: error: ")
    assert re.search(message, err)
    assert not out.exists() and not partial_path(out).exists()


def test_unknown_dataset_and_mismatched_checkpoint_exit_2(digits_checkpoint, tmp_path, capsys):
    out = tmp_path / "certify.tsv"
    args = certify_args(digits_checkpoint, out, "--scale", "0.25")
    dataset = args.index("--dataset") + 1
    for name, message in (("svhn", "unknown dataset 'svhn'"), ("mnist", "but dataset 'mnist' was requested")):
        args[dataset] = name
        assert main(args) == 2
        assert message in capsys.readouterr().err
        assert not out.exists() and not partial_path(out).exists()


def test_certify_then_table_end_to_end(digits_checkpoint, tmp_path, capsys):
    log_path = tmp_path / "cohen.tsv"
    assert main(certify_args(digits_checkpoint, log_path, "--scale", "0.25")) == 0
    assert main(["table", str(log_path), "--radii", "0", "0.25", "--out", str(tmp_path / "table.csv")]) == 0
    log = read_log(log_path)
    table = pd.read_csv(tmp_path / "table.csv").set_index("log")
    expected_at_0 = 100 * log["correct"].mean()
    expected_at_025 = 100 * ((log["correct"] == 1) & (log["radius"] >= 0.25)).mean()
    assert table.loc["cohen", ["0.00", "0.25"]].tolist() == pytest.approx([expected_at_0, expected_at_025])
    assert table.loc["cohen", "ACR"] == pytest.approx((log["radius"] * log["correct"]).mean())
    assert "| cohen" in capsys.readouterr().out
