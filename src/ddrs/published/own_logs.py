"""A user's own Cohen-format logs on a dataset's leaderboard (issue 41): audited like the published
ones, ranked among them, compared with the matched Gaussian baseline and the best log of every family
(:mod:`ddrs.published.gaussian_comparisons`).

A config names them as ``published_logs.own: {name: {dataset, sigma, path[, arch, family,
extra_data, n, alpha, order]}}`` (``ddrs logs rank --own NAME SIGMA PATH`` the same). Each becomes
a leaderboard entry under repository ``own`` and the name ``own:<name>``, its family its own name
unless given.

**Audit** (:func:`audit_own`), the rules of :mod:`ddrs.published.audit`: a log that is not one
(a missing column, a duplicate ``idx``: :func:`~ddrs.jobs.logs.read_log`), holds a header and no
row, a negative radius, a ``correct`` other than 0 or 1 or other than ``predict == label``, an
abstention with a radius, or a radius above σ·Φ⁻¹(α^(1/n)), the largest its n and α allow (Cohen et
al. 2019, §3.2.2), is refused with an error naming the file. Where ``n`` is not given the radius
cap cannot be checked: a :class:`OwnLogWarning` names the log and the key to give (``alpha``
defaults to Cohen et al.'s 0.001). ``time`` is optional.

**Inputs.** Its rows must be test inputs the dataset's published logs certify, with the same labels
there, in one input order (:mod:`ddrs.published.input_orders`): ``order`` where given, else the one
whose published labels it agrees with at every idx. A log of another test set, order or labelling
could not be paired with theirs, and is refused with an error naming the file.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddrs.errors import DDRSError
from ddrs.jobs.logs import read_log
from ddrs.published.audit import audit, flag_table
from ddrs.published.families import Family
from ddrs.published.input_orders import describe, disagreements, order_labels
from ddrs.published.leaderboard import Entry
from ddrs.published.registry import PublishedLog

#: the ``repository`` of a user's own log
OWN_REPOSITORY = "own"
#: α of a user's log whose config gives none: Cohen et al.'s CERTIFY default
DEFAULT_ALPHA = 0.001
#: the audit's flags that refuse a user's log (its coverage of the test set is the user's choice)
REFUSING = (
    "header_only",
    "impossible_radius",
    "correct_mismatch",
    "correct_not_binary",
    "abstain_with_radius",
    "negative_radius",
)


class OwnLogError(DDRSError):
    """A user's own log fails the audit or does not line up with the dataset's published inputs."""


class OwnLogWarning(UserWarning):
    """A check of a user's own log could not be made (its n is not given)."""


def is_own_repository(repository: str) -> bool:
    return repository == OWN_REPOSITORY


def is_own(entry: Entry) -> bool:
    """Whether ``entry`` is a user's own log, not a published one."""
    return is_own_repository(entry.log.repository)


def _registry_row(name: str, spec: Mapping[str, Any], dataset: str, path: Path, rows: int) -> PublishedLog:
    data = path.read_bytes()
    n = spec.get("n")
    return PublishedLog(
        repository=OWN_REPOSITORY,
        commit="",
        path=str(path),
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        rows=rows,
        dataset=dataset,
        sigma=float(spec["sigma"]),
        arch=str(spec.get("arch", "")),
        run="",
        method_authors=name,
        method="own",
        noise=None,
        n=None if n is None else int(n),
        n0=None,
        alpha=float(spec.get("alpha", DEFAULT_ALPHA)),
        skip=None,
        paper="own",
        table="",
        licence="",
        split="test",
    )


def audit_own(name: str, log: PublishedLog, path: Path) -> None:
    """Refuse ``log`` (at ``path``) where the audit finds a defect of :data:`REFUSING`, naming the file and
    the finding; warn (:class:`OwnLogWarning`) where its n is unknown."""
    found = audit([log], [path])
    flags = flag_table(found).iloc[0]
    flagged = [flag for flag in REFUSING if flags[flag]]
    if flagged:
        findings = found["findings"].iloc[0]
        raise OwnLogError(f"{path}: own log {name!r} fails the audit ({', '.join(flagged)}): {findings}")
    if log.n is None:
        warnings.warn(
            f"own log {name!r} ({path}): its radii are not checked against σ·Φ⁻¹(α^(1/n)), the largest its "
            f"certification could give: no n is given (published_logs.own.{name}.n, or ddrs logs rank --n)",
            OwnLogWarning,
            stacklevel=3,
        )


def published_labels(entries: Sequence[Entry]) -> dict[str, pd.Series]:
    """Per input order, the label of every test input the published ``entries`` of that order certify
    (idx → label; where logs disagree, the most common, as the audit's ``label_conflicts`` takes it)."""
    by_order: dict[str, list[pd.DataFrame]] = {}
    for entry in entries:
        if not is_own(entry):
            by_order.setdefault(entry.order, []).append(entry.frame)
    if not by_order:
        raise OwnLogError("the dataset has no published log to place an own log among")
    return {order: order_labels(frames) for order, frames in by_order.items()}


def lined_up_order(frame: pd.DataFrame, labels: dict[str, pd.Series], path, dataset: str, order: str | None) -> str:
    """The input order ``frame``'s rows line up with (``order`` where given): every idx published in it,
    with the same label. Refused, naming ``path``, where none does."""
    candidates = [order] if order is not None else list(labels)
    if order is not None and order not in labels:
        raise OwnLogError(f"{path}: order {order!r} is not one of {dataset}'s published orders ({', '.join(labels)})")
    problems = []
    for candidate in candidates:
        published = labels[candidate]
        idx = frame["idx"].to_numpy()
        unknown = idx[~np.isin(idx, published.index.to_numpy())]
        if len(unknown):
            problems.append(
                f"{len(unknown)} of its {len(idx)} inputs are not among {dataset}'s published test inputs in the "
                f"{describe(candidate)} (idx {published.index.min()}–{published.index.max()}), e.g. idx "
                f"{int(unknown[0])}"
            )
            continue
        _, wrong = disagreements(frame, published)
        if wrong:
            at = frame[frame["label"].to_numpy() != published.loc[frame["idx"]].to_numpy()].iloc[0]
            problems.append(
                f"{wrong} of its {len(idx)} labels differ from {dataset}'s published logs in the {describe(candidate)} "
                f"at the same idx, e.g. idx {int(at['idx'])}: label {int(at['label'])}, published "
                f"{int(published.loc[at['idx']])}"
            )
            continue
        return candidate
    raise OwnLogError(
        f"{path}: " + "; ".join(problems) + f". Its idx must number {dataset}'s test set in a published order "
        "(is it a log of this dataset's test set?)"
    )


def own_entries(own: Mapping[str, Mapping[str, Any]], dataset: str, published: Sequence[Entry]) -> list[Entry]:
    """The config's own logs of ``dataset`` (module docstring) as entries, each audited and checked
    against the ``published`` entries' inputs and labels."""
    chosen = {name: spec for name, spec in own.items() if spec["dataset"] == dataset}
    if not chosen:
        return []
    labels = published_labels(published)
    entries = []
    for name, spec in chosen.items():
        path = Path(spec["path"])
        frame = read_log(path, require_time=False).sort_values("idx", kind="stable").reset_index(drop=True)
        order = lined_up_order(frame, labels, path, dataset, spec.get("order"))
        log = _registry_row(name, spec, dataset, path, len(frame))
        audit_own(name, log, path)
        family = Family(str(spec.get("family", name)), str(spec.get("extra_data", "")))
        entries.append(Entry(log, (f"{OWN_REPOSITORY}:{name}",), frame, family, order))
    return entries
