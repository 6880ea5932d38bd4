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
prunes ℓ1 too, with a conservative rounding slack), then float64 distances of those pairs in the
certificate's norm decide (numpy's ``linalg.norm``: the same summation order on every CPU). All in
numpy: ``ddrs memory`` needs no torch.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ddrs.io import atomic_path
from ddrs.logs import read_log

#: what Algorithm 3 did to a row (the memory log's ``memory_action`` column)
MEMORY_ACTIONS = ("kept", "moved_in", "shrunk")
#: relative slack on squared distances for float32 Gram-matrix rounding (its error is ≲ 1e-6 of ‖a‖²+‖b‖²)
GRAM_SLACK = 1e-4
NORM_OF_NOISE = {"gaussian": 2, "uniform": 1}


@dataclass(frozen=True)
class MemoryResult:
    """Algorithm 3's output per stream position: new prediction (int64), radius (float64), action, old radius."""

    predict: np.ndarray
    radius: np.ndarray
    action: list[str]
    radius_before: np.ndarray

    def counts(self) -> dict[str, int]:
        """How many rows were kept, moved into a region, or shrunk away from one."""
        tally = Counter(self.action)
        return {action: tally[action] for action in MEMORY_ACTIONS}


def candidate_pairs(points: np.ndarray, radius: np.ndarray, *, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i, j), j < i, whose balls could intersect: ‖x_i − x_j‖₂ < r_i + r_j up to rounding slack.

    A superset of the pairs Algorithm 3 must look at (radii only shrink, and ‖·‖₂ ≤ ‖·‖₁), found
    from float32 Gram blocks of the lower triangle, never a Python loop over pairs. Pairs come
    sorted by i, then j.
    """
    flat = np.asarray(points, dtype=np.float32).reshape(len(points), -1)
    sq_norms = np.einsum("ij,ij->i", flat, flat)
    radius = np.asarray(radius, dtype=np.float32)
    rows, cols = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for start in range(0, len(flat), block):
        stop = min(start + block, len(flat))
        gram = flat[start:stop] @ flat[:stop].T
        sq_dist = sq_norms[start:stop, None] + sq_norms[None, :stop] - 2 * gram
        reach = radius[start:stop, None] + radius[None, :stop]
        slack = GRAM_SLACK * (sq_norms[start:stop, None] + sq_norms[None, :stop]) + np.float32(1e-12)
        earlier = np.arange(start, stop)[:, None] > np.arange(stop)[None, :]
        i, j = np.nonzero((sq_dist < reach * reach + slack) & earlier)
        rows.append(i + start)
        cols.append(j)
    return np.concatenate(rows), np.concatenate(cols)


def exact_distances(points: np.ndarray, rows: np.ndarray, cols: np.ndarray, norm: int, chunk: int = 4096) -> np.ndarray:
    """float64 ℓ``norm`` distances ‖x_row − x_col‖ for the given pairs."""
    flat = np.asarray(points).reshape(len(points), -1)
    parts = [np.zeros(0, dtype=np.float64)]
    for s in range(0, len(rows), chunk):
        diff = flat[rows[s : s + chunk]].astype(np.float64) - flat[cols[s : s + chunk]].astype(np.float64)
        parts.append(np.linalg.norm(diff, ord=norm, axis=1))
    return np.concatenate(parts)


def memory_certify(points, predict, radius, norm: int, *, block: int = 1024) -> MemoryResult:
    """Algorithm 3 over the stream ``points`` (N, ...) in order, with ℓ``norm`` balls (2 or 1).

    ``points``, ``predict`` (N,) and ``radius`` (N,) are arrays (numpy, or CPU tensors).
    """
    if norm not in (1, 2):
        raise ValueError(f"norm must be 1 (uniform noise) or 2 (Gaussian noise), got {norm}")
    points = np.asarray(points)
    predict, radius_before = np.asarray(predict), np.array(radius, dtype=np.float64)
    count = len(points)
    if predict.shape != (count,) or radius_before.shape != (count,):
        raise ValueError(f"{count} points but predict {predict.shape} and radius {radius_before.shape}")
    if np.any(radius_before < 0) or not np.all(np.isfinite(radius_before)):
        raise ValueError("radii must be finite and >= 0")
    if count == 0:
        return MemoryResult(
            predict=predict.astype(np.int64), radius=radius_before, action=[], radius_before=radius_before.copy()
        )
    rows, cols = candidate_pairs(points, radius_before, block=block)
    dist = exact_distances(points, rows, cols, norm)
    # candidate pairs grouped by their later element i (they come sorted by i)
    bounds = np.searchsorted(rows, np.arange(count + 1))

    new_predict = predict.astype(np.int64)
    new_radius = radius_before.copy()
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
    return MemoryResult(predict=new_predict, radius=new_radius, action=action, radius_before=radius_before)


def memory_certify_log(
    log_path: str | os.PathLike,
    images: Sequence,
    out_path: str | os.PathLike,
    *,
    labels: Sequence[int] | None = None,
    norm: int | None = None,
    block: int = 1024,
) -> dict[str, int]:
    """Run Algorithm 3 on a certification log and write the memory log atomically.

    Rows are processed in ``idx`` order with the inputs ``images[idx]`` of the certified split:
    a dataset of ``(image, label)`` pairs (e.g. :func:`ddrs.data.load_dataset`), or images by index
    (e.g. :func:`ddrs.data.load_images`, no torch) with that split's ``labels`` by index
    (:func:`ddrs.data.load_labels`). Every row's label must be the split's: Algorithm 3's regions
    are balls around the certified inputs (DDRS §3.5), so a log of another split (another seed)
    would be made "sound" against the wrong images. The output keeps the input log's columns,
    recomputes ``correct`` from the new prediction, and adds ``memory_action`` and
    ``radius_before``. ``norm`` defaults to the log's ``noise`` column (gaussian → 2, uniform → 1).
    Returns how many rows were kept / moved_in / shrunk.
    """
    frame = read_log(log_path)
    if "memory_action" in frame.columns:
        raise ValueError(f"{log_path} is already a memory-certified log")
    if norm is None:  # a log of no rows has no noise to name and no ball to draw
        norm = _norm_of(frame, log_path) if len(frame) else 2
    frame = frame.sort_values("idx", kind="stable").reset_index(drop=True)
    if len(frame) and (frame["idx"].min() < 0 or frame["idx"].max() >= len(images)):
        raise ValueError(f"{log_path}: idx outside the dataset's {len(images)} inputs")
    items = [images[int(idx)] for idx in frame["idx"]]
    pairs = bool(items) and isinstance(items[0], tuple)
    if labels is None and not pairs and items:
        raise ValueError("give the split's labels with its images (labels=), so the log is checked against the split")
    expected = [int(item[1]) for item in items] if pairs else [int(labels[int(idx)]) for idx in frame["idx"]]
    _check_labels(frame, np.array(expected, dtype=np.int64), log_path)
    points = np.stack([_image(item) for item in items]) if items else np.zeros((0, 1))
    result = memory_certify(points, frame["predict"].to_numpy(), frame["radius"].to_numpy(), norm, block=block)
    frame["predict"] = result.predict
    frame["radius"] = result.radius
    frame["correct"] = (frame["predict"] == frame["label"]).astype(int)
    frame["memory_action"] = result.action
    frame["radius_before"] = result.radius_before
    with atomic_path(out_path) as tmp:
        # full float precision: a radius rounded up could make two regions overlap again
        frame.to_csv(tmp, sep="\t", index=False, float_format="%.17g")
    return result.counts()


def _check_labels(frame: pd.DataFrame, expected: np.ndarray, log_path) -> None:
    """Refuse a log whose labels are not the split's at its ``idx``: it certifies other images."""
    wrong = frame["label"].to_numpy() != expected
    if wrong.any():
        first = frame["idx"][wrong].tolist()[:5]
        raise ValueError(
            f"{log_path}: {int(wrong.sum())} of {len(frame)} rows have another label than the split's input at "
            f"their idx (idx {first}): it certifies another split; use the dataset and seed it was certified with"
        )


def _image(item) -> np.ndarray:
    """An image, from an image or from a dataset's ``(image, label)`` pair."""
    return np.asarray(item[0] if isinstance(item, tuple) else item)


def _norm_of(frame: pd.DataFrame, log_path) -> int:
    if "noise" not in frame.columns:
        raise ValueError(f"{log_path} has no noise column; pass the norm (2 for gaussian, 1 for uniform)")
    names = set(frame["noise"])
    if len(names) != 1 or next(iter(names)) not in NORM_OF_NOISE:
        held = sorted(map(str, names))  # an empty field reads as NaN, a float
        raise ValueError(f"{log_path}: noise column holds {held}; expected one of {sorted(NORM_OF_NOISE)}")
    return NORM_OF_NOISE[next(iter(names))]
