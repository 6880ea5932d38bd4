"""``ddrs batch``: a model's chain of commands in one process writes what the commands write alone."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from ddrs.cli import command_modules, main
from ddrs.logs.certification_log import partial_path, read_log
from ddrs.logs.work_time import WORK_LINE

DATA = ["--dataset", "digits", "--max", "12", "--skip", "2", "--device", "cpu"]


def optimize(checkpoint, sigmas):
    """Algorithm 1 with snapshots at K = 0 and 3 (the workflow's first step of a model's -DS chain)."""
    return ["optimize-sigma", "--checkpoint", str(checkpoint), *DATA, "--sigma0", "0.25", "--k", "0", "3"] + [
        "--n0", "20", "--lr", "0.01", "--out", str(sigmas),
    ]  # fmt: skip


def certify(checkpoint, sigmas, outs, memory_outs, ks=("0", "3")):
    """CERTIFY each snapshot of the σ log, made sound by Algorithm 3."""
    return ["certify", "--checkpoint", str(checkpoint), *DATA, "--n0", "20", "--n", "200", "--alpha", "0.01"] + [
        "--sigma-log", str(sigmas), "--k", *ks, "--out", *map(str, outs), "--memory-out", *map(str, memory_outs),
    ]  # fmt: skip


def chain(checkpoint, directory, ks=("0", "3")):
    sigmas = directory / "sigma_opt.tsv"
    outs = [directory / f"certify_K{k}.tsv" for k in ks]
    memory = [directory / f"memory_K{k}.tsv" for k in ks]
    words = [*optimize(checkpoint, sigmas), "--then", *certify(checkpoint, sigmas, outs, memory, ks)]
    return sigmas, outs, memory, words


def without_time(path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t").drop(columns="time")


def test_a_batch_writes_what_its_commands_write_one_by_one(digits_checkpoint, tmp_path, capsys):
    alone, together = tmp_path / "alone", tmp_path / "together"
    alone.mkdir(), together.mkdir()
    sigmas, outs, memory, _ = chain(digits_checkpoint, alone)
    assert main(optimize(digits_checkpoint, sigmas)) == 0
    assert main(certify(digits_checkpoint, sigmas, outs, memory)) == 0
    capsys.readouterr()

    assert main(["batch", *chain(digits_checkpoint, together)[3]]) == 0
    err = capsys.readouterr().err
    # each command reports its own work, then the batch its whole: start-up is counted once
    jobs = [match["job"] for match in WORK_LINE.finditer(err)]
    assert jobs == ["ddrs optimize-sigma", "ddrs certify", "ddrs batch"]
    for path in [sigmas, *outs, *memory]:
        pd.testing.assert_frame_equal(without_time(together / path.name), without_time(path), obj=path.name)
    assert not list(together.glob("*.partial*"))


def test_every_command_is_checked_before_the_first_runs(digits_checkpoint, tmp_path, capsys):
    sigmas, _, _, words = chain(digits_checkpoint, tmp_path)
    words[words.index("--n", words.index("--then")) + 1] = "many"
    with pytest.raises(SystemExit) as exit_:
        main(["batch", *words])
    assert exit_.value.code == 2
    assert "ddrs certify: error: argument --n: invalid int value: 'many'" in capsys.readouterr().err
    assert not sigmas.exists() and not partial_path(sigmas).exists()


@pytest.mark.parametrize(
    ("later", "message"),
    [
        (["certify", "--sigma", "0.5", "--out", "b2.tsv", "b3.tsv"], "certify: --sigma writes one log, but --out"),
        (["certify", "--dataset", "svhn", "--sigma", "0.5", "--out", "b2.tsv"], "certify: unknown dataset 'svhn'"),
        (["optimize-sigma", "--sigma0", "0", "--out", "s.tsv"], "optimize-sigma: sigma0 must be > 0, got 0.0"),
        (["memory", "--log", "b1.tsv", "--dataset", "digits", "--out", "m.tsv", "m2.tsv"], "memory: 1 --log files"),
    ],
)
def test_every_commands_own_checks_run_before_the_first_runs(digits_checkpoint, tmp_path, capsys, later, message):
    first = tmp_path / "b1.tsv"
    words = ["certify", "--checkpoint", str(digits_checkpoint), *DATA, "--n0", "20", "--n", "200", "--sigma", "0.5"]
    if later[0] != "memory":  # a later --dataset overrides DATA's
        later = [later[0], "--checkpoint", str(digits_checkpoint), *DATA, *later[1:]]
    assert main(["batch", *words, "--out", str(first), "--then", *later]) == 2
    assert f"ddrs batch: error: {message}" in capsys.readouterr().err
    assert not first.exists() and not partial_path(first).exists()  # the first command never ran


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["certify", "--then"], "command 2 of the batch is empty"),
        (["certify", "--then", "--then", "memory"], "command 2 of the batch is empty"),
        (["batch", "certify"], "a batch cannot contain another batch"),
        (["certfy", "--out", "x"], f"unknown command 'certfy'; choose from {', '.join(sorted(command_modules()))}\n"),
        (["plot", "a.tsv", "--out", "c.png", "--bogus"], "plot: unrecognized arguments: --bogus"),
    ],
)
def test_a_malformed_batch_is_refused_by_name(words, message, capsys):
    assert main(["batch", *words]) == 2
    assert f"ddrs batch: error: {message}" in capsys.readouterr().err


def test_a_failing_command_keeps_the_earlier_commands_logs_for_the_rerun(digits_checkpoint, tmp_path, capsys):
    sigmas, outs, memory, words = chain(digits_checkpoint, tmp_path, ks=("0", "7"))  # the σ log has no K = 7
    assert main(["batch", *words]) == 2
    err = capsys.readouterr().err
    assert "ddrs batch: error: certify: " in err and "no column sigma_K7" in err
    first = pd.read_csv(sigmas, sep="\t")
    assert partial_path(sigmas).exists()  # Algorithm 1's rows outlive the failed job
    sigmas.unlink()  # Snakemake deletes a failed job's outputs before it reruns the job
    sigmas, outs, memory, words = chain(digits_checkpoint, tmp_path)
    assert main(["batch", *words]) == 0
    # the rerun published Algorithm 1's log from its kept rows, timings and all: nothing recomputed
    pd.testing.assert_frame_equal(pd.read_csv(sigmas, sep="\t"), first)
    assert len(read_log(outs[1])) == 6 and not list(tmp_path.glob("*.partial*"))


def test_a_job_document_writes_what_the_commands_write_with_their_flags(digits_checkpoint, tmp_path, monkeypatch):
    """`ddrs job --config -` (the workflow's door) and the commands' flags (a person's) reach one
    settings object: the same σ log, certification and memory logs, the model loaded once."""
    alone, job = tmp_path / "alone", tmp_path / "job"
    alone.mkdir(), job.mkdir()
    sigmas, outs, memory, words = chain(digits_checkpoint, alone)
    assert main(["batch", *words]) == 0
    inputs = {"dataset": "digits", "data_root": "data", "skip": 2, "max": 12, "seed": 0, "device": "cpu"}
    shared = {"noise": "gaussian", "seed": 0, "precision": "fp32"}
    document = {
        "kind": "data_dependent_certification",
        "inputs": inputs,
        "algorithm1": {**shared, "sigma0": 0.25, "steps": [0, 3], "n0": 20, "lr": 0.01},
        "certify": {**shared, "n0": 20, "n": 200, "alpha": 0.01},
    }
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(document)))
    files = ["--sigma-log", str(job / sigmas.name), "--out", *(str(job / p.name) for p in outs)]
    files += ["--memory-out", *(str(job / p.name) for p in memory)]
    assert main(["job", "--config", "-", "--checkpoint", str(digits_checkpoint), *files]) == 0
    for path in [sigmas, *outs, *memory]:
        pd.testing.assert_frame_equal(without_time(job / path.name), without_time(path), obj=path.name)
