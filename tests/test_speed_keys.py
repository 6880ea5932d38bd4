"""A speed key is speed only (docs/architecture.md, "What re-runs"; DESIGN.md, "Provenance"): one
job of each kind, run at two values of every key the config schema calls speed for it
(``x-reruns: []``), writes the same bytes but its time column. Where a key changed the last bits of a kind's rows
(``threads_per_job`` for training, the σ searches and the audit, ``optimize_sigma.batch`` for the σ searches),
it is part of that kind's identity instead, which this file holds too."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from reruns import kinds_of
from snakemake.utils import update_config
from workflow_helpers import REPO, load_config

from ddrs.models import load_checkpoint
from ddrs.pipeline import Experiment, Run
from ddrs.pipeline.job_plan import JobPlan
from ddrs.pipeline.provenance import load_config as load_checked_config

pytestmark = pytest.mark.e2e  # two trainings and a dozen jobs

DDRS = str(Path(sys.executable).parent / "ddrs")
RUN = Run("digits", "cohen", "fs", 0.25)
#: what a job's row carries besides its content: how long it took
TIME_COLUMNS = ("time", "seconds")
#: every CERTIFY speed setting at a value other than its default (``ddrs job --speed``); compilation is
#: left out (minutes of CPU compilation; tests/test_device.py compares compiled and eager logits)
OTHER_CERTIFY_SPEED = {"batch_size": 64, "inputs_per_call": 2, "memory_format": "channels_last", "pool": 3}
#: every training speed field at a value other than its default (``ddrs train --speed``)
OTHER_TRAIN_SPEED = {"num_workers": 1, "pin_memory": True, "activation_checkpoints": 1}


def ddrs(workdir: Path, *args: str, document: dict | None = None, threads: int = 1) -> None:
    command = [DDRS, "--threads", str(threads), *args]
    stdin = None if document is None else json.dumps(document)
    result = subprocess.run(command, input=stdin, capture_output=True, text=True, cwd=workdir)
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The digits data, the job plan of a small digits config and the options of one model."""
    workdir = tmp_path_factory.mktemp("speed")
    config = load_config()
    update_config(
        config,
        {
            "train": {"epochs": 2},
            "certify": {"n": 400},
            "optimize_sigma": {"k": [10]},
            "grid_search": {"n": [4]},
            "datasets": {"digits": {"test_max": 60}},
            "sun2024": {"gradient_norm_skip": 8},
        },
    )
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    config = load_checked_config([workdir / "config.yaml"], REPO / "config" / "schema" / "config.schema.yaml")
    exp = Experiment(config)
    ddrs(workdir, "prepare-data", "--dataset", "digits", "--data-root", "data", "--seed", "0", "--out", "data.json")
    return workdir, exp, JobPlan(exp.grid)


def rows(path: Path) -> pd.DataFrame:
    """A log or table as text, its time column aside."""
    sep = "," if path.suffix == ".csv" else "\t"
    frame = pd.read_csv(io.StringIO(path.read_text()), sep=sep, dtype=str, keep_default_na=False)
    return frame.drop(columns=[column for column in TIME_COLUMNS if column in frame])


def assert_same_rows(first: Path, second: Path) -> None:
    pd.testing.assert_frame_equal(rows(first), rows(second), check_exact=True)


@pytest.fixture(scope="module")
def model(setup):
    """One fixed-σ model trained twice, at the default speed settings and at others: the two files."""
    workdir, exp, _ = setup
    options = exp.training.train_options(RUN)
    made = []
    for name, speed in (("default", {}), ("other", OTHER_TRAIN_SPEED)):
        files = [f"--out={name}.pt", f"--log={name}.csv", f"--sigma-table={name}_sigmas.tsv"]
        ddrs(workdir, "train", "--config", "-", "--speed", json.dumps(speed), *files, "--no-progress", document=options)
        made.append(workdir / f"{name}.pt")
    return made


def test_a_models_weights_and_log_do_not_depend_on_its_training_speed_settings(setup, model):
    workdir, _, _ = setup
    assert {key for key in OTHER_TRAIN_SPEED if not kinds_of(f"train.{key}")} == set(OTHER_TRAIN_SPEED)
    (default, _), (other, _) = (load_checkpoint(path) for path in model)
    for name, weights in default.state_dict().items():
        assert torch.equal(weights, other.state_dict()[name]), name
    assert_same_rows(workdir / "default.csv", workdir / "other.csv")
    assert_same_rows(workdir / "default_sigmas.tsv", workdir / "other_sigmas.tsv")


@pytest.mark.parametrize(
    "kind",
    ["fixed_certification", "sequential_certification", "data_dependent_certification", "grid_search_certification"],
)
def test_a_certification_does_not_depend_on_certifys_speed_settings(setup, model, kind):
    workdir, _, plan = setup
    assert not any(kinds_of(f"certify.{key}") for key in ("batch", "memory_format", "compile"))
    searches = kind in ("data_dependent_certification", "grid_search_certification")
    document = plan.grid_search_certification(RUN, 4) if kind.startswith("grid") else getattr(plan, kind)(RUN)
    default = plan.speed(RUN)
    other = {"certify": {**default["certify"], **OTHER_CERTIFY_SPEED}}
    for name, speed in (("default", default), ("other", other)):
        files = ["--out", f"{kind}_{name}.tsv"]
        if searches:
            files += ["--sigma-log", f"{kind}_{name}_sigmas.tsv", "--memory-out", f"{kind}_{name}_memory.tsv"]
        ddrs(workdir, "job", "--config", "-", "--speed", json.dumps(speed), "--checkpoint", str(model[0]), *files,
             document=document)  # fmt: skip
    for suffix in (".tsv", *(("_sigmas.tsv", "_memory.tsv") if searches else ())):
        assert_same_rows(workdir / f"{kind}_default{suffix}", workdir / f"{kind}_other{suffix}")


@pytest.mark.parametrize("kind", ["fixed_certification", "sequential_certification", "gradient_norms"])
def test_a_job_outside_training_and_the_sigma_searches_does_not_depend_on_its_threads(setup, model, kind):
    """``threads_per_job`` is speed for CERTIFY (counts of argmax classes) and the gradient norms;
    training's, the σ searches' and the audit's (Algorithm 1 at every query) float sums follow the thread
    count, so it is their identity."""
    workdir, _, plan = setup
    assert kinds_of("threads_per_job") == {"train", "data_dependent", "grid_search", "audit"}
    assert kinds_of("optimize_sigma.batch") == {"data_dependent", "grid_search"}
    document = getattr(plan, kind)(RUN)
    for threads in (1, 2):
        out = f"{kind}_threads{threads}.tsv"
        ddrs(workdir, "job", "--config", "-", "--checkpoint", str(model[0]), "--out", out, document=document,
             threads=threads)  # fmt: skip
    assert_same_rows(workdir / f"{kind}_threads1.tsv", workdir / f"{kind}_threads2.tsv")
