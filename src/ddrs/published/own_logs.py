"""A user's own Cohen-format logs on a dataset's leaderboard (issue 41): ranked among the published
logs, compared with the matched Gaussian baseline and the best log of every family
(:mod:`ddrs.published.gaussian_comparisons`).

A config names them as ``published_logs.own: {name: {dataset, sigma, path[, arch, family,
extra_data]}}``. Each becomes a leaderboard entry under repository ``own`` and the name ``own:<name>``,
its family its own name unless given. Its rows must be test inputs the dataset's published logs
certify, with the same labels there: a log of another test set, order or labelling could not be
paired with theirs, and is refused with an error naming the file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddrs.errors import DDRSError
from ddrs.jobs.logs import read_log
from ddrs.published.families import Family
from ddrs.published.leaderboard import Entry
from ddrs.published.registry import PublishedLog

#: the ``repository`` of a user's own log
OWN_REPOSITORY = "own"


class OwnLogError(DDRSError):
    """A user's own log does not line up with the dataset's published inputs."""


def is_own_repository(repository: str) -> bool:
    return repository == OWN_REPOSITORY


def is_own(entry: Entry) -> bool:
    """Whether ``entry`` is a user's own log, not a published one."""
    return is_own_repository(entry.log.repository)


def published_labels(entries: Sequence[Entry]) -> pd.Series:
    """The label of every test input the published ``entries`` certify (idx → label; where logs
    disagree, the most common, as the audit's ``label_conflicts`` takes it)."""
    published = [entry.frame[["idx", "label"]] for entry in entries if not is_own(entry)]
    if not published:
        raise OwnLogError("the dataset has no published log to place an own log among")
    rows = pd.concat(published, ignore_index=True)
    return rows.groupby("idx")["label"].agg(lambda labels: labels.mode().iloc[0])


def check_lines_up(frame: pd.DataFrame, labels: pd.Series, path: str | Path, dataset: str) -> None:
    """Refuse, naming ``path``, a log whose inputs are not the published ones or whose labels differ there."""
    idx = frame["idx"].to_numpy()
    unknown = idx[~np.isin(idx, labels.index.to_numpy())]
    if len(unknown):
        raise OwnLogError(
            f"{path}: {len(unknown)} of its {len(idx)} inputs are not among {dataset}'s published test inputs "
            f"(idx {labels.index.min()}–{labels.index.max()}), e.g. idx {int(unknown[0])}: is it a log of {dataset}'s "
            "test set?"
        )
    expected = labels.loc[idx].to_numpy()
    wrong = np.flatnonzero(frame["label"].to_numpy() != expected)
    if len(wrong):
        first = wrong[0]
        raise OwnLogError(
            f"{path}: {len(wrong)} of its {len(idx)} labels differ from {dataset}'s published logs at the same idx, "
            f"e.g. idx {int(idx[first])}: label {int(frame['label'].iloc[first])}, published {int(expected[first])}; "
            "its idx must number the test set in the published order (Cohen et al.'s)"
        )


def own_entries(own: Mapping[str, Mapping[str, Any]], dataset: str, published: Sequence[Entry]) -> list[Entry]:
    """The config's own logs of ``dataset`` (module docstring) as entries, each checked against the
    ``published`` entries' inputs and labels."""
    chosen = {name: spec for name, spec in own.items() if spec["dataset"] == dataset}
    if not chosen:
        return []
    labels = published_labels(published)
    entries = []
    for name, spec in chosen.items():
        path = Path(spec["path"])
        frame = read_log(path).sort_values("idx", kind="stable").reset_index(drop=True)
        check_lines_up(frame, labels, path, dataset)
        data = path.read_bytes()
        log = PublishedLog(
            repository=OWN_REPOSITORY,
            commit="",
            path=str(path),
            sha256=hashlib.sha256(data).hexdigest(),
            size=len(data),
            rows=len(frame),
            dataset=dataset,
            sigma=float(spec["sigma"]),
            arch=str(spec.get("arch", "")),
            run="",
            method_authors=name,
            method="own",
            noise=None,
            n=None,
            n0=None,
            alpha=None,
            skip=None,
            paper="own",
            table="",
            licence="",
            split="test",
        )
        family = Family(str(spec.get("family", name)), str(spec.get("extra_data", "")))
        entries.append(Entry(log, (f"{OWN_REPOSITORY}:{name}",), frame, family))
    return entries
