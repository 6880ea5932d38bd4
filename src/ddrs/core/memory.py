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

from collections import Counter
from dataclasses import dataclass

import numpy as np

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


def largest_in_subset(
    own: int, predict: np.ndarray, radius: np.ndarray, distance: np.ndarray
) -> tuple[int, float] | None:
    """LargestInSubset (Figure 2 middle) for a new input of prediction ``own`` at ``distance`` from stored inputs
    of ``predict`` and ``radius``: where it lies in a stored region S_j of another prediction (``distance < r_j``,
    or on x_j itself), that region's prediction and the radius of the largest ball around the new input inside
    the regions of that prediction; None where it lies in none."""
    inside = (predict != own) & ((distance < radius) | (distance == 0))
    if not inside.any():
        return None
    room = np.where(inside, radius - distance, -np.inf)
    adopted = predict[np.argmax(room)]
    return int(adopted), max(0.0, float(np.max(room[predict == adopted])))


def memory_answer(points, predict, radius, query, query_predict: int, norm: int) -> int:
    """The class Algorithm 3's classifier answers a new input ``query`` whose data-dependent prediction is
    ``query_predict``, against a memory of stored ``points``, ``predict`` and ``radius`` (a memory log's rows):
    the prediction of a stored region of another prediction that holds it (:func:`largest_in_subset`), else its
    own. Inside a stored region the answer is that region's class whatever ``query_predict`` is."""
    flat = np.asarray(points).reshape(len(points), -1).astype(np.float64)
    distance = np.linalg.norm(flat - np.asarray(query, dtype=np.float64).reshape(1, -1), ord=norm, axis=1)
    moved = largest_in_subset(int(query_predict), np.asarray(predict), np.asarray(radius, dtype=np.float64), distance)
    return int(query_predict) if moved is None else moved[0]


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
        r_j = new_radius[j]
        moved = largest_in_subset(int(new_predict[i]), new_predict[j], r_j, d)
        if moved is not None:
            new_predict[i], room = moved
            new_radius[i] = min(new_radius[i], room)
            action[i] = "moved_in"
            continue
        other = new_predict[j] != new_predict[i]
        overlapping = other & (d < new_radius[i] + r_j)
        if overlapping.any():
            new_radius[i] = min(new_radius[i], float(np.min(d[overlapping] - r_j[overlapping])))
            action[i] = "shrunk"
    return MemoryResult(predict=new_predict, radius=new_radius, action=action, radius_before=radius_before)
