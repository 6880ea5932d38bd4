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
import yaml
from published_helpers import (
    REPOSITORY,
    gaussian_like,
    git_repository,
    log_text,
    registry_row,
    write_families,
    write_registry,
)
from workflow_helpers import REPO, load_config, snakemake, write_config

import ddrs
from ddrs.jobs.provenance_record import (
    SUFFIX,
    Digests,
    NotARecord,
    code_version,
    identity_digest,
    read_record,
    record,
    source_digest,
)

#: a small slice of config/digits.yaml: two Cohen models of one epoch, certified on 10 inputs, a DS² model
#: fine-tuned from one of them in one epoch more, Algorithm 1 at K 5 and 10 and a Monte Carlo
#: re-certification of one; and a published-logs world (a git mirror of two logs) with a user's own log
OVERLAY = {
    "methods": ["cohen"],
    "train": {"epochs": 1},
    "certify": {"n": 200, "sequential": {"compare": True}},
    "optimize_sigma": {"k": [5, 10]},
    "grid_search": {"enabled": False},
    "replication": {"monte_carlo": 1},
    "datasets": {"digits": {"sigmas": [0.25, 0.5], "test_max": 30, "ds_fine_tune": {"cohen": {"epochs": 1}}}},
}
MODEL = "results/digits/cohen/fs/sigma0.25/model.pt"
FIXED = "results/digits/cohen/fs/sigma0.25/certify_fixed.tsv"
OTHER = "results/digits/cohen/fs/sigma0.5/certify_fixed.tsv"
FINE_TUNED = "results/digits/cohen/ds/sigma0.25/model.pt"
#: Súkeník et al.'s semi-elastic certification of the same model (its σ log, CERTIFY's log and this)
SEMI_ELASTIC = "results/digits/cohen/fs/sigma0.25/semi_elastic.tsv"
MONTE_CARLO = "results/digits/cohen/fs/sigma0.25/certify_fixed_mc1.tsv"
K5, K10 = "results/digits/cohen/fs/sigma0.25/certify_K5.tsv", "results/digits/cohen/fs/sigma0.25/certify_K10.tsv"
#: a table built from a catalogue entry's ``files`` (each σ's fixed and sequential log), not from records
SEQUENTIAL = "results/tables/sequential_digits.csv"
SPLIT = "data/digits/split_seed0.npz"
#: the published side: the user's own log, a repository's manifest, the dataset's entries and its leaderboard
OWN_LOG = "ownlogs/mine.tsv"
MANIFEST = f"results/published/manifests/{REPOSITORY.replace('/', '+')}.csv"
ENTRIES = "results/published/logs/cifar10.npz"
LEADERBOARD = "results/tables/published_leaderboard_cifar10.csv"
TARGETS = (FIXED, OTHER, FINE_TUNED, SEQUENTIAL, MONTE_CARLO, K5, LEADERBOARD, SEMI_ELASTIC)
PUBLISHED_N = 100


def published_world(workdir: Path) -> dict:
    """A git mirror of a Gaussian and a stronger log on CIFAR-10 idx 0:99, their registry and families,
    the user's own log of the same inputs, and the config section that ranks it (paths from ``workdir``)."""
    logs = {f"data/{name}": log_text(*gaussian_like(PUBLISHED_N, 0.5, accuracy, 2.5, seed=seed))
            for name, accuracy, seed in (("gaussian", 0.6, 1), ("strong", 0.8, 2))}  # fmt: skip
    commit = git_repository(workdir / "mirror", logs)
    rows = [registry_row(path, text, commit=commit, method_authors=path[5:]) for path, text in logs.items()]
    write_registry(workdir / "registry.csv", rows)
    write_families(workdir / "families.csv", rows, {"gaussian": "Gaussian", "strong": "Strong"})
    (workdir / "ownlogs").mkdir()
    (workdir / OWN_LOG).write_text(log_text(*gaussian_like(PUBLISHED_N, 0.5, 0.9, 2.5, seed=3)))
    own = {"dataset": "cifar10", "sigma": 0.5, "path": OWN_LOG, "arch": "resnet110", "n": 100_000}
    return {
        "published_logs": {
            **{"registry": "registry.csv", "families": "families.csv", "cache": "cache", "offline": True},
            **{"mirrors": {REPOSITORY: "mirror/.git"}, "audit": False, "seed_tables": False},
            **{"leaderboards": {"cifar10": [0.0, 0.25, 0.5]}, "own": {"mine": own}},
        },
        "statistics": {"n_boot": 100},
    }


def provenance(workdir: Path, *configs: Path, results: str = "results", cwd: Path | None = None):
    """``ddrs provenance`` of the tree in ``workdir`` (run there, or from ``cwd`` with ``-d workdir``)."""
    command = [Path(sys.executable).parent / "ddrs", "provenance", results, "--configfile", *map(str, configs)]
    command += ["--schema", str(REPO / "config" / "schema" / "config.schema.yaml")]
    command += [] if cwd is None else ["-d", str(workdir)]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd or workdir)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """The :data:`TARGETS` made by the workflow: models, their logs, a table, a leaderboard of own logs."""
    workdir = tmp_path_factory.mktemp("provenance")
    overlay = {**OVERLAY, **published_world(workdir)}
    configs = (write_config(workdir, load_config()), write_config(workdir, overlay, "overlay.yaml"))
    made = snakemake(workdir, "--cores", "2", *TARGETS, "--configfile", *map(str, configs), warm=True)
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
    """A record names the output's identity, its code, its own path and bytes and every file its job read."""
    (tmp_path / "model.pt").write_bytes(b"weights")
    (tmp_path / "log.tsv").write_text("idx\tradius\n0\t0.5\n")
    record([tmp_path / "log.tsv"], "fixed_certification", {"n": 100}, [tmp_path / "model.pt", None, tmp_path])
    assert read_record(tmp_path / "log.tsv") == {
        "kind": "fixed_certification",
        "identity": identity_digest({"n": 100}),
        **code_version(),
        "path": str(tmp_path / "log.tsv"),
        "inputs": {str(tmp_path / "model.pt"): hashlib.sha256(b"weights").hexdigest()},
        "output": {"sha256": hashlib.sha256(b"idx\tradius\n0\t0.5\n").hexdigest(), "size": 17},
    }
    assert read_record(tmp_path / "other.tsv") is None


@pytest.mark.parametrize(
    "text,problem",
    [
        ("[]", "a JSON list, not an object"),
        ('{"kind": "x", "identity": "y", "ddrs": "1", "source": "z", "inputs": [], "output": {}}',
         "a list as its 'inputs'"),
        ('{"kind": "x", "identity": "y", "ddrs": "1", "source": "z", "inputs": {"a": 1}, "output": {}}',
         "its 'inputs' are not file → SHA-256"),
        ('{"kind": "x", "identity": "y", "ddrs": "1", "source": "z", "inputs": {}}', "no 'output'"),
        ('{"kind": "fixed_certification", "ident', "Unterminated string"),
        ("\xff\xfe", "Expecting value"),
    ],
    ids=["list", "inputs_list", "inputs_not_digests", "no_output", "truncated", "not_utf8"],
)  # fmt: skip
def test_a_file_that_is_not_a_record_is_named_with_what_is_wrong(tmp_path, text, problem):
    (tmp_path / "log.tsv").write_text("0.5\n")
    (tmp_path / f"log.tsv{SUFFIX}").write_bytes(text.encode("latin-1"))
    with pytest.raises(NotARecord, match=f"log.tsv{SUFFIX}: not a provenance record: .*{problem}"):
        read_record(tmp_path / "log.tsv")


def test_a_file_is_hashed_once_per_walk_and_again_when_it_changes(tmp_path, monkeypatch):
    """No digest is taken from a record, whatever times a file holds: every file judged is hashed."""
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
    stat = path.stat()
    path.write_text("1.11\n")  # the same size, its time put back as a tamperer would: ctime moves all the same
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert digests(path) == "digest 3"
    assert digests(tmp_path / "none") is None and digests(tmp_path) is None and len(hashed) == 3


def stale_to_snakemake(workdir: Path, *configs: Path) -> set[str]:
    """The outputs with a record that Snakemake would make again for :data:`TARGETS` (``--summary``'s
    plan): what ``ddrs provenance`` must name too."""
    result = snakemake(workdir, "--summary", "--configfile", *map(str, configs), "--", *TARGETS)
    assert result.returncode == 0, result.stderr
    rows = [line.split("\t") for line in result.stdout.splitlines()[1:]]
    return {row[0] for row in rows if row[-1] != "no update" and (workdir / f"{row[0]}{SUFFIX}").is_file()}


def judged(workdir: Path, configs: tuple[Path, ...]) -> set[str]:
    """The outputs ``ddrs provenance`` judges in the tree (:func:`ddrs.pipeline.provenance.judged_outputs`)."""
    from ddrs.pipeline import Experiment
    from ddrs.pipeline.job_plan import JobPlan
    from ddrs.pipeline.provenance import judged_outputs
    from ddrs.pipeline.provenance import load_config as merged_config

    exp = Experiment(merged_config(configs, REPO / "config" / "schema" / "config.schema.yaml"))
    return set(judged_outputs(exp, JobPlan(exp.grid), lambda path: workdir / path))


@pytest.mark.e2e
def test_a_tree_the_workflow_just_made_is_clean_to_both_and_every_record_is_judged(tree, monkeypatch):
    """Snakemake has nothing to do and ``ddrs provenance`` names nothing; every file with a record
    (the Monte Carlo logs, the published logs' manifest and entries included) is one it judges; and
    ``-d`` reads a tree made with ``snakemake -d`` from anywhere."""
    workdir, configs = tree
    for output in (MODEL, FIXED, "results/digits/cohen/fs/sigma0.25/train.csv", SEMI_ELASTIC):
        assert read_record(workdir / output)["identity"]
    result = provenance(workdir, *configs)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every output of results is what the config asks" in result.stdout
    assert stale_to_snakemake(workdir, *configs) == set()
    records = {path.relative_to(workdir).as_posix().removesuffix(SUFFIX) for path in workdir.rglob(f"*{SUFFIX}")}
    monkeypatch.chdir(workdir)  # the config's published files are named from the working directory
    assert records == judged(workdir, configs) and {MONTE_CARLO, MANIFEST, ENTRIES} <= records
    elsewhere = provenance(workdir, *configs, cwd=workdir.parent)
    assert elsewhere.returncode == 0, elsewhere.stdout + elsewhere.stderr


@pytest.mark.e2e
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


@pytest.mark.e2e
def test_an_edited_config_names_the_outputs_it_no_longer_describes(tree):
    workdir, configs = tree
    edited = write_config(workdir, {"certify": {"n": 300}}, "n300.yaml")
    found = named(provenance(workdir, *configs, edited))
    sequential = {run.replace("certify_fixed", "certify_sequential") for run in (FIXED, OTHER)}
    logs = {path for path in found if path.startswith("results/digits/")}
    assert {FIXED, OTHER, *sequential, MONTE_CARLO, K5, K10} <= logs and SEQUENTIAL in found
    assert not {MODEL, FINE_TUNED, ENTRIES, LEADERBOARD} & set(found)  # n decides no model, no published log
    assert stale_to_snakemake(workdir, *configs, edited) == set(found)
    speed = write_config(workdir, {"certify": {"batch": 64}}, "batch64.yaml")
    assert provenance(workdir, *configs, speed).returncode == 0  # speed is not identity


@pytest.mark.e2e
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


@pytest.mark.e2e
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


class Kept:
    """Files of a tree, bytes and times (each with its record), to put back as they were."""

    def __init__(self, workdir: Path):
        self.workdir, self.saved = workdir, {}

    def __call__(self, *paths: str | Path) -> None:
        for path in map(Path, paths):
            for file in (self.workdir / path, self.workdir / f"{path}{SUFFIX}"):
                if file.is_file() and file not in self.saved:
                    self.saved[file] = (file.read_bytes(), file.stat())

    def put_back(self) -> None:
        for file, (content, stat) in self.saved.items():
            file.write_bytes(content)
            os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@pytest.fixture
def restored(tree):
    """Keeps what a test names (``restored(path, ...)``) and puts it back, bytes and times, afterwards."""
    kept = Kept(tree[0])
    yield kept
    kept.put_back()


@pytest.fixture
def kept(tree):
    """The tree's workdir; the model, a log and the data split put back afterwards, bytes and times."""
    saved = Kept(tree[0])
    saved(MODEL, FIXED, SPLIT)
    yield tree[0]
    saved.put_back()


@pytest.mark.e2e
def test_a_copied_model_is_named_with_everything_made_from_it(tree, kept):
    shutil.copyfile(kept / MODEL.replace("sigma0.25", "sigma0.5"), kept / MODEL)
    found = named(provenance(kept, *tree[1]))
    assert found[MODEL].startswith("changed since it was made: its bytes are not those its job wrote")
    assert found[FIXED] == found[FINE_TUNED] == f"stale: made from {MODEL}, which is not the config's"
    assert not any("sigma0.5" in path for path in found)


@pytest.mark.e2e
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


@pytest.mark.e2e
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


def same_size_edit(path: Path) -> None:
    """Change one digit of ``path``'s first radius, keeping its size and modification time."""
    stat, lines = path.stat(), path.read_text().split("\n")
    fields = lines[1].split("\t")
    fields[3] = ("9" if fields[3][0] != "9" else "8") + fields[3][1:]
    path.write_text("\n".join([lines[0], "\t".join(fields), *lines[2:]]))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size


#: the leaderboard's outputs, made from the entries
BOARD = {LEADERBOARD, LEADERBOARD.replace(".csv", ".md"), LEADERBOARD.replace(".csv", ".tex")}


def test_an_own_log_replaced_or_set_otherwise_is_named_as_snakemake_reruns_it(tree, restored):
    """Why 2: the user's own log is an input of the entries, by SHA-256, and its σ, n and family are
    their identity: a replaced log, another σ, n or family, or the log left out of the config each name
    the entries and the leaderboard, the outputs Snakemake would make again."""
    workdir, configs = tree
    restored(OWN_LOG)
    (workdir / OWN_LOG).write_text(log_text(*gaussian_like(PUBLISHED_N, 0.5, 0.9, 2.5, seed=4)))
    found = named(provenance(workdir, *configs))
    assert (
        found[ENTRIES] == f"stale: made from {OWN_LOG}, whose bytes have changed since (re-made, copied over or edited)"
    )
    assert set(found) == {ENTRIES, *BOARD} == stale_to_snakemake(workdir, *configs)
    restored.put_back()
    overlay = yaml.safe_load(configs[1].read_text())
    del overlay["published_logs"]["own"]
    left_out = write_config(workdir, overlay, "left_out.yaml")
    for change in ({"sigma": 0.6}, {"n": 10_000}, {"family": "Mine"}, None):
        edited = (configs[0], left_out) if change is None else (*configs, write_config(
            workdir, {"published_logs": {"own": {"mine": change}}}, "own.yaml"))  # fmt: skip
        found = named(provenance(workdir, *edited))
        assert (
            found[ENTRIES] == "stale: made with other settings than the config asks of its published_dataset_logs job"
        )
        assert set(found) == {ENTRIES, *BOARD} == stale_to_snakemake(workdir, *edited), change


def test_an_edited_cached_log_is_named_and_refused_when_read_again(tree, restored, tmp_path, monkeypatch):
    """Why 2: the manifest's record holds the SHA-256 of every cached log its fetch checked, so a cached
    log edited since (its size and time as they were) names the manifest and all made from it. The
    cache is no input Snakemake knows of: only provenance sees this. Read again, the log is refused."""
    from ddrs.errors import FetchError
    from ddrs.published.builders import dataset_entries

    workdir, configs = tree
    cached = next((workdir / "cache").rglob("strong")).relative_to(workdir).as_posix()
    restored(cached)
    same_size_edit(workdir / cached)
    found = named(provenance(workdir, *configs))
    changed = f"stale: made from {cached}, whose bytes have changed since (re-made, copied over or edited)"
    assert found[MANIFEST] == changed and found[ENTRIES] == f"stale: made from {MANIFEST}, which is not the config's"
    assert set(found) == {MANIFEST, ENTRIES, *BOARD} and stale_to_snakemake(workdir, *configs) == set()
    monkeypatch.chdir(workdir)
    with pytest.raises(FetchError, match=f"its cached copy {cached} has sha256 .*, not the registry's"):
        dataset_entries([MANIFEST], "cifar10", tmp_path / "entries.npz", "registry.csv", "families.csv")


def test_every_monte_carlo_log_is_judged(tree, restored):
    """Why 3: a re-certification's record deleted, or its log edited, is named."""
    workdir, configs = tree
    restored(MONTE_CARLO)
    (workdir / f"{MONTE_CARLO}{SUFFIX}").unlink()
    assert named(provenance(workdir, *configs)) == {
        MONTE_CARLO: "unknown provenance: no record (made before ddrs recorded provenance, or by hand)"
    }
    restored.put_back()
    same_size_edit(workdir / MONTE_CARLO)
    found = named(provenance(workdir, *configs))
    assert found == {
        MONTE_CARLO: "changed since it was made: its bytes are not those its job wrote (edited, or copied over)"
    }


def test_outputs_swapped_with_their_records_are_named(tree, restored):
    """Why 4: a record binds its output's path. Two logs of one job (one identity) swapped with their
    records, and two models with theirs, are named; the models' logs follow."""
    workdir, configs = tree
    other_model = MODEL.replace("sigma0.25", "sigma0.5")
    restored(K5, K10, MODEL, other_model)
    for first, second in ((K5, K10), (MODEL, other_model)):
        for suffix in ("", SUFFIX):
            (workdir / f"{first}{suffix}").rename(workdir / "swap")
            (workdir / f"{second}{suffix}").rename(workdir / f"{first}{suffix}")
            (workdir / "swap").rename(workdir / f"{second}{suffix}")
    found = named(provenance(workdir, *configs))
    moved = "moved: its record was written for {} (swapped, copied or moved here with its record)"
    assert found[K5] == moved.format(K10) and found[K10] == moved.format(K5)
    assert found[MODEL] == moved.format(other_model) and found[other_model] == moved.format(MODEL)
    assert found[FIXED] == f"stale: made from {MODEL}, which is not the config's"
    assert found[OTHER] == f"stale: made from {other_model}, which is not the config's"
    assert stale_to_snakemake(workdir, *configs) <= set(found)  # what Snakemake sees by the models' times


def test_a_same_size_edit_with_its_time_put_back_is_named(tree, restored):
    """Why 5: no digest is taken on trust from a record, whatever time the file holds."""
    workdir, configs = tree
    restored(FIXED)
    same_size_edit(workdir / FIXED)
    found = named(provenance(workdir, *configs))
    assert found[FIXED].startswith("changed since it was made") and found[SEQUENTIAL].startswith("stale: made from")
    assert stale_to_snakemake(workdir, *configs) == set()


def test_a_results_folder_that_is_no_tree_is_refused_in_one_line(tree, tmp_path):
    """Why 6: a misspelt or empty RESULTS is an error (exit 2), not a clean tree."""
    workdir, configs = tree
    (workdir / "empty").mkdir(exist_ok=True)
    for results, says in (("resutls", "resutls: no such folder"), ("empty", "empty: holds no provenance record")):
        result = provenance(workdir, *configs, results=results)
        assert result.returncode == 2 and result.stdout == "", result.stdout
        assert result.stderr.splitlines() == [result.stderr.strip()] and f"error: {says}" in result.stderr


def test_files_that_are_not_records_are_named_as_unknown_and_the_check_goes_on(tree, restored):
    """Why 6: each record that is no record is named, counted as unknown provenance, and every other
    output is still judged (a table of such a log is named as made from it)."""
    workdir, configs = tree
    restored(FIXED, OTHER, MONTE_CARLO)
    (workdir / f"{FIXED}{SUFFIX}").write_text("[]")
    document = json.loads((workdir / f"{OTHER}{SUFFIX}").read_text())
    (workdir / f"{OTHER}{SUFFIX}").write_text(json.dumps({**document, "inputs": list(document["inputs"])}))
    text = (workdir / f"{MONTE_CARLO}{SUFFIX}").read_text()
    truncated = text[: text.index('"identity": "') + 20]  # cut inside a string
    (workdir / f"{MONTE_CARLO}{SUFFIX}").write_text(truncated)
    result = provenance(workdir, *configs)
    found = named(result)
    assert found[f"{FIXED}{SUFFIX}"] == "not a provenance record: a JSON list, not an object"
    assert found[f"{OTHER}{SUFFIX}"] == "not a provenance record: a list as its 'inputs'"
    assert found[f"{MONTE_CARLO}{SUFFIX}"].startswith("not a provenance record: Unterminated string")
    assert found[SEQUENTIAL] == f"stale: made from {FIXED}, which is not the config's"
    assert "(3 of unknown provenance)" in result.stderr


def test_the_cost_benchmark_times_the_check_with_every_file_hashed_and_with_none(tree, tmp_path):
    """``benchmarks/provenance_cost.py`` on the tree: both sides name the same (nothing), and every
    file a record names (outputs and what their jobs read) is hashed once."""
    workdir, configs = tree
    out = tmp_path / "cost.json"
    command = [sys.executable, str(REPO / "benchmarks" / "provenance_cost.py"), "--tree", str(workdir)]
    command += ["--configfile", *map(str, configs), "--schema", str(REPO / "config" / "schema" / "config.schema.yaml")]
    result = subprocess.run([*command, "--repeats", "1", "--json", str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    figures = json.loads(out.read_text())["figures"]
    named_files = {
        workdir / path.relative_to(workdir).as_posix().removesuffix(SUFFIX) for path in workdir.rglob(f"*{SUFFIX}")
    }
    named_files |= {
        workdir / source for path in workdir.rglob(f"*{SUFFIX}") for source in json.loads(path.read_text())["inputs"]
    }
    assert figures["findings"] == 0 and figures["files"] == len(named_files) and figures["ratio"] > 0
