"""A σ(x) of known semi-elasticity: Súkeník, Kuvshinov & Günnemann's design (ICML 2022, their concrete
variance function), σ(x) = σ_b · exp(r · (d̄_k(x) − m)), where d̄_k(x) is the mean ℓ2 distance from x
to its k nearest reference (training) inputs and m an offset fixed beforehand.

Each distance x ↦ ‖x − x_i‖ is 1-Lipschitz, so is the j-th smallest of them, so is their mean over
j ≤ k: |d̄_k(x) − d̄_k(x′)| ≤ ‖x − x′‖. Hence |log σ(x) − log σ(x′)| ≤ r‖x − x′‖ for *every* pair of
inputs, the r-semi-elasticity :mod:`ddrs.core.semi_elastic` certifies with. A σ chosen per input
and then clipped into [σ₀e^{−c}, σ₀e^{c}] has no such constant: two inputs an ε apart may sit at
opposite ends of the clip, a ratio of 2c/ε (docs/protocol.md, "A soundly certified data-dependent row").

Distances are computed in float64 from the inputs as the base classifier sees them (pixels in [0, 1]).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

#: float64 differences held at once by :func:`mean_knn_distance` (32 MiB)
BLOCK_ELEMENTS = 1 << 22


def mean_knn_distance(
    points: np.ndarray, reference: np.ndarray, k: int, exclude: np.ndarray | None = None
) -> np.ndarray:
    """d̄_k of each row of ``points``: the mean ℓ2 distance to its ``k`` nearest rows of ``reference``
    (both flattened), leaving out for row i the reference row ``exclude[i]`` when given (leave one out).
    Differences are taken directly (no ‖x‖² + ‖y‖² − 2x·y cancellation), blocks of both at a time."""
    points = np.asarray(points, dtype=np.float64).reshape(len(points), -1)
    if not 1 <= k <= len(reference) - (exclude is not None):
        raise ValueError(f"k = {k} nearest neighbours need at least {k} reference inputs, got {len(reference)}")
    size = max(points.shape[1], 1)
    rows = max(1, min(len(reference), BLOCK_ELEMENTS // size // 8))
    nearest = np.full((len(points), k), np.inf)
    for start in range(0, len(reference), rows):
        block = np.asarray(reference[start : start + rows], dtype=np.float64).reshape(-1, size)
        distances = _distances(points, block)
        if exclude is not None:
            own = exclude - start
            inside = (own >= 0) & (own < len(block))
            distances[np.flatnonzero(inside), own[inside]] = np.inf
        nearest = np.partition(np.concatenate([nearest, distances], axis=1), k - 1, axis=1)[:, :k]
    return nearest.mean(axis=1)


def _distances(points: np.ndarray, block: np.ndarray) -> np.ndarray:
    """‖p − b‖ for every row p of ``points`` and b of ``block``, :data:`BLOCK_ELEMENTS` differences at a time."""
    group = max(1, BLOCK_ELEMENTS // block.size) if block.size else len(points)
    parts = [
        np.sqrt(((points[i : i + group, None, :] - block[None]) ** 2).sum(axis=2)) for i in range(0, len(points), group)
    ]
    return np.concatenate(parts) if parts else np.zeros((0, len(block)))


@dataclass(frozen=True)
class DistanceSigma:
    """σ(x) = ``sigma_base`` · exp(``rate`` · (d̄_``k``(x) − ``offset``)) over ``reference`` inputs:
    ``rate``-semi-elastic by construction (module docstring)."""

    reference: np.ndarray
    k: int
    rate: float
    sigma_base: float
    offset: float

    def __post_init__(self):
        if not (self.rate >= 0 and self.sigma_base > 0 and np.isfinite(self.offset)):
            raise ValueError(
                f"need rate ≥ 0, σ_b > 0 and a finite offset, got {self.rate}, {self.sigma_base}, {self.offset}"
            )

    @property
    def semi_elasticity(self) -> float:
        """The design's proven constant r: |log σ(x) − log σ(x′)| ≤ r‖x − x′‖."""
        return self.rate

    def distances(self, points: np.ndarray) -> np.ndarray:
        """d̄_k of each of ``points``."""
        return mean_knn_distance(points, self.reference, self.k)

    def log_sigma_at(self, distances: np.ndarray) -> np.ndarray:
        """log σ at inputs whose d̄_k are ``distances``."""
        return np.log(self.sigma_base) + self.rate * (np.asarray(distances) - self.offset)

    def log_sigmas(self, points: np.ndarray) -> np.ndarray:
        """log σ(x) of each of ``points``."""
        return self.log_sigma_at(self.distances(points))

    @classmethod
    def fit(cls, reference: np.ndarray, k: int, rate: float, sigma_base: float, calibration: np.ndarray):
        """The design whose offset m is the median of d̄_k over the reference rows ``calibration``
        (indices), each leaving itself out: σ(x) = σ_b at a typical training input."""
        leave_out = np.asarray(calibration, dtype=np.int64)
        offset = float(np.median(mean_knn_distance(reference[leave_out], reference, k, exclude=leave_out)))
        return cls(reference, k, rate, sigma_base, offset)


@dataclass(frozen=True, kw_only=True)
class DistanceSigmaSettings:
    """What decides the design and its certificate (config ``semi_elastic``): the semi-elasticity
    ``rate``, ``k`` neighbours, a seeded subsample of ``reference`` training inputs (None: all) and
    the ``calibration`` reference inputs whose median d̄_k is the offset."""

    rate: float = 0.01
    k: int = 20
    reference: int | None = None
    calibration: int = 200

    def __post_init__(self):
        if not (np.isfinite(self.rate) and self.rate >= 0):
            raise ValueError(f"semi-elasticity rate must be ≥ 0, got {self.rate}")
        for name in ("k", "calibration") + (("reference",) if self.reference is not None else ()):
            if int(getattr(self, name)) != getattr(self, name) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be an integer ≥ 1, got {getattr(self, name)}")

    def resume_settings(self) -> dict[str, object]:
        """Every field: the job re-runs when one changes."""
        return asdict(self)
