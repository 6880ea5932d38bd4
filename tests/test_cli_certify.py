"""``ddrs certify`` end to end on digits, in process."""

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from killed_job import FailsAfter

import ddrs
from ddrs.cli import _test_inputs, main
from ddrs.logs.certification_log import COHEN_COLUMNS, partial_path, read_log
from ddrs.models import save_checkpoint


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
    assert main(certify_args(digits_checkpoint, out, "--sigma", "0.25", "--device", "cpu")) == 0
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
        assert main(certify_args(digits_checkpoint, out, "--sigma", "0.5", "--seed", seed, "--noise", "uniform")) == 0
        logs.append(read_log(out).drop(columns="time"))
    assert logs[0].equals(logs[1])
    assert not logs[0]["p_a_lower"].equals(logs[2]["p_a_lower"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--batch", "many"], "argument --batch: expected a positive integer or auto, got 'many'"),
        (["--memory-format", "nhwc"], "argument --memory-format: invalid choice: 'nhwc'"),
    ],
)
def test_bad_gpu_option_is_a_usage_error(digits_checkpoint, tmp_path, capsys, extra, message):
    out = tmp_path / "certify.tsv"
    with pytest.raises(SystemExit) as exit_:
        main(certify_args(digits_checkpoint, out, "--sigma", "0.25", *extra))
    assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert not out.exists()


def test_auto_batch_and_channels_last_certify_like_the_defaults_on_the_cpu(digits_checkpoint, tmp_path, capsys):
    """On the CPU ``--batch auto`` is Cohen's 400 and channels_last computes the same base classifier."""
    logs = []
    for name, extra in (
        ("default", ["--batch", "400"]),
        ("gpu_options", ["--batch", "auto", "--memory-format", "channels_last"]),
    ):
        out = tmp_path / f"{name}.tsv"
        assert main(certify_args(digits_checkpoint, out, "--sigma", "0.25", "--device", "cpu", *extra)) == 0
        logs.append(read_log(out).drop(columns="time"))
    assert logs[0].equals(logs[1])
    printed = capsys.readouterr().out
    assert "fp32, contiguous ->" in printed and "fp32, channels_last ->" in printed


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
        (["--sigma", "0.25", "--noise", "laplace"], "unknown noise 'laplace'"),
        (["--sigma", "0.25", "--n0", "0"], "n0 must be positive, got 0"),
        (["--sigma", "0.25", "--alpha", "1.5"], r"alpha must lie in \(0, 1\), got 1.5"),
        (["--sigma", "0.0"], "--sigma must be > 0, got 0.0"),
        (["--sigma", "0.25", "--k", "100"], "drop them with --sigma"),
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
    args = certify_args(digits_checkpoint, out, "--sigma", "0.25")
    dataset = args.index("--dataset") + 1
    for name, message in (("svhn", "unknown dataset 'svhn'"), ("mnist", "but dataset 'mnist' was requested")):
        args[dataset] = name
        assert main(args) == 2
        assert message in capsys.readouterr().err
        assert not out.exists() and not partial_path(out).exists()


def test_a_seed_that_draws_another_digits_split_than_the_checkpoints_is_refused(digits_model, tmp_path, capsys):
    """On the embedded datasets --seed also draws the train/test split: another one would put
    training digits among the certified test inputs."""
    checkpoint = tmp_path / "trained_seed0.pt"
    save_checkpoint(checkpoint, digits_model, arch="mlp", dataset="digits", config={"seed": 0})
    out = tmp_path / "certify.tsv"
    assert main(certify_args(checkpoint, out, "--sigma", "0.25", "--seed", "1")) == 2
    assert f"{checkpoint} was trained on the digits split of seed 0, but --seed 1" in capsys.readouterr().err
    assert not out.exists()
    assert main(certify_args(checkpoint, out, "--sigma", "0.25", "--seed", "0")) == 0


def test_certify_then_table_end_to_end(digits_checkpoint, tmp_path, capsys):
    log_path = tmp_path / "cohen.tsv"
    assert main(certify_args(digits_checkpoint, log_path, "--sigma", "0.25")) == 0
    assert main(["table", str(log_path), "--radii", "0", "0.25", "--out", str(tmp_path / "table.csv")]) == 0
    log = read_log(log_path)
    table = pd.read_csv(tmp_path / "table.csv").set_index("log")
    expected_at_0 = 100 * log["correct"].mean()
    expected_at_025 = 100 * ((log["correct"] == 1) & (log["radius"] >= 0.25)).mean()
    assert table.loc["cohen", ["0.00", "0.25"]].tolist() == pytest.approx([expected_at_0, expected_at_025])
    assert table.loc["cohen", "ACR_per_log"] == pytest.approx((log["radius"] * log["correct"]).mean())
    assert "| cohen" in capsys.readouterr().out


def write_sigma_log(path, columns):
    """A σ log with the given scale columns, a different scale per input and column."""
    rows = [f"{i}\t0\t" + "\t".join(f"{0.1 + 0.01 * i + 0.05 * c:.2f}" for c in range(len(columns))) for i in range(30)]
    path.write_text("\t".join(["idx", "c_a", *columns]) + "\n" + "\n".join(rows) + "\n")
    return path


def test_several_columns_certify_in_one_run_as_in_separate_runs(digits_checkpoint, tmp_path, capsys):
    sigma_log = write_sigma_log(tmp_path / "sigma.tsv", ["sigma_K0", "sigma_K50", "sigma_K100"])
    together = [tmp_path / f"together_K{k}.tsv" for k in (0, 50, 100)]
    args = certify_args(digits_checkpoint, together[0], "--sigma-log", str(sigma_log), "--k", "0", "50", "100")
    args[args.index("--out") + 1 : args.index("--out") + 2] = [str(out) for out in together]
    assert main(args) == 0
    assert all(f"-> {out}" in capsys.readouterr().out for out in together[:1])
    for k, out in zip((0, 50, 100), together, strict=True):
        alone = tmp_path / f"alone_K{k}.tsv"
        assert (
            main(certify_args(digits_checkpoint, alone, "--sigma-log", str(sigma_log), "--sigma-column", f"sigma_K{k}"))
            == 0
        )
        pd.testing.assert_frame_equal(read_log(out).drop(columns="time"), read_log(alone).drop(columns="time"))
    assert read_log(together[0])["scale"].tolist() != read_log(together[2])["scale"].tolist()


def test_a_killed_multi_column_run_keeps_its_finished_logs_and_resumes(digits_checkpoint, tmp_path, monkeypatch):
    sigma_log = write_sigma_log(tmp_path / "sigma.tsv", ["sigma_grid_n1", "sigma_grid_n4"])
    outs = [tmp_path / "n1.tsv", tmp_path / "n4.tsv"]
    args = certify_args(digits_checkpoint, outs[0], "--sigma-log", str(sigma_log), "--sigma-column")
    args += ["sigma_grid_n1", "sigma_grid_n4"]
    args[args.index("--out") + 1 : args.index("--out") + 2] = [str(out) for out in outs]
    load = _test_inputs.load

    def crashing_load(parsed):
        # a log takes 22 forward passes: 17 for its first 8 inputs, 5 for the last 2; crash on the last 2 of the second
        loaded = load(parsed)
        return dataclasses.replace(loaded, model=FailsAfter(loaded.model, calls=22 + 17 + 2))

    monkeypatch.setattr(_test_inputs, "load", crashing_load)
    with pytest.raises(RuntimeError, match="simulated crash"):
        main(args)
    assert len(read_log(outs[0])) == 10 and not outs[1].exists()
    kept = read_log(partial_path(outs[1]))
    assert len(kept) == 8
    first = read_log(outs[0])
    outs[0].unlink()  # Snakemake deletes a killed job's outputs before it reruns the job
    monkeypatch.setattr(_test_inputs, "load", load)
    assert main(args) == 0
    # the rerun resumes the second log from its rows and rewrites the first from its kept rows,
    # timings and all: nothing certified before the crash is certified again
    pd.testing.assert_frame_equal(read_log(outs[1]).iloc[:8], kept)
    assert len(read_log(outs[1])) == 10
    pd.testing.assert_frame_equal(read_log(outs[0]), first)
    assert not any(partial_path(out).exists() for out in outs)  # the finished job keeps no partial rows


@pytest.mark.parametrize(
    ("extra", "outs", "message"),
    [
        (["--sigma-log", "SIGMA", "--k", "0", "50"], 1, r"--k names 2 σ-log column\(s\) but --out names 1 log\(s\)"),
        (["--sigma-log", "SIGMA", "--sigma-column", "sigma_K0"], 2, r"--sigma-column names 1 .* --out names 2"),
        (["--sigma", "0.25"], 2, "--sigma writes one log, but --out names 2"),
    ],
)
def test_mismatched_column_and_out_counts_exit_2_and_write_nothing(
    digits_checkpoint, tmp_path, capsys, extra, outs, message
):
    sigma_log = write_sigma_log(tmp_path / "sigma.tsv", ["sigma_K0", "sigma_K50"])
    paths = [tmp_path / f"out{i}.tsv" for i in range(outs)]
    args = certify_args(digits_checkpoint, paths[0], *[str(sigma_log) if a == "SIGMA" else a for a in extra])
    args[args.index("--out") + 1 : args.index("--out") + 2] = [str(path) for path in paths]
    assert main(args) == 2
    assert re.search(message, capsys.readouterr().err)
    assert not any(path.exists() or partial_path(path).exists() for path in paths)


def test_the_same_out_twice_is_refused(digits_checkpoint, tmp_path, capsys):
    sigma_log = write_sigma_log(tmp_path / "sigma.tsv", ["sigma_K0", "sigma_K50"])
    out = tmp_path / "out.tsv"
    args = certify_args(digits_checkpoint, out, "--sigma-log", str(sigma_log), "--k", "0", "50")
    args.insert(args.index("--out") + 1, str(out))
    assert main(args) == 2
    assert f"--out (or --memory-out) names {out} more than once" in capsys.readouterr().err


def test_building_the_parsers_loads_no_torch():
    # cli/certify.py, cli/optimize_sigma.py and cli/_test_inputs.py import torch only when a command runs
    cli = Path(ddrs.__file__).parent / "cli"
    code = (
        "import argparse, sys, types\n"
        f"package = types.ModuleType('ddrs.cli'); package.__path__ = [{str(cli)!r}]\n"
        "sys.modules['ddrs.cli'] = package  # the package's __init__ is not under test here\n"
        "from ddrs.cli import certify, optimize_sigma\n"
        "commands = argparse.ArgumentParser().add_subparsers()\n"
        "certify.add_parser(commands); optimize_sigma.add_parser(commands)\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", result.stderr


def test_memory_out_writes_what_ddrs_memory_writes(digits_checkpoint, tmp_path):
    sigma_log = write_sigma_log(tmp_path / "sigma.tsv", ["sigma_K0", "sigma_K50"])
    outs = [tmp_path / "K0.tsv", tmp_path / "K50.tsv"]
    memory = [tmp_path / "memory_K0.tsv", tmp_path / "memory_K50.tsv"]
    args = certify_args(digits_checkpoint, outs[0], "--sigma-log", str(sigma_log), "--k", "0", "50")
    args[args.index("--out") + 1 : args.index("--out") + 2] = [str(out) for out in outs]
    assert main([*args, "--memory-out", *map(str, memory)]) == 0
    for out, written in zip(outs, memory, strict=True):
        separate = tmp_path / f"separate_{out.name}"
        assert main(["memory", "--log", str(out), "--dataset", "digits", "--out", str(separate)]) == 0
        assert written.read_bytes() == separate.read_bytes()


def test_memory_out_needs_one_log_per_out(digits_checkpoint, tmp_path, capsys):
    sigma_log = write_sigma_log(tmp_path / "sigma.tsv", ["sigma_K0", "sigma_K50"])
    args = certify_args(digits_checkpoint, tmp_path / "K0.tsv", "--sigma-log", str(sigma_log), "--k", "0")
    assert main([*args, "--memory-out", str(tmp_path / "a.tsv"), str(tmp_path / "b.tsv")]) == 2
    assert "--memory-out names 2 log(s) for 1 --out log(s)" in capsys.readouterr().err


def test_sequential_mode_certifies_from_the_command_line_with_sigma_log_and_memory(digits_checkpoint, tmp_path):
    """``--mode sequential`` with per-input σ (Algorithm 1's log) and Algorithm 3's memory."""
    sigma_log = write_sigma_log(tmp_path / "sigma.tsv", ["sigma_K50"])
    out, memory = tmp_path / "sequential.tsv", tmp_path / "memory.tsv"
    flags = ["--mode", "sequential", "--radii", "0.25", "0.5", "--first-look", "16", "--memory-out", str(memory)]
    args = certify_args(digits_checkpoint, out, "--sigma-log", str(sigma_log), "--k", "50", *flags)
    assert main(args) == 0
    log = read_log(out)
    assert {"draws", "decided"} <= set(log.columns)
    assert (log["draws"] <= 20 + 300).all() and (log["draws"] < 20 + 300).any()
    assert read_log(memory)["idx"].tolist() == log["idx"].tolist()


def test_bad_sequential_flags_exit_2(digits_checkpoint, tmp_path, capsys):
    args = certify_args(digits_checkpoint, tmp_path / "log.tsv", "--sigma", "0.25", "--mode", "sequential")
    assert main([*args, "--growth", "1"]) == 2
    assert "growth must be > 1" in capsys.readouterr().err
