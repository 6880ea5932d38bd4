"""Which images a published log's ``idx`` number: its input order (``ddrs/published/input_orders.csv``).

An input set is its images, not its indices. Every log numbers its dataset's test set in its
repository's test-set order, ``idx`` 0 the first image of that order. Most repositories read the
test set in the dataset's standard order (:data:`STANDARD`; ImageNet: the validation images sorted
by class, as torchvision's ``ImageFolder`` lists them, label 0 at idx 0 — Cohen et al.'s, Jeong &
Shin's, Sun et al.'s and CAT-RS's logs). Salman et al.'s ImageNet logs use their own loader's
order, label 65 at idx 0 (``salman2019``): at the same idx they certify other images. The shipped
table names each log that does not use the standard order by dataset, repository and path prefix,
with a note saying how it is known; every other log is :data:`STANDARD`.

Logs are keyed by ``(order, idx)`` everywhere inputs are paired or ranked
(:mod:`ddrs.published.leaderboard`).

**The guard** (:func:`guard_order`) decides a log's order from its labels alone: a dataset read in
several orders ships each order's label at every idx its published logs certify
(``ddrs/published/order_labels.csv``, :data:`LABELS_PATH`, written by
``scripts/published_order_labels.py`` from the mirrors; ImageNet: label ``idx // 50`` in the standard
order, those their logs give in Salman et al.'s, 500 idx each, no label shared at one idx). A log is in
the order whose fingerprint its labels equal at every shared idx; the table above only declares, and a
declaration its labels contradict, a log that matches no order (a log of mixed orders), or an
undeclared log that matches several is refused. The guard never looks at the other logs being
checked: removing the order table, or narrowing a prefix, refuses logs instead of ranking two
orders together.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ddrs.errors import DDRSError
from ddrs.published.csv_table import read_checked_csv

#: the file shipped in the package
ORDERS_PATH = Path(__file__).with_name("input_orders.csv")
#: its columns, in order
COLUMNS = ("dataset", "repository", "path_prefix", "order", "note")
#: the order of a log the table does not name: the dataset's standard test order
STANDARD = "standard"
#: how titles name each order
DESCRIPTIONS = {
    STANDARD: "standard order",
    "salman2019": "Salman et al.'s ImageNet order (label 65 at idx 0)",
}


#: the shipped label fingerprints of the orders of every dataset read in several
LABELS_PATH = Path(__file__).with_name("order_labels.csv")
#: their columns, in order
LABEL_COLUMNS = ("dataset", "order", "idx", "label")
#: the fewest idx a log must share with an order's fingerprint, every label agreeing, to match it
MIN_SHARED = 10


class InputOrderError(DDRSError):
    """An input-order table is malformed, or a log's labels contradict its stated order."""


def describe(order: str) -> str:
    """How tables and figures name an input order."""
    return DESCRIPTIONS.get(order, f"{order} order")


@functools.lru_cache(maxsize=4)
def _read(path: str, mtime_ns: int) -> pd.DataFrame:
    frame = read_checked_csv(path, COLUMNS, "input-order CSV", InputOrderError)
    empty = (frame[["dataset", "repository", "order", "note"]] == "").any(axis=1)
    if empty.any():
        raise InputOrderError(
            f"{path}: line {int(np.argmax(empty)) + 2} leaves dataset, repository, order or note empty"
        )
    return frame


def read_orders(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The input-order table at ``path`` (default: the shipped one), checked (:data:`COLUMNS`)."""
    path = Path(path) if path is not None else ORDERS_PATH
    return _read(str(path), path.stat().st_mtime_ns if path.exists() else 0).copy()


def order_of(orders: pd.DataFrame, dataset: str, repository: str, path: str) -> str:
    """The input order of the log at ``repository:path`` of ``dataset``: the table's longest matching
    path prefix, else :data:`STANDARD`."""
    rows = orders[(orders["dataset"] == dataset) & (orders["repository"] == repository)]
    matching = [
        (len(prefix), order)
        for prefix, order in zip(rows["path_prefix"], rows["order"], strict=True)
        if path.startswith(prefix)
    ]
    return max(matching)[1] if matching else STANDARD


@functools.lru_cache(maxsize=4)
def _read_labels(path: str, mtime_ns: int) -> pd.DataFrame:
    frame = read_checked_csv(path, LABEL_COLUMNS, "order-label CSV", InputOrderError)
    for column in ("idx", "label"):
        numbers = pd.to_numeric(frame[column], errors="coerce")
        bad = numbers.isna() | (numbers != numbers.round())
        if bad.any():
            line = int(np.argmax(bad.to_numpy())) + 2
            raise InputOrderError(f"{path}: line {line}: {column} {frame[column].iloc[line - 2]!r} is not an integer")
        frame[column] = numbers.astype(np.int64)
    duplicated = frame.duplicated(["dataset", "order", "idx"])
    if duplicated.any():
        raise InputOrderError(
            f"{path}: line {int(np.argmax(duplicated.to_numpy())) + 2} repeats a (dataset, order, idx)"
        )
    return frame


def read_order_labels(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The label fingerprints at ``path`` (default: the shipped ones, :data:`LABELS_PATH`), checked:
    :data:`LABEL_COLUMNS`, integer idx and label, each (dataset, order, idx) once."""
    path = Path(path) if path is not None else LABELS_PATH
    return _read_labels(str(path), path.stat().st_mtime_ns if path.exists() else 0).copy()


def fingerprints(labels: pd.DataFrame, dataset: str) -> dict[str, pd.Series]:
    """``dataset``'s orders in the fingerprint table ``labels``: order → (idx → label)."""
    rows = labels[labels["dataset"] == dataset]
    return {order: group.set_index("idx")["label"] for order, group in rows.groupby("order", sort=True)}


def agreement(frame: pd.DataFrame, fingerprint: pd.Series) -> tuple[int, int]:
    """(idx of ``frame`` the ``fingerprint`` holds, at how many of them the labels agree)."""
    known = frame[frame["idx"].isin(fingerprint.index)]
    return len(known), int((known["label"].to_numpy() == fingerprint.loc[known["idx"]].to_numpy()).sum())


def guard_order(
    name: str,
    dataset: str,
    frame: pd.DataFrame,
    declared: str | None,
    declared_by: str,
    labels: pd.DataFrame | None = None,
) -> str:
    """The input order of the log ``name`` (rows ``frame`` of ``dataset``), decided by its labels alone.

    Where the fingerprint table ``labels`` (default: the shipped one, :data:`LABELS_PATH`) holds ``dataset``'s orders,
    the log matches an order when its labels agree with that order's at every idx both hold, at least
    :data:`MIN_SHARED`. The ``declared`` order (``None``: none declared) must be one it matches;
    undeclared, it takes the one order it matches. Refused, naming the log, what its labels agree
    with and ``declared_by`` (what declared its order): a declared order it does not match, a log that
    matches no order (another labelling, other idx, or a log of mixed orders), or several. A dataset
    without fingerprints is read in the standard order only, which its logs cannot contradict.
    """
    prints = fingerprints(read_order_labels() if labels is None else labels, dataset)
    if not prints:
        if declared not in (None, STANDARD):
            raise InputOrderError(
                f"{name}: {declared_by} puts it in the {declared!r} order, but {LABELS_PATH.name} holds no label "
                f"fingerprint of {dataset} to check it against: {dataset}'s logs are read in the {describe(STANDARD)}"
            )
        return STANDARD
    found = {order: agreement(frame, fingerprint) for order, fingerprint in prints.items()}
    matched = [order for order, (shared, agree) in found.items() if shared >= MIN_SHARED and agree == shared]
    if declared is not None and declared in matched:
        return declared
    if declared is None and len(matched) == 1:
        return matched[0]
    evidence = "; ".join(f"the {describe(order)}'s at {agree} of {shared}" for order, (shared, agree) in found.items())
    where = f"{name}: its labels agree with {evidence} shared idx"
    if declared is not None:
        told = f"{declared_by} puts it in the {describe(declared)}"
        fix = f": it numbers its inputs in the {matched[0]} order; correct {declared_by}" if matched else ""
        raise InputOrderError(f"{where}, but {told}{fix}")
    if matched:
        raise InputOrderError(f"{where}: it fits several orders; say which ({declared_by})")
    raise InputOrderError(
        f"{where}: it matches none of {dataset}'s {len(prints)} orders at every shared idx (at least "
        f"{MIN_SHARED}): a log of mixed orders, of other inputs, or of another labelling"
    )
