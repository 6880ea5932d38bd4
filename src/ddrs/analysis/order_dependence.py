"""Order dependence of DDRS's memory (issue 69): Algorithm 3 (DDRS §3.5, Appendix C) over a data-dependent
log's certificates in ``idx`` order, against seeded random orders of the same inputs.

Algorithm 3 adjusts a certificate only against the regions stored before it, so its result can depend on the
order the inputs arrive in (the paper's limitations note it, Appendix G); with no two regions of different
predictions intersecting, no order changes anything. Per log: how many certificates some order changes (class or
radius), how many change class, and by how much radii move. The test inputs alone are ordered here; the points an
attacker sends (:mod:`ddrs.jobs.audit`) would join the same stream, where they may change what follows them. No
torch: the inputs come through :func:`ddrs.data.load_images`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ddrs.analysis.log_record import LogRecord
from ddrs.core.memory import NORM_OF_NOISE, memory_certify
from ddrs.core.seeds import StudyStream, derived_seed
from ddrs.data import load_images, load_labels
from ddrs.logs.certification_log import read_log


def in_order(points: np.ndarray, predict: np.ndarray, radius: np.ndarray, order: np.ndarray, norm: int):
    """Algorithm 3's predictions and radii with the inputs arriving in ``order``, given back in the inputs'
    own order."""
    result = memory_certify(points[order], predict[order], radius[order], norm)
    predicted, radii = np.empty_like(result.predict), np.empty_like(result.radius)
    predicted[order], radii[order] = result.predict, result.radius
    return predicted, radii


def order_row(points: np.ndarray, log: pd.DataFrame, orders: int, seed: int) -> dict:
    """What ``orders`` seeded orders change against ``idx`` order, for one log's certificates."""
    predict, radius = log["predict"].to_numpy(), log["radius"].to_numpy(dtype=np.float64)
    norm = NORM_OF_NOISE["gaussian"]
    reference = in_order(points, predict, radius, np.arange(len(log)), norm)
    changed, classes, moves = [], [], []
    for order in range(orders):
        permutation = np.random.default_rng(derived_seed(seed, StudyStream.ORDER, order)).permutation(len(log))
        predicted, radii = in_order(points, predict, radius, permutation, norm)
        move = np.abs(radii - reference[1])
        changed.append(int(((predicted != reference[0]) | (move > 0)).sum()))
        classes.append(int((predicted != reference[0]).sum()))
        moves.append(move[move > 0])
    moved = np.concatenate(moves)
    return {
        "inputs": len(log), "orders": orders, "changed_max": max(changed), "changed_mean": float(np.mean(changed)),
        "classes_changed_max": max(classes), "radius_change_max": float(moved.max()) if len(moved) else 0.0,
        "radius_change_mean": float(moved.mean()) if len(moved) else 0.0,
    }  # fmt: skip


def order_dependence_table(
    records: Sequence[LogRecord],
    logs: Sequence[str | os.PathLike],
    *,
    dataset: str,
    data_root: str,
    seed: int,
    orders: int,
) -> pd.DataFrame:
    """One row per data-dependent log (``logs``: before Algorithm 3, one per record) of ``dataset``'s test
    split (``seed``'s), run through Algorithm 3 in ``idx`` order and in ``orders`` seeded random orders."""
    if len(records) != len(logs):
        raise ValueError(f"{len(records)} records but {len(logs)} logs")
    images, labels = (
        load_images(dataset, "test", root=data_root, seed=seed),
        load_labels(dataset, "test", data_root, seed),
    )
    rows = []
    for record, path in zip(records, logs, strict=True):
        log = read_log(path).sort_values("idx", kind="stable").reset_index(drop=True)
        if (labels[log["idx"].to_numpy()] != log["label"].to_numpy()).any():
            raise ValueError(f"{path}: its labels are not {dataset}'s test split of seed {seed}: another split")
        points = np.stack([np.asarray(images[int(idx)]) for idx in log["idx"]])
        keys = {"dataset": record.dataset, "variant": record.name, "sigma0": record.sigma0, "K": record.K}
        rows.append(keys | order_row(points, log, orders, seed))
    table = pd.DataFrame(rows)
    table["K"] = table["K"].astype("Int64")
    return table
