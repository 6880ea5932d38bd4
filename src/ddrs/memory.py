"""Memory-based certification (DDRS §3.5, Appendix C, Algorithm 3, Figure 2).

The test stream is processed in ``idx`` order; every certified input is stored as (x, prediction,
radius). A stored input j claims that the memory classifier predicts p_j on its region
S_j = {x_j} ∪ B(x_j, r_j), where B is the *open* ℓ2 (Gaussian) or ℓ1 (uniform) ball — Cohen et
al.'s certificate holds for ‖δ‖ < R, so regions that only touch on their boundary do not overlap.
A new input x with prediction p and radius r is adjusted so that no two stored regions with
different predictions intersect:

* ``moved_in`` (LargestInSubset, Figure 2 middle): x lies in S_j of a different prediction. By the
  invariant all such regions share one prediction p_j; x takes p_j and the largest ball around x
  inside B(x, r) ∩ B(x_j, r_j): radius min(r, r_j − ‖x − x_j‖), best over those j. This ball lies
  inside a stored region, which already avoids every region of another prediction, so no further
  pass is needed.
* ``shrunk`` (LargestOutSubset, Figure 2 right): otherwise, for every stored j of a different
  prediction with ‖x − x_j‖ < r + r_j, the radius becomes min(r, ‖x − x_j‖ − r_j). The prediction
  is unchanged, so one pass over the memory reaches the fixed point.
* ``kept`` (Figure 2 left): nothing to do.

Abstentions (prediction −1, radius 0) are stored too: the memory classifier abstains at that
point, so a later ball containing it must shrink, and an abstaining input inside a stored region
takes that region's prediction (radius min(0, ·) = 0) — otherwise the stored certificate would be
violated at that point. Radii never increase.

Distances are found in two vectorised stages: a float32 Gram-matrix pass over row blocks of the
lower triangle keeps only pairs whose ℓ2 distance could be below r_i + r_j (‖·‖₂ ≤ ‖·‖₁, so this
prunes ℓ1 too, with a conservative rounding slack), then exact float64 distances of those pairs
in the certificate's norm decide.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from ddrs.io import atomic_path
from ddrs.logs import read_log

ACTIONS = ("kept", "moved_in", "shrunk")
#: relative slack on squared distances for float32 Gram-matrix rounding (its error is ≲ 1e-6 of ‖a‖²+‖b‖²)
GRAM_SLACK = 1e-4
NORM_OF_NOISE = {"gaussian": 2, "uniform": 1}


@dataclass(frozen=True)
class MemoryResult:
    """Algorithm 3's output per stream position: new prediction and radius, what changed, old radius."""

    predict: Tensor
    radius: Tensor
    action: list[str]
    radius_before: Tensor

    def counts(self) -> dict[str, int]:
        """How many rows were kept, moved into a region, or shrunk away from one."""
        tally = Counter(self.action)
        return {action: tally[action] for action in ACTIONS}


def candidate_pairs(points: Tensor, radius: Tensor, *, block: int = 1024) -> tuple[Tensor, Tensor]:
    """Pairs (i, j), j < i, whose balls could intersect: ‖x_i − x_j‖₂ < r_i + r_j up to rounding slack.

    A superset of the pairs Algorithm 3 must look at (radii only shrink, and ‖·‖₂ ≤ ‖·‖₁), found
    from float32 Gram blocks of the lower triangle, never a Python loop over pairs.
    """
    flat = points.reshape(len(points), -1).float()
    sq_norms = (flat * flat).sum(dim=1)
    radius = radius.float()
    rows, cols = [], []
    for start in range(0, len(flat), block):
        stop = min(start + block, len(flat))
        gram = flat[start:stop] @ flat[:stop].T
        sq_dist = sq_norms[start:stop, None] + sq_norms[None, :stop] - 2 * gram
        reach = radius[start:stop, None] + radius[None, :stop]
        slack = GRAM_SLACK * (sq_norms[start:stop, None] + sq_norms[None, :stop]) + 1e-12
        earlier = torch.arange(start, stop)[:, None] > torch.arange(stop)[None, :]
        i, j = torch.nonzero((sq_dist < reach * reach + slack) & earlier, as_tuple=True)
        rows.append(i + start)
        cols.append(j)
    return torch.cat(rows), torch.cat(cols)


def exact_distances(points: Tensor, rows: Tensor, cols: Tensor, norm: int, chunk: int = 4096) -> Tensor:
    """float64 ℓ``norm`` distances ‖x_row − x_col‖ for the given pairs."""
    flat = points.reshape(len(points), -1)
    parts = [
        torch.linalg.vector_norm(
            flat[rows[s : s + chunk]].double() - flat[cols[s : s + chunk]].double(), ord=norm, dim=1
        )
        for s in range(0, len(rows), chunk)
    ]
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64)


def memory_certify(points: Tensor, predict: Tensor, radius: Tensor, norm: int, *, block: int = 1024) -> MemoryResult:
    """Algorithm 3 over the stream ``points`` (N, ...) in order, with ℓ``norm`` balls (2 or 1)."""
    if norm not in (1, 2):
        raise ValueError(f"norm must be 1 (uniform noise) or 2 (Gaussian noise), got {norm}")
    count = len(points)
    if predict.shape != (count,) or radius.shape != (count,):
        raise ValueError(f"{count} points but predict {tuple(predict.shape)} and radius {tuple(radius.shape)}")
    radius_before = radius.detach().cpu().double()
    if torch.any(radius_before < 0) or not torch.all(torch.isfinite(radius_before)):
        raise ValueError("radii must be finite and >= 0")
    points = points.detach().cpu()
    rows, cols = candidate_pairs(points, radius_before, block=block)
    dist = exact_distances(points, rows, cols, norm).numpy()
    rows, cols = rows.numpy(), cols.numpy()
    # candidate pairs grouped by their later element i (rows come out of nonzero sorted by i)
    order = np.argsort(rows, kind="stable")
    rows, cols, dist = rows[order], cols[order], dist[order]
    bounds = np.searchsorted(rows, np.arange(count + 1))

    new_predict = predict.detach().cpu().numpy().astype(np.int64).copy()
    new_radius = radius_before.numpy().copy()
    action = ["kept"] * count
    for i in np.unique(rows):
        j, d = cols[bounds[i] : bounds[i + 1]], dist[bounds[i] : bounds[i + 1]]
        other = new_predict[j] != new_predict[i]
        r_j = new_radius[j]
        inside = other & ((d < r_j) | (d == 0))
        if inside.any():
            room = np.where(inside, r_j - d, -np.inf)
            adopted = new_predict[j[np.argmax(room)]]
            new_radius[i] = min(new_radius[i], max(0.0, float(np.max(room[new_predict[j] == adopted]))))
            new_predict[i] = adopted
            action[i] = "moved_in"
            continue
        overlapping = other & (d < new_radius[i] + r_j)
        if overlapping.any():
            new_radius[i] = min(new_radius[i], float(np.min(d[overlapping] - r_j[overlapping])))
            action[i] = "shrunk"
    return MemoryResult(
        predict=torch.from_numpy(new_predict),
        radius=torch.from_numpy(new_radius),
        action=action,
        radius_before=radius_before,
    )


def memory_certify_log(
    log_path: str | os.PathLike,
    dataset,
    out_path: str | os.PathLike,
    *,
    norm: int | None = None,
    block: int = 1024,
) -> dict[str, int]:
    """Run Algorithm 3 on a certification log and write the memory log atomically.

    Rows are processed in ``idx`` order with inputs ``dataset[idx]``; the output keeps the input
    log's columns, recomputes ``correct`` from the new prediction, and adds ``memory_action`` and
    ``radius_before``. ``norm`` defaults to the log's ``noise`` column (gaussian → 2, uniform → 1).
    Returns how many rows were kept / moved_in / shrunk.
    """
    frame = read_log(log_path)
    if "memory_action" in frame.columns:
        raise ValueError(f"{log_path} is already a memory-certified log")
    norm = norm if norm is not None else _norm_of(frame, log_path)
    frame = frame.sort_values("idx", kind="stable").reset_index(drop=True)
    if len(frame) and (frame["idx"].min() < 0 or frame["idx"].max() >= len(dataset)):
        raise ValueError(f"{log_path}: idx outside the dataset's {len(dataset)} inputs")
    points = torch.stack([dataset[int(idx)][0] for idx in frame["idx"]]) if len(frame) else torch.zeros(0, 1)
    predict = torch.as_tensor(frame["predict"].to_numpy(), dtype=torch.long)
    radius = torch.as_tensor(frame["radius"].to_numpy(), dtype=torch.float64)
    result = memory_certify(points, predict, radius, norm, block=block)
    frame["predict"] = result.predict.numpy()
    frame["radius"] = result.radius.numpy()
    frame["correct"] = (frame["predict"] == frame["label"]).astype(int)
    frame["memory_action"] = result.action
    frame["radius_before"] = result.radius_before.numpy()
    with atomic_path(out_path) as tmp:
        # full float precision: a radius rounded up could make two regions overlap again
        frame.to_csv(tmp, sep="\t", index=False, float_format="%.17g")
    return result.counts()


def _norm_of(frame: pd.DataFrame, log_path) -> int:
    if "noise" not in frame.columns:
        raise ValueError(f"{log_path} has no noise column; pass the norm (2 for gaussian, 1 for uniform)")
    names = set(frame["noise"])
    if len(names) != 1 or next(iter(names)) not in NORM_OF_NOISE:
        raise ValueError(f"{log_path}: noise column holds {sorted(names)}; expected one of {sorted(NORM_OF_NOISE)}")
    return NORM_OF_NOISE[next(iter(names))]
