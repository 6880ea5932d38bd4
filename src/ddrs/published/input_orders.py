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
(:mod:`ddrs.published.leaderboard`), and the registry's orders are checked against the logs' labels
(:func:`check_orders`): a log whose labels contradict its order's and agree with another order's is
refused, naming the table to correct.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
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


def order_labels(frames: Sequence[pd.DataFrame]) -> pd.Series:
    """idx → the most common label among ``frames`` (logs of one order) at that idx."""
    rows = pd.concat([frame[["idx", "label"]] for frame in frames], ignore_index=True)
    return rows.groupby("idx")["label"].agg(lambda labels: labels.mode().iloc[0])


def disagreements(frame: pd.DataFrame, labels: pd.Series) -> tuple[int, int]:
    """(rows of ``frame`` at an idx ``labels`` has, of those how many give another label)."""
    known = frame[frame["idx"].isin(labels.index)]
    return len(known), int((known["label"].to_numpy() != labels.loc[known["idx"]].to_numpy()).sum())


def check_orders(logs: Sequence[tuple[str, str, pd.DataFrame]]) -> None:
    """Refuse a log whose labels contradict its stated order's and agree with another order's.

    ``logs``: (name, order, frame) of one dataset. Each order's labels are its logs' majority per idx
    (:func:`order_labels`); a log disagreeing with its own order at some idx, and agreeing at every
    shared idx with another order's (at least ten), is in the wrong order: the error names it, both
    orders and the table to correct. Scattered label conflicts within one order are the audit's
    ``label_conflicts``, not an order error.
    """
    by_order: dict[str, list[pd.DataFrame]] = {}
    for _, order, frame in logs:
        by_order.setdefault(order, []).append(frame)
    labels = {order: order_labels(frames) for order, frames in by_order.items()}
    for name, order, frame in logs:
        _, wrong = disagreements(frame, labels[order])
        if not wrong:
            continue
        for other, other_labels in labels.items():
            shared, other_wrong = disagreements(frame, other_labels)
            if other != order and shared >= 10 and other_wrong == 0:
                raise InputOrderError(
                    f"{name}: its labels differ from the {describe(order)} logs' at {wrong} idx and agree with "
                    f"the {describe(other)} logs' at all {shared} shared idx: it numbers its inputs in the "
                    f"{other} order; correct its row in {ORDERS_PATH}"
                )
