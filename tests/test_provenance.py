"""Every output says what made it (ddrs.pipeline.provenance): a record beside each model, log and
table, and ``ddrs provenance`` naming the outputs of a tree that are not what the config asks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from workflow_helpers import REPO, load_config, snakemake, write_config

import ddrs
from ddrs.jobs.provenance import SUFFIX, code_version, identity_digest, read_record, record, source_digest

#: a small slice of config/digits.yaml: two Cohen models of one epoch, certified on 10 inputs
OVERLAY = {
    "methods": ["cohen"],
    "train": {"epochs": 1},
    "certify": {"n": 200},
    "optimize_sigma": {"k": [5]},
    "grid_search": {"enabled": False},
    "datasets": {"digits": {"sigmas": [0.25, 0.5], "test_max": 30}},
}
MODEL = "results/digits/cohen/fs/sigma0.25/model.pt"
FIXED = "results/digits/cohen/fs/sigma0.25/certify_fixed.tsv"
OTHER = "results/digits/cohen/fs/sigma0.5/certify_fixed.tsv"


def provenance(workdir: Path, *configs: Path) -> subprocess.CompletedProcess:
    command = [Path(sys.executable).parent / "ddrs", "provenance", "results", "--configfile", *map(str, configs)]
    command += ["--schema", str(REPO / "config" / "schema" / "config.schema.yaml")]
    return subprocess.run(command, capture_output=True, text=True, cwd=workdir)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """Two trained models and their fixed-σ logs, made by the workflow."""
    workdir = tmp_path_factory.mktemp("provenance")
    configs = (write_config(workdir, load_config()), write_config(workdir, OVERLAY, "overlay.yaml"))
    made = snakemake(workdir, "--cores", "2", FIXED, OTHER, "--configfile", *map(str, configs))
    assert made.returncode == 0, made.stderr
    return workdir, configs


def test_a_record_names_the_identity_and_the_code():
    assert identity_digest({"b": 1, "a": [0.5]}) == identity_digest({"a": [0.5], "b": 1})
    assert identity_digest({"a": 1}) != identity_digest({"a": 1.5})


def test_the_source_digest_changes_with_the_code_and_nothing_else(tmp_path):
    package = tmp_path / "ddrs"
    (package / "core").mkdir(parents=True)
    (package / "core" / "noise.py").write_text("SCALE = 1\n")
    (package / "published").mkdir()
    (package / "published" / "logs.csv").write_text("idx\n")
    first = source_digest(package)
    (package / "core" / "__pycache__").mkdir()
    (package / "core" / "__pycache__" / "noise.cpython-312.pyc").write_bytes(b"compiled")
    (package / "notes.md").write_text("not code")
    assert source_digest(package) == first  # caches and documents are not code
    (package / "core" / "noise.py").write_text("SCALE = 2\n")
    assert source_digest(package) != first
    assert code_version()["source"] == source_digest(Path(ddrs.__file__).parent)


def test_record_and_read_back(tmp_path):
    record([tmp_path / "log.tsv"], "fixed_certification", {"n": 100})
    assert read_record(tmp_path / "log.tsv") == {
        "kind": "fixed_certification",
        "identity": identity_digest({"n": 100}),
        **code_version(),
    }
    assert read_record(tmp_path / "other.tsv") is None


@pytest.mark.slow
def test_a_tree_the_workflow_just_made_is_the_configs(tree):
    workdir, configs = tree
    for output in (MODEL, FIXED, "results/digits/cohen/fs/sigma0.25/train.csv"):
        assert read_record(workdir / output)["identity"]
    result = provenance(workdir, *configs)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every output of results is what the config asks" in result.stdout


@pytest.mark.slow
def test_a_model_made_with_other_settings_is_named_with_every_log_made_from_it(tree):
    workdir, configs = tree
    path = workdir / f"{MODEL}{SUFFIX}"
    kept = path.read_text()
    try:  # as if the model had been trained with other options than the config's
        path.write_text(json.dumps({**json.loads(kept), "identity": identity_digest({"epochs": 3})}))
        result = provenance(workdir, *configs)
    finally:
        path.write_text(kept)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert f"results/{MODEL.removeprefix('results/')}: stale: made with other settings" in lines[0]
    assert any(
        line.startswith(f"results/{FIXED.removeprefix('results/')}: stale: made from the model") for line in lines
    )
    assert not any("sigma0.5" in line for line in lines)  # the other model and its log are the config's


@pytest.mark.slow
def test_an_edited_config_names_the_outputs_it_no_longer_describes(tree):
    workdir, configs = tree
    edited = write_config(workdir, {"certify": {"n": 300}}, "n300.yaml")
    result = provenance(workdir, *configs, edited)
    assert result.returncode == 1
    assert {line.split(":")[0] for line in result.stdout.splitlines()} == {FIXED, OTHER}
    speed = write_config(workdir, {"certify": {"batch": 64}}, "batch64.yaml")
    assert provenance(workdir, *configs, speed).returncode == 0  # speed is not identity


@pytest.mark.slow
def test_outputs_without_records_or_of_other_code_are_not_trusted(tree):
    workdir, configs = tree
    path = workdir / f"{FIXED}{SUFFIX}"
    kept = path.read_text()
    try:
        path.write_text(json.dumps({**json.loads(kept), "commit": "0" * 40}))
        other_commit = provenance(workdir, *configs)  # a commit that changed no source
        path.write_text(json.dumps({**json.loads(kept), "source": "0" * 64}))
        other = provenance(workdir, *configs)
        path.unlink()
        unknown = provenance(workdir, *configs)
    finally:
        path.write_text(kept)
    assert other_commit.returncode == 0, other_commit.stdout
    assert other.returncode == 1 and f"{FIXED}: other code: made by ddrs" in other.stdout
    assert unknown.returncode == 1 and f"{FIXED}: unknown provenance: no record" in unknown.stdout
