"""The two steps of the semi-elastic certification around CERTIFY (Súkeník, Kuvshinov & Günnemann,
ICML 2022; docs/protocol.md, "A soundly certified data-dependent row"), without torch:

1. :func:`distance_design` and :func:`write_semi_elastic_sigmas`: their σ(x) over the training inputs
   (:class:`~ddrs.core.distance_sigma.DistanceSigma`), checked against the certificate's semi-elasticity
   on the test inputs (:func:`~ddrs.core.semi_elastic.check_semi_elasticity`) and written as a σ log
   (``idx knn_distance sigma_semi_elastic time``; ``time`` as the σ logs', seconds per input);
2. :func:`semi_elastic_certify_log`: CERTIFY's log at those σ (Cohen's radius, which a σ that moves
   with x does not carry) rewritten with the radius of their theorem, Cohen's kept as ``radius_cohen``.

Every draw (the reference and calibration subsamples, the check's offsets) comes from the config's
seed through :data:`~ddrs.core.seeds.StudyStream.SEMI_ELASTIC`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ddrs.core.certificate import ABSTAIN
from ddrs.core.distance_sigma import DistanceSigma, DistanceSigmaSettings
from ddrs.core.seeds import StudyStream, derived_seed
from ddrs.core.semi_elastic import check_semi_elasticity, semi_elastic_radius
from ddrs.io import atomic_path
from ddrs.logs.certification_log import read_log

#: the σ log's column of σ(x), and of the mean distance to the k nearest training inputs behind it
SIGMA_COLUMN = "sigma_semi_elastic"
DISTANCE_COLUMN = "knn_distance"
#: the keys of the design's draws under StudyStream.SEMI_ELASTIC
REFERENCE_DRAW, CALIBRATION_DRAW, CHECK_DRAW = 0, 1, 2


def _generator(seed: int, draw: int) -> np.random.Generator:
    return np.random.default_rng(derived_seed(seed, StudyStream.SEMI_ELASTIC, draw))


def distance_design(
    images: Sequence[np.ndarray], sigma: float, settings: DistanceSigmaSettings, seed: int
) -> DistanceSigma:
    """The design of σ(x) = ``sigma``·exp(r(d̄_k(x) − m)) over the training ``images`` (by index,
    :func:`ddrs.data.load_images`), ``settings.reference`` of them drawn with ``seed`` (all if None)
    and the offset m their median leave-one-out d̄_k over ``settings.calibration`` of those."""
    count = len(images)
    chosen = np.arange(count)
    if settings.reference is not None and settings.reference < count:
        chosen = np.sort(_generator(seed, REFERENCE_DRAW).choice(count, settings.reference, replace=False))
    reference = np.stack([np.asarray(images[int(i)], dtype=np.float32).ravel() for i in chosen])
    size = min(settings.calibration, len(reference))
    calibration = np.sort(_generator(seed, CALIBRATION_DRAW).choice(len(reference), size, replace=False))
    return DistanceSigma.fit(reference, settings.k, settings.rate, sigma, calibration)


def write_semi_elastic_sigmas(
    design: DistanceSigma, points: np.ndarray, indices: Sequence[int], out: str | os.PathLike, seed: int
) -> dict[int, float]:
    """σ(x) of the test inputs ``points`` (rows in ``indices`` order) into the σ log ``out``, after
    :func:`~ddrs.core.semi_elastic.check_semi_elasticity` refused none of them; idx → σ."""
    started = time.perf_counter()
    distances = design.distances(points)
    sigmas = np.exp(design.log_sigma_at(distances))
    check_semi_elasticity(design, points, design.rate, seed=derived_seed(seed, StudyStream.SEMI_ELASTIC, CHECK_DRAW))
    seconds = (time.perf_counter() - started) / max(len(indices), 1)
    frame = pd.DataFrame({"idx": list(indices), DISTANCE_COLUMN: distances, SIGMA_COLUMN: sigmas, "time": seconds})
    with atomic_path(out) as tmp:
        frame.to_csv(tmp, sep="\t", index=False, float_format="%.17g")
    return dict(zip(map(int, indices), sigmas.tolist(), strict=True))


def semi_elastic_certify_log(log_path: str | os.PathLike, out_path: str | os.PathLike, rate: float, dim: int) -> int:
    """CERTIFY's log at a ``rate``-semi-elastic σ(x) (its ``scale`` and ``p_a_lower`` columns) with
    each certified row's radius by Súkeník et al.'s theorem in dimension ``dim``
    (:func:`~ddrs.core.semi_elastic.semi_elastic_radius`), written atomically: Cohen's radius moves to
    ``radius_cohen``, ``semi_elasticity`` records r. Returns how many rows keep a positive radius."""
    frame = read_log(log_path)
    missing = [column for column in ("scale", "p_a_lower") if column not in frame.columns]
    if missing or "radius_cohen" in frame.columns:
        what = f"no {' and '.join(missing)} column" if missing else "already a semi-elastic log"
        raise ValueError(f"{log_path}: {what}; give the log CERTIFY wrote at the design's σ(x)")
    frame["radius_cohen"] = frame["radius"]
    frame["radius"] = [
        0.0 if predict == ABSTAIN else semi_elastic_radius(float(p), float(sigma), rate, dim)
        for predict, p, sigma in zip(frame["predict"], frame["p_a_lower"], frame["scale"], strict=True)
    ]
    frame["semi_elasticity"] = rate
    with atomic_path(out_path) as tmp:
        frame.to_csv(tmp, sep="\t", index=False, float_format="%.17g")
    return int((frame["radius"] > 0).sum())
