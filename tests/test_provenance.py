"""Every output says what made it (ddrs.pipeline.provenance): a record beside each model, log and
table, and ``ddrs provenance`` naming the outputs of a tree that are not what the config asks."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from workflow_helpers import REPO, load_config, snakemake, write_config

import ddrs
from ddrs.jobs.provenance_record import (
    SUFFIX,
    Digests,
    code_version,
    identity_digest,
    read_record,
    record,
    source_digest,
)

#: a small slice of config/digits.yaml: two Cohen models of one epoch, certified on 10 inputs, and a
#: DS² model fine-tuned from one of them in one epoch more
OVERLAY = {
    "methods": ["cohen"],
    "train": {"epochs": 1},
    "certify": {"n": 200, "sequential": {"compare": True}},
    "optimize_sigma": {"k": [5]},
    "grid_search": {"enabled": False},
    "datasets": {"digits": {"sigmas": [0.25, 0.5], "test_max": 30, "ds_fine_tune": {"cohen": {"epochs": 1}}}},
}
MODEL = "results/digits/cohen/fs/sigma0.25/model.pt"
FIXED = "results/digits/cohen/fs/sigma0.25/certify_fixed.tsv"
OTHER = "results/digits/cohen/fs/sigma0.5/certify_fixed.tsv"
FINE_TUNED = "results/digits/cohen/ds/sigma0.25/model.pt"
#: Súkeník et al.'s semi-elastic certification of the same model (its σ log, CERTIFY's log and this)
SEMI_ELASTIC = "results/digits/cohen/fs/sigma0.25/semi_elastic.tsv"
#: a table built from a catalogue entry's ``files`` (each σ's fixed and sequential log), not from records
SEQUENTIAL = "results/tables/sequential_digits.csv"
SPLIT = "data/digits/split_seed0.npz"


def provenance(workdir: Path, *configs: Path) -> subprocess.CompletedProcess:
    command = [Path(sys.executable).parent / "ddrs", "provenance", "results", "--configfile", *map(str, configs)]
    command += ["--schema", str(REPO / "config" / "schema" / "config.schema.yaml")]
    return subprocess.run(command, capture_output=True, text=True, cwd=workdir)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """Two trained models and their fixed-σ logs, made by the workflow."""
    workdir = tmp_path_factory.mktemp("provenance")
    configs = (write_config(workdir, load_config()), write_config(workdir, OVERLAY, "overlay.yaml"))
    targets = (FIXED, OTHER, FINE_TUNED, SEQUENTIAL, SEMI_ELASTIC)
    made = snakemake(workdir, "--cores", "2", *targets, "--configfile", *map(str, configs))
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
    """A record names the output's identity, its code, its own bytes and every file its job read."""
    (tmp_path / "model.pt").write_bytes(b"weights")
    (tmp_path / "log.tsv").write_text("idx\tradius\n0\t0.5\n")
    record([tmp_path / "log.tsv"], "fixed_certification", {"n": 100}, [tmp_path / "model.pt", None, tmp_path])
    stat = (tmp_path / "log.tsv").stat()
    assert read_record(tmp_path / "log.tsv") == {
        "kind": "fixed_certification",
        "identity": identity_digest({"n": 100}),
        **code_version(),
        "inputs": {str(tmp_path / "model.pt"): hashlib.sha256(b"weights").hexdigest()},
        "output": {
            "sha256": hashlib.sha256(b"idx\tradius\n0\t0.5\n").hexdigest(),
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
        },
    }
    assert read_record(tmp_path / "other.tsv") is None


def test_a_file_is_hashed_again_only_when_its_size_or_time_changes(tmp_path, monkeypatch):
    path = tmp_path / "log.tsv"
    path.write_text("0.5\n")
    hashed = []
    monkeypatch.setattr(
        "ddrs.jobs.provenance_record.file_digest", lambda p: hashed.append(p) or f"digest {len(hashed)}"
    )
    digests = Digests()
    assert digests(path) == digests(path) == "digest 1" and len(hashed) == 1
    path.write_text("9.99\n")  # another size
    assert digests(path) == "digest 2"
    os.utime(path, ns=(1, 1))  # another time
    assert digests(path) == "digest 3"
    digests.remember(path, path.stat().st_size, path.stat().st_mtime_ns, "recorded")
    assert digests(path) == "recorded" and digests(tmp_path / "none") is None and len(hashed) == 3


@pytest.mark.slow
def test_a_tree_the_workflow_just_made_is_the_configs(tree):
    workdir, configs = tree
    for output in (MODEL, FIXED, "results/digits/cohen/fs/sigma0.25/train.csv", SEMI_ELASTIC):
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
    assert f"{FIXED}: stale: made from {MODEL}, which is not the config's" in lines
    assert f"{FINE_TUNED}: stale: made from {MODEL}, which is not the config's" in lines
    assert not any("sigma0.5" in line for line in lines)  # the other model and its log are the config's


@pytest.mark.slow
def test_an_edited_config_names_the_outputs_it_no_longer_describes(tree):
    workdir, configs = tree
    edited = write_config(workdir, {"certify": {"n": 300}}, "n300.yaml")
    result = provenance(workdir, *configs, edited)
    assert result.returncode == 1
    sequential = {run.replace("certify_fixed", "certify_sequential") for run in (FIXED, OTHER)}
    found = {line.split(":")[0] for line in result.stdout.splitlines()}
    assert SEQUENTIAL in found and {path for path in found if "sequential_digits" not in path} == {
        FIXED,
        OTHER,
        *sequential,
    }
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


def named(result: subprocess.CompletedProcess) -> dict[str, str]:
    """The outputs ``ddrs provenance`` named, each with why."""
    assert result.returncode == 1, result.stdout + result.stderr
    return dict(line.split(": ", 1) for line in result.stdout.splitlines())


@pytest.mark.slow
def test_a_fine_tuning_and_a_table_of_files_follow_their_stale_inputs(tree):
    """The DS² model's own options name its init model by path, so a stale fixed-σ model leaves them
    as they were; a table of a catalogue entry's ``files`` has no records to follow. Both follow the
    files their records name."""
    workdir, configs = tree
    epochs = named(provenance(workdir, *configs, write_config(workdir, {"train": {"epochs": 2}}, "epochs2.yaml")))
    assert epochs[MODEL].startswith("stale: made with other settings") and FINE_TUNED in epochs
    assert epochs[FINE_TUNED] == f"stale: made from {MODEL}, which is not the config's"
    growth = {"certify": {"sequential": {"growth": 1.2}}}
    sequential = named(provenance(workdir, *configs, write_config(workdir, growth, "growth.yaml")))
    assert sequential[SEQUENTIAL].startswith("stale: made from results/digits/cohen/fs/sigma")
    assert FIXED not in sequential and MODEL not in sequential


@pytest.fixture
def kept(tree):
    """The tree's workdir, every file a test changes put back as it was afterwards."""
    workdir, _ = tree
    saved = {path: (workdir / path).read_bytes() for path in (MODEL, FIXED, SPLIT)}
    yield workdir
    for path, content in saved.items():
        (workdir / path).write_bytes(content)


@pytest.mark.slow
def test_a_copied_model_is_named_with_everything_made_from_it(tree, kept):
    shutil.copyfile(kept / MODEL.replace("sigma0.25", "sigma0.5"), kept / MODEL)
    found = named(provenance(kept, *tree[1]))
    assert found[MODEL].startswith("changed since it was made: its bytes are not those its job wrote")
    assert found[FIXED] == found[FINE_TUNED] == f"stale: made from {MODEL}, which is not the config's"
    assert not any("sigma0.5" in path for path in found)


@pytest.mark.slow
def test_a_hand_edited_log_is_named_with_the_tables_made_from_it(tree, kept):
    rows = (kept / FIXED).read_text().splitlines()
    header = rows[0].split("\t")
    first = rows[1].split("\t")
    first[header.index("radius")] = "9.99"
    (kept / FIXED).write_text("\n".join([rows[0], "\t".join(first), *rows[2:]]) + "\n")
    found = named(provenance(kept, *tree[1]))
    assert found[FIXED].startswith("changed since it was made")
    assert found[SEQUENTIAL] == f"stale: made from {FIXED}, which is not the config's"
    assert MODEL not in found


@pytest.mark.slow
def test_a_changed_data_split_is_named_with_every_model_and_log_made_from_it(tree, kept):
    """The test inputs reversed: no setting changes and Snakemake has nothing to do, yet every
    certificate would."""
    import numpy as np

    with np.load(kept / SPLIT) as saved:
        arrays = {key: saved[key] for key in saved.files}
    arrays["test_images"], arrays["test_labels"] = arrays["test_images"][::-1], arrays["test_labels"][::-1]
    with open(kept / SPLIT, "wb") as handle:
        np.savez(handle, **arrays)
    found = named(provenance(kept, *tree[1]))
    changed = f"stale: made from {SPLIT}, whose bytes have changed since (re-made, copied over or edited)"
    assert found[MODEL] == found[MODEL.replace("sigma0.25", "sigma0.5")] == changed
    assert found[FIXED] == f"stale: made from {MODEL}, which is not the config's"
    assert {OTHER, FINE_TUNED, SEQUENTIAL} <= set(found)
