"""The published-logs config as a workflow, offline: a git repository built here stands for a published
one (its mirror), a registry CSV built here for the shipped one, and a transcription of one printed
table for the seed papers'. A dry run schedules one fetch job per repository and every table and
figure; a real run builds them from the mirror, each number traceable to a log."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from published_helpers import (
    REPOSITORY,
    gaussian_like,
    git_repository,
    log_text,
    registry_row,
    scaled_radii,
    write_families,
    write_registry,
)
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate
from workflow_helpers import REPO, job_counts, load_config, snakemake, write_config

from ddrs.analysis.metrics import acr, certified_accuracy
from ddrs.logs.certification_log import read_log
from ddrs.pipeline import Experiment
from ddrs.published.paper_tables import MAPPING_COLUMNS, TRANSCRIPTION_COLUMNS

N = 300
PAPER, TABLE = "someone2024", "Table 1"
RADII = [0.0, 0.25, 0.5]


def world(tmp_path) -> dict:
    """Three logs in a git repository (Gaussian and a stronger method at σ = 0.5, one header-only),
    their registry, one printed table with two cells right and one wrong, and the config."""
    gaussian = log_text(*gaussian_like(N, 0.5, 0.6, 2.0, seed=1))
    strong = log_text(*gaussian_like(N, 0.5, 0.9, 3.0, seed=2))
    header_only = "idx\tlabel\tpredict\tradius\tcorrect\ttime\n"
    files = {"data/gaussian_0.5": gaussian, "data/strong_0.5": strong, "data/empty_0.5": header_only}
    mirror = tmp_path / "mirror"
    commit = git_repository(mirror, files)
    rows = [
        registry_row("data/gaussian_0.5", gaussian, commit=commit),
        registry_row("data/strong_0.5", strong, commit=commit, method_authors="strong", method="external"),
        registry_row("data/empty_0.5", header_only, commit=commit, method_authors="empty", method="external"),
    ]
    registry = write_registry(tmp_path / "registry.csv", rows)
    families = write_families(
        tmp_path / "families.csv", rows, {"gaussian": "Gaussian", "strong": "Strong", "empty": "Empty"}
    )
    (tmp_path / "mine.tsv").write_text(log_text(*gaussian_like(N, 0.5, 0.95, 3.5, seed=3)))  # a user's own log
    (tmp_path / "log.tsv").write_text(gaussian)
    log = read_log(tmp_path / "log.tsv")
    exact_accuracy = 100 * float(certified_accuracy(log, [0.0]).iloc[0])
    wrong = 100 * float(certified_accuracy(log, [0.25]).iloc[0]) + 5  # a printed cell the log cannot give
    cells = [
        ("0.0", "certified_accuracy", f"{exact_accuracy:.1f}", "percent"),
        ("0.25", "certified_accuracy", f"{wrong:.1f}", "percent"),
        ("", "ACR", f"{acr(log):.3f}", "radius"),
    ]
    printed = pd.DataFrame(
        [
            {
                "paper": PAPER,
                "table": TABLE,
                "dataset": "cifar10",
                "row": "Gaussian",
                "sigma": "0.50",
                "radius": radius,
                "metric": metric,
                "value": text,
                "printed": text,
                "unit": unit,
                "source": "someone2024, Table 1, row Gaussian (built by the test)",
            }
            for radius, metric, text, unit in cells
        ],
        columns=list(TRANSCRIPTION_COLUMNS),
    )
    printed.to_csv(tmp_path / "printed.csv", index=False)
    mapping = pd.DataFrame(
        [[PAPER, TABLE, "Gaussian", "0.50", "single", "primary", REPOSITORY, "data/gaussian_0.5", "0.50", "the test"]],
        columns=list(MAPPING_COLUMNS),
    )
    mapping.to_csv(tmp_path / "mapping.csv", index=False)
    config = load_config("published.yaml")
    config["published_logs"] = {
        "registry": str(registry),
        "transcription": str(tmp_path / "printed.csv"),
        "mapping": str(tmp_path / "mapping.csv"),
        "cache": "cache",
        "offline": True,
        "mirrors": {REPOSITORY: str(mirror / ".git")},
        "leaderboards": {"cifar10": RADII},
        "families": str(families),
        "own": {
            "mine": {
                "dataset": "cifar10",
                "sigma": 0.5,
                "path": str(tmp_path / "mine.tsv"),
                "arch": "resnet110",
                "n": 100_000,
            }
        },
    }
    config["statistics"] = {"n_boot": 200}
    return {"config": write_config(tmp_path, config), "commit": commit}


def test_a_published_only_config_needs_no_datasets_and_others_still_do():
    schema = str(REPO / "config" / "schema" / "config.schema.yaml")
    config = {"published_logs": {"leaderboards": {"cifar10": None}}}
    validate(config, schema, set_default=True)
    section = config["published_logs"]
    assert (section["mirrors"], section["offline"], section["own"]) == ({}, False, {})
    experiment = Experiment(config)
    assert experiment.grid.datasets == {} and experiment.grid.methods == []
    assert experiment.published.repositories()[0] == "Hadisalman/smoothing-adversarial"
    assert experiment.published.cache == "results/published/cache"
    assert Experiment(load_config("digits.yaml")).published is None
    with pytest.raises(WorkflowError, match="datasets"):
        validate({"results": "results"}, schema, set_default=True)


PUBLISHED_RULES = {
    "fetch_published_logs": 1,  # one job per repository, not per log
    "published_dataset_logs": 1,  # a leaderboard dataset's logs read once for its jobs
    "published_logs_audit": 1,
    "published_seed_table": 1,
    "published_seed_verdicts": 1,
    "published_leaderboard": 1,
    "published_vs_gaussian": 1,
    "published_replication": 1,
    "published_headline": 1,
    "published_margin_figure": 1,
    "published_curves_figure": 1,
    "published_pa_figure": 1,
}


def test_the_published_config_schedules_one_fetch_per_repository_and_every_table(tmp_path):
    made = world(tmp_path)
    result = snakemake(tmp_path, "-n", config=made["config"])
    assert result.returncode == 0, result.stderr
    counts = job_counts(result.stdout + result.stderr)
    assert counts == {**PUBLISHED_RULES, "all": 1, "total": sum(PUBLISHED_RULES.values()) + 1}


def test_the_shipped_published_config_dry_runs_every_repository_and_table(tmp_path):
    shipped = load_config("published.yaml")
    result = snakemake(tmp_path, "-n", config=write_config(tmp_path, shipped))
    assert result.returncode == 0, result.stderr
    counts = job_counts(result.stdout + result.stderr)
    assert counts["fetch_published_logs"] == 6  # the registry's six repositories
    assert counts["published_seed_table"] == 7  # Cohen Tables 1-3, Jeong & Shin's three, Sun Table 2
    assert counts["published_logs_audit"] == counts["published_seed_verdicts"] == 1
    boards = len(shipped["published_logs"]["leaderboards"])
    assert counts["published_leaderboard"] == counts["published_vs_gaussian"] == counts["published_headline"] == boards
    assert counts["published_replication"] == counts["published_margin_figure"] == boards
    assert counts["published_curves_figure"] == counts["published_pa_figure"] == boards
    assert counts["published_dataset_logs"] == boards
    assert not {"train", "certify_fixed", "prepare_data"} & set(counts)


@pytest.mark.e2e
def test_the_published_config_builds_every_table_from_a_mirror(tmp_path):
    made = world(tmp_path)
    result = snakemake(tmp_path, "--cores", "2", config=made["config"])
    assert result.returncode == 0, result.stderr
    cached = tmp_path / "cache" / REPOSITORY / made["commit"] / "data" / "strong_0.5"
    assert cached.is_file()  # <cache>/<repository>/<commit>/<path>
    tables = tmp_path / "results_published" / "tables"
    audit = pd.read_csv(tables / "published_logs_audit.csv")
    assert len(audit) == 3
    assert audit.set_index("path").loc["data/empty_0.5", "header_only"]
    diff = pd.read_csv(tables / "published_someone2024_table_1.csv", dtype={"radius": str})
    assert diff.set_index("radius")["verdict"].to_dict() == {"0.0": "exact", "0.25": "mismatch", np.nan: "exact"}
    verdicts = pd.read_csv(tables / "published_seed_verdicts.csv").set_index("paper")
    assert verdicts.loc[PAPER, ["exact", "mismatch", "cells"]].tolist() == [2, 1, 3]
    assert "r=0.25: printed" in verdicts.loc[PAPER, "mismatched"]
    board = pd.read_csv(tables / "published_leaderboard_cifar10.csv")
    assert set(board["method"]) == {"gaussian", "strong", "mine"}  # the header-only log holds no result
    assert board.loc[board["method"] == "mine", "rank"].iloc[0] == 1  # the user's own log, ranked among them
    versus = pd.read_csv(tables / "published_vs_gaussian_cifar10.csv", keep_default_na=False)
    strong = versus[versus["method"] == "strong"].iloc[0]
    assert strong["baseline"] == f"{REPOSITORY}:data/gaussian_0.5"
    assert "ACR" in strong["better_at"].split()
    mine = versus[versus["method"] == "mine"].set_index("against")
    assert (
        mine.loc["Gaussian", "baseline"] == mine.loc["best Gaussian", "baseline"] == f"{REPOSITORY}:data/gaussian_0.5"
    )
    assert mine.loc["best Strong", "baseline"] == f"{REPOSITORY}:data/strong_0.5"
    assert float(mine.loc["best Strong", "ACR"]) > 0 and 0 < float(mine.loc["best Strong", "ACR_p_holm"]) <= 1
    headline = pd.read_csv(tables / "published_headline_cifar10.csv")
    assert headline[["against", "logs", "family", "compared", "better_ACR"]].values.tolist() == [
        ["Gaussian", "all", "all", 1, 1],
        ["Gaussian", "all", "Strong", 1, 1],  # one row per family
    ]
    assert "**" in (tables / "published_vs_gaussian_cifar10.md").read_text()  # significant cells in bold
    figures = tmp_path / "results_published" / "figures"
    replication = pd.read_csv(tables / "published_replication_cifar10.csv")
    assert replication["note"].tolist() == ["no replication data"]  # one log per method and σ: no runs
    assert (headline["run_margin"] == "no replication data").all()
    for name in ("published_curves_cifar10", "published_pa_cifar10", "published_margin_cifar10"):
        assert (figures / f"{name}.png").stat().st_size > 0 and (figures / f"{name}.pdf").is_file()
    again = snakemake(tmp_path, "-n", config=made["config"])
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.parametrize("name", ["published_logs_audit", "published_seed_verdicts"])
def test_a_published_table_asked_of_a_config_without_published_logs_says_what_builds_it(name):
    from ddrs.pipeline.catalogue import CATALOGUE

    exp = Experiment(load_config("digits.yaml"))
    with pytest.raises(ValueError, match=f"{name} tabulates published logs: it needs a published_logs section"):
        CATALOGUE[name].inputs(exp, {})


def test_a_missing_own_log_stops_the_dag_naming_its_config_path(tmp_path):
    """A user's own log that has gone away: Snakemake would keep the leaderboard built from it
    ("Nothing to be done"); the DAG stops first, in a few lines naming the config key."""
    config = load_config("published.yaml")
    board = next(iter(config["published_logs"]["leaderboards"]))
    config["published_logs"]["own"] = {"mine": {"dataset": board, "sigma": 0.5, "path": "gone/mine.tsv"}}
    result = snakemake(tmp_path, "-n", config=write_config(tmp_path, config))
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "Your own logs named in the config are missing" in output, output
    message = output[output.index("Your own logs named in the config are missing") :].strip()
    assert message.splitlines()[1] == "  published_logs.own.mine.path: gone/mine.tsv"
    assert len(message.splitlines()) <= 5


def _own_log(made: dict, **spec) -> Path:
    """The world's config with its own log ``mine`` given ``spec`` (a key set to None is left out)."""
    config = yaml.safe_load(made["config"].read_text())
    mine = config["published_logs"]["own"]["mine"]
    mine.update(spec)
    config["published_logs"]["own"]["mine"] = {key: value for key, value in mine.items() if value is not None}
    return write_config(made["config"].parent, config, "own.yaml")


@pytest.mark.parametrize("case", ["radius_x1000", "radius_1e308", "sigma_1e-300"])
def test_an_own_log_no_certificate_could_give_is_refused_before_any_job_in_a_line(tmp_path, case):
    """Without n, the radius cap is that of the largest plausible n (10^10); σ has a range. The
    refusal is Snakemake's whole output, naming the config key, the file and the defect."""
    made, mine = world(tmp_path), tmp_path / "mine.tsv"
    sound = mine.read_text()
    if case == "radius_x1000":
        mine.write_text(scaled_radii(sound, 1000.0))
    elif case == "radius_1e308":
        first = sound.split("\n")[1].split("\t")
        mine.write_text(sound.replace("\t".join(first), "\t".join([*first[:3], "1e308", "1", *first[5:]]), 1))
    config = _own_log(made, n=None, sigma=1e-300 if case == "sigma_1e-300" else 0.5)
    result = snakemake(tmp_path, "-n", config=config)
    output = (result.stdout + result.stderr).strip().splitlines()
    assert result.returncode == 1 and len(output) <= 5, output
    assert output[0].startswith(f"published_logs.own.mine is refused: {mine}: own log 'mine'"), output
    defect = "σ 1e-300 is not a number from 0.01 to 10" if case == "sigma_1e-300" else "impossible_radius"
    assert defect in output[0], output
    assert case == "sigma_1e-300" or "the largest CERTIFY gives at σ = 0.5 with n = 10,000,000,000" in output[0]


def test_an_own_log_without_n_is_warned_of_on_the_terminal(tmp_path):
    made = world(tmp_path)
    result = snakemake(tmp_path, "-n", config=_own_log(made, n=None))
    assert result.returncode == 0, result.stderr
    assert f"own log 'mine' ({tmp_path / 'mine.tsv'}): no n is given" in result.stdout + result.stderr


def test_the_leaderboard_reads_the_chosen_repositories_and_a_job_refusal_reaches_the_terminal(tmp_path):
    """``published_logs.repositories`` limits the leaderboard's logs to the chosen ones (another
    repository of the registry, not fetched, is not read); an own log whose inputs are no published
    input set is refused by its job, its one line on the terminal."""
    from ddrs.published.leaderboard import read_entries

    made = world(tmp_path)
    other = log_text(*gaussian_like(N, 0.5, 0.7, 2.0, seed=5))
    commit = git_repository(tmp_path / "other", {"data/gaussian_0.5": other})
    extra = registry_row("data/gaussian_0.5", other, commit=commit, repository="other/smoothing")
    registry = pd.concat([pd.read_csv(tmp_path / "registry.csv", dtype=str), pd.DataFrame([extra], dtype=str)])
    registry.to_csv(tmp_path / "registry.csv", index=False)
    families = pd.read_csv(tmp_path / "families.csv", dtype=str, keep_default_na=False)
    families.loc[len(families)] = ["other/smoothing", "gaussian", "Gaussian", ""]
    families.to_csv(tmp_path / "families.csv", index=False)
    config = yaml.safe_load(made["config"].read_text())
    config["published_logs"] |= {
        "repositories": [REPOSITORY],
        "mirrors": {REPOSITORY: str(tmp_path / "mirror" / ".git")},
    }
    entries = "results_published/published/logs/cifar10.npz"
    sound = (tmp_path / "mine.tsv").read_text()
    (tmp_path / "mine.tsv").write_text("".join(sound.splitlines(keepends=True)[: N // 2 + 1]))  # half its inputs
    refused = snakemake(tmp_path, "--cores", "1", entries, config=write_config(tmp_path, config))
    assert refused.returncode != 0
    assert f"ddrs build: error: {tmp_path / 'mine.tsv'}: own log 'mine': its 150 inputs are not" in refused.stderr
    (tmp_path / "mine.tsv").write_text(sound)
    built = snakemake(tmp_path, "--cores", "1", entries, config=write_config(tmp_path, config))
    assert built.returncode == 0, built.stderr
    read = read_entries(tmp_path / entries)
    assert {entry.log.repository for entry in read} == {REPOSITORY, "own"}
