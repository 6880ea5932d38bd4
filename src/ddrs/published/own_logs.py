"""A user's own Cohen-format logs on a dataset's leaderboard (issue 41): checked value by value,
ranked among the published ones on the input set they certify, compared with the matched Gaussian
baseline and the best log of every family (:mod:`ddrs.published.gaussian_comparisons`).

A config names them as ``published_logs.own: {name: {dataset, sigma, path[, arch, family,
extra_data, n, alpha, order]}}``; ``ddrs logs rank --own NAME SIGMA PATH`` builds the same mapping
(:func:`own_specs`, which refuses a name given twice). Each becomes a leaderboard entry under
repository ``own`` and the name ``own:<name>``, its family its own name unless given. Both routes
go through :func:`own_entries`, and every check below refuses the log with an error naming the file
(and the row) and the defect.

**Settings** (:func:`check_spec`): σ in :data:`SIGMA_RANGE`; ``n``, when given, a whole number from 1
to :data:`LARGEST_N`; ``alpha`` in (0, 1) (default Cohen et al.'s 0.001).

**Values** (:func:`check_values`), after :func:`~ddrs.logs.certification_log.read_log` (the columns, a duplicate
``idx``, and ``idx``, ``label``, ``predict`` and ``correct`` whole numbers as written): radius
finite and ≥ 0; label one of the dataset's classes, predict one too or −1 (an abstention); correct
0 or 1 and equal to [predict == label]; an abstention with radius 0. Then the audit's rules of
:mod:`ddrs.published.audit` a row cannot show: a log of a header and no row, and a radius above
σ·Φ⁻¹(α^(1/n)), the largest its n and α allow (Cohen et al. 2019, §3.2.2). Where ``n`` is not
given that cap cannot be checked: a :class:`OwnLogWarning` names the log and the key to give.
``time`` is optional.

**Inputs.** Its order is decided by its labels (:func:`~ddrs.published.input_orders.guard_order`;
``order`` where given must agree). It is ranked only on a whole published input set: its ``idx``
must be exactly those of one input set its dataset's published logs certify in that order, with
their labels. A subset or a superset is refused with the count of inputs it lacks and holds beyond
the nearest set (a subset alone in its input set would be "rank 1" of nothing: :func:`check_inputs`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import numbers
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ddrs.data.registry import DATASETS
from ddrs.errors import DDRSError
from ddrs.logs.certification_log import read_log
from ddrs.published.audit import audit, flag_table, radius_bound
from ddrs.published.families import Family
from ddrs.published.input_orders import describe, guard_order
from ddrs.published.leaderboard import Entry, input_set, inputs_digest
from ddrs.published.log_registry import PublishedLog

#: the ``repository`` of a user's own log
OWN_REPOSITORY = "own"
#: α of a user's log whose config gives none: Cohen et al.'s CERTIFY default
DEFAULT_ALPHA = 0.001
#: the audit's flags that refuse a user's log beyond :func:`check_values` (its coverage of the test set is
#: checked by :func:`check_inputs`)
REFUSING = ("header_only", "impossible_radius")
#: the classes of the published logs' datasets that :mod:`ddrs.data` does not load
PUBLISHED_CLASSES = {"cifar100": 100, "fmnist": 10}
#: the largest n a certification could plausibly have spent on one input: 10¹⁰ draws, 10⁵ times Cohen
#: et al.'s n = 100,000, which took 15 s per CIFAR-10 input on their GPU (§4): 17 GPU-days per input.
#: Every n-draw certificate is at most σ·Φ⁻¹(α^(1/n)) (all n draws correct: Clopper–Pearson's p̲A = α^(1/n)),
#: which grows with n, so no log of any feasible n holds a radius above the cap at 10¹⁰: 6.06σ at α = 0.001
LARGEST_N = 10**10
#: the σ an own log may state, [0.01, 10]: the published logs certify at 0.12 to 1 on images in [0, 1];
#: below 0.01 the noise is under 3 levels of an 8-bit pixel, above 10 it is ten times the pixel range
SIGMA_RANGE = (0.01, 10.0)


class OwnLogError(DDRSError):
    """A user's own log fails a check, or does not line up with the dataset's published inputs."""


class OwnLogWarning(UserWarning):
    """A check of a user's own log could not be made (its n is not given)."""


def is_own_repository(repository: str) -> bool:
    return repository == OWN_REPOSITORY


def is_own(entry: Entry) -> bool:
    """Whether ``entry`` is a user's own log, not a published one."""
    return is_own_repository(entry.log.repository)


def own_specs(logs: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Mapping[str, Any]]:
    """``(name, spec)`` pairs as the config's mapping, refusing a name given twice (the second would
    silently replace the first)."""
    specs: dict[str, Mapping[str, Any]] = {}
    for name, spec in logs:
        if name in specs:
            raise OwnLogError(
                f"own log name {name!r} is given twice ({specs[name]['path']}, {spec['path']}): name each log once"
            )
        specs[name] = spec
    return specs


def dataset_classes(dataset: str) -> int:
    """How many classes ``dataset`` has (:mod:`ddrs.data`'s registry, else :data:`PUBLISHED_CLASSES`)."""
    if dataset in DATASETS:
        return DATASETS[dataset].num_classes
    if dataset in PUBLISHED_CLASSES:
        return PUBLISHED_CLASSES[dataset]
    known = sorted({*DATASETS, *PUBLISHED_CLASSES})
    raise OwnLogError(
        f"own logs of {dataset!r} cannot be checked: its classes are not known (known: {', '.join(known)})"
    )


def _number(value: Any) -> float | None:
    """``value`` as a float where it is a real number (not a bool), else None."""
    return float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else None


def check_spec(name: str, spec: Mapping[str, Any]) -> None:
    """Refuse an own log's settings that cannot be its certification's (module docstring), naming the log."""
    where = f"{spec['path']}: own log {name!r}"
    sigma, (low, high) = _number(spec["sigma"]), SIGMA_RANGE
    if sigma is None or not low <= sigma <= high:
        raise OwnLogError(f"{where}: σ {spec['sigma']!r} is not a number from {low:g} to {high:g} (a smoothing σ)")
    n = spec.get("n")
    if n is not None and (_number(n) is None or not float(n).is_integer() or not 1 <= n <= LARGEST_N):
        raise OwnLogError(
            f"{where}: n {n!r} is not a whole number from 1 to 10^10 (the Monte Carlo samples of CERTIFY; "
            "more than any certification could spend on one input)"
        )
    alpha = spec.get("alpha")
    if alpha is not None and (_number(alpha) is None or not 0 < alpha < 1):
        raise OwnLogError(f"{where}: alpha {alpha!r} is not in (0, 1)")


def check_values(name: str, path: Path, frame: pd.DataFrame, classes: int) -> None:
    """Refuse a log any of whose values is not what its column means (module docstring), naming the file,
    the first such data row (in file order) and the defect, with how many rows have it."""
    radius = frame["radius"].to_numpy(float)
    label, predict, correct = (frame[column].to_numpy() for column in ("label", "predict", "correct"))
    with np.errstate(invalid="ignore"):
        defects = (
            (~np.isfinite(radius), "radius {radius} is not a finite number"),
            (radius < 0, "radius {radius} is negative"),
            ((label < 0) | (label >= classes), f"label {{label}} is not a class (0 to {classes - 1})"),
            (
                (predict < -1) | (predict >= classes),
                f"predict {{predict}} is neither a class (0 to {classes - 1}) nor -1 (an abstention)",
            ),
            (~np.isin(correct, (0, 1)), "correct {correct} is not 0 or 1"),
            (correct != (predict == label), "correct {correct} with predict {predict} and label {label}"),
            ((predict == -1) & (radius > 0), "an abstention (predict -1) with radius {radius}"),
        )
    for bad, defect in defects:
        if bad.any():
            row = int(np.argmax(bad))
            values = {"radius": radius[row], "label": label[row], "predict": predict[row], "correct": correct[row]}
            raise OwnLogError(
                f"{path}: own log {name!r}, data row {row + 1} (idx {frame['idx'].iloc[row]}): "
                f"{defect.format(**values)} (rows with this defect: {int(bad.sum())})"
            )


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
    the finding; its radii against the cap of its n, or of :data:`LARGEST_N` (with a :class:`OwnLogWarning`)
    where its n is unknown."""
    if log.n is None:
        cap = radius_bound(log.sigma, LARGEST_N, log.alpha)
        warnings.warn(
            f"own log {name!r} ({path}): no n is given, so its radii are checked only against σ·Φ⁻¹(α^(1/n)) at "
            f"the largest plausible n, 10^10 ({cap:.3g}); give its n (published_logs.own.{name}.n, or ddrs logs "
            "rank --n) for the cap of its own certification",
            OwnLogWarning,
            stacklevel=3,
        )
    found = audit([dataclasses.replace(log, n=LARGEST_N) if log.n is None else log], [path])
    flags = flag_table(found).iloc[0]
    flagged = [flag for flag in REFUSING if flags[flag]]
    if flagged:
        findings = found["findings"].iloc[0]
        unknown = " (no n given: the cap at the largest plausible n, 10^10)" if log.n is None else ""
        raise OwnLogError(f"{path}: own log {name!r} fails the audit ({', '.join(flagged)}){unknown}: {findings}")


def checked_own_log(name: str, spec: Mapping[str, Any]) -> tuple[pd.DataFrame, PublishedLog]:
    """The own log ``name`` read and checked as far as it can be without the published logs (its
    settings, every value and the radius cap: module docstring), and its registry row."""
    check_spec(name, spec)
    path = Path(spec["path"])
    frame = read_log(path, require_time=False)
    check_values(name, path, frame, dataset_classes(spec["dataset"]))
    log = _registry_row(name, spec, spec["dataset"], path, len(frame))
    audit_own(name, log, path)
    return frame, log


def _labels(entries: Sequence[Entry]) -> pd.Series:
    """idx → the most common label among the ``entries``' logs at that idx."""
    rows = pd.concat([entry.frame[["idx", "label"]] for entry in entries], ignore_index=True)
    return rows.groupby("idx")["label"].agg(lambda labels: labels.mode().iloc[0])


def _examples(idx: np.ndarray) -> str:
    return f" (e.g. idx {', '.join(str(int(i)) for i in idx[:3])})" if len(idx) else ""


def check_inputs(
    name: str, path: Path, frame: pd.DataFrame, order: str, dataset: str, published: Sequence[Entry]
) -> None:
    """Refuse ``frame`` unless its ``idx`` are exactly one published input set's in ``order``, with the
    labels that set's logs give (their most common at each idx), naming the file, the nearest input set
    and the inputs it lacks and holds beyond it."""
    where = f"{path}: own log {name!r}"
    sets: dict[str, list[Entry]] = {}
    for entry in published:
        if not is_own(entry) and entry.order == order:
            sets.setdefault(entry.inputs_digest, []).append(entry)
    if not sets:
        raise OwnLogError(f"{where}: {dataset} has no published log in the {describe(order)} to rank it among")
    idx = np.sort(frame["idx"].to_numpy())
    members = sets.get(inputs_digest(idx, order))
    if members is None:
        nearest = max(sets.values(), key=lambda entries: np.isin(entries[0].idx, idx).sum())[0].idx
        lacks, beyond = np.setdiff1d(nearest, idx), np.setdiff1d(idx, nearest)
        raise OwnLogError(
            f"{where}: its {len(idx):,} inputs are not a published input set of {dataset}; the nearest, "
            f"{input_set(nearest, order)}, has {len(lacks):,} it lacks{_examples(lacks)} and it holds "
            f"{len(beyond):,} beyond it{_examples(beyond)}. Only a whole published input set is ranked"
        )
    labels = _labels(members)
    wrong = frame[frame["label"].to_numpy() != labels.loc[frame["idx"]].to_numpy()]
    if len(wrong):
        at = wrong.iloc[0]
        raise OwnLogError(
            f"{where}: {len(wrong)} of its {len(frame)} labels differ from {dataset}'s published logs of these inputs "
            f"in the {describe(order)}, e.g. idx {int(at['idx'])}: label {int(at['label'])}, published "
            f"{int(labels.loc[at['idx']])}"
        )


def own_entries(
    own: Mapping[str, Mapping[str, Any]],
    dataset: str,
    published: Sequence[Entry],
    order_labels: pd.DataFrame | None = None,
) -> list[Entry]:
    """The own logs of ``dataset`` (module docstring) as entries, each checked, its order decided by its
    labels (in the fingerprints ``order_labels``, default the shipped ones) and its inputs one of the
    ``published`` entries' input sets."""
    entries = []
    for name, spec in own.items():
        if spec["dataset"] != dataset:
            continue
        frame, log = checked_own_log(name, spec)
        path = Path(spec["path"])
        declared_by = f"published_logs.own.{name}.order (ddrs logs rank --order)"
        order = guard_order(f"{path} (own log {name!r})", dataset, frame, spec.get("order"), declared_by, order_labels)
        check_inputs(name, path, frame, order, dataset, published)
        frame = frame.sort_values("idx", kind="stable").reset_index(drop=True)
        family = Family(str(spec.get("family", name)), str(spec.get("extra_data", "")))
        entries.append(Entry(log, (f"{OWN_REPOSITORY}:{name}",), frame, family, order))
    return entries
