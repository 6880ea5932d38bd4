"""The shipped registry of published certification logs (ddrs.published.log_registry): its file contract and
selection. Its parse rules and regeneration from mirrors, the maintainers' tool, are tested in
test_published_registry_script.py."""

from __future__ import annotations

import csv
import re

import pytest

from ddrs.methods import METHODS
from ddrs.published.log_registry import (
    COLUMNS,
    EXTERNAL,
    REGISTRY_PATH,
    PublishedLog,
    RegistryFormatError,
    load_registry,
    published_logs,
    select,
)

REQUIRED = (
    "locuslab/smoothing",
    "jh-jeong/smoothing-consistency",
    "eth-sri/acr-weakness",
    "Hadisalman/smoothing-adversarial",
)


# --- the shipped registry -----------------------------------------------------------------------------


def test_shipped_registry_has_the_columns_in_order():
    with open(REGISTRY_PATH, newline="") as handle:
        assert tuple(next(csv.reader(handle))) == COLUMNS
    assert COLUMNS[:20] == tuple(
        (
            "repository,commit,path,sha256,size,rows,dataset,sigma,arch,run,method_authors,method,noise,n,n0,alpha,"
            "skip,paper,table,licence"
        ).split(",")
    )


def test_shipped_registry_rows_are_well_formed():
    registry = load_registry()
    assert not registry.duplicated(["repository", "path"]).any()
    assert registry["sha256"].str.fullmatch(r"[0-9a-f]{64}").all()
    assert registry["commit"].str.fullmatch(r"[0-9a-f]{40}").all()
    assert registry.groupby("repository")["commit"].nunique().eq(1).all()  # one pinned commit per repository
    assert set(registry["method"]) <= set(METHODS) | {EXTERNAL}
    assert (registry["size"] > 0).all() and (registry["rows"] >= 0).all()
    rows = registry[["repository", "path"]].apply(tuple, axis=1).tolist()
    assert rows == sorted(rows)


def test_shipped_registry_covers_the_required_repositories():
    counts = load_registry()["repository"].value_counts()
    for repository in REQUIRED:
        assert counts.get(repository, 0) > 0, repository
    assert counts["locuslab/smoothing"] == 13  # Cohen et al.'s data/certify


def test_cohen_imagenet_logs_are_selected_with_their_paper_and_url():
    logs = published_logs(paper="cohen2019", dataset="imagenet", table="Table 2")
    assert [log.sigma for log in logs] == [0.25, 0.5, 1.0]
    log = logs[1]
    assert isinstance(log, PublishedLog)
    assert log.path == "data/certify/imagenet/resnet50/noise_0.50/test/sigma_0.50"
    assert (log.method, log.noise, log.n, log.n0, log.alpha, log.skip) == ("cohen", 0.5, 100000, 100, 0.001, 100)
    assert log.url == f"https://raw.githubusercontent.com/locuslab/smoothing/{log.commit}/{log.path}"
    assert "Figure 14" in log.tables and log.licence == "none stated"


def test_select_by_several_values_and_sigma():
    registry = load_registry()
    both = select(registry, repository=["locuslab/smoothing", "eth-sri/acr-weakness"], sigma=[0.5], split="test")
    assert set(both["repository"]) == {"locuslab/smoothing", "eth-sri/acr-weakness"}
    assert (both["sigma"] == 0.5).all()
    assert select(registry, method="easy_focus", dataset="cifar10")["paper"].eq("sun2024").all()
    assert select(registry, dataset="no-such-dataset").empty


def test_a_malformed_registry_names_the_file_and_column(tmp_path):
    text = REGISTRY_PATH.read_text().splitlines()
    renamed = tmp_path / "renamed.csv"
    renamed.write_text("\n".join([text[0].replace(",sigma,", ",σ,"), *text[1:3]]) + "\n")
    with pytest.raises(RegistryFormatError, match=rf"{re.escape(str(renamed))}: column 'sigma' is missing"):
        load_registry(renamed)
    bad_hash = tmp_path / "bad_hash.csv"
    first = text[1].split(",")
    first[COLUMNS.index("sha256")] = "not-a-hash"
    bad_hash.write_text("\n".join([text[0], ",".join(first)]) + "\n")
    with pytest.raises(RegistryFormatError, match="column 'sha256' holds 'not-a-hash'"):
        load_registry(bad_hash)
    twice = tmp_path / "twice.csv"
    twice.write_text("\n".join([text[0], text[1], text[1]]) + "\n")
    with pytest.raises(RegistryFormatError, match="column 'path' lists .* twice"):
        load_registry(twice)
    with pytest.raises(RegistryFormatError, match="no registry there"):
        load_registry(tmp_path / "absent.csv")
