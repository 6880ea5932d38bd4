"""Certified accuracy, ACR and envelopes from certification logs (Cohen et al. 2019, §4).

Certified accuracy at radius r is the share of test inputs that are classified correctly with a
certified radius of at least r; ACR is the mean of ``radius · correct``. Both are fractions here;
the tables print percent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ddrs.core.certificate import EASY_ABOVE

#: Radius grid of the paper's CIFAR-10 tables (Tables 1–3); also used for digits and MNIST.
RADII_CIFAR10 = tuple(np.round(np.arange(0.0, 2.5 + 1e-9, 0.25), 2).tolist())
#: Radius grid of the paper's ImageNet tables (Tables 1–2).
RADII_IMAGENET = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0)
#: ℓ1 radius grid of Table 4 (YANG vs YANG-DS), both datasets.
RADII_L1 = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)


def paper_radii(dataset: str, norm: int = 2) -> tuple[float, ...]:
    """The radius grid the paper reports for ``dataset`` and certificate norm."""
    if norm == 1:
        return RADII_L1
    return RADII_IMAGENET if dataset == "imagenet" else RADII_CIFAR10


def certified_accuracy(log: pd.DataFrame, radii: Sequence[float]) -> pd.Series:
    """Share of rows with ``correct == 1`` and ``radius >= r``, for each r (index: radius)."""
    if len(log) == 0:
        raise ValueError("certified accuracy of an empty log is undefined")
    certified = np.sort(log["radius"].to_numpy(float)[log["correct"].to_numpy() == 1])
    radii = np.asarray(radii, dtype=float)
    at_least = len(certified) - np.searchsorted(certified, radii, side="left")
    return pd.Series(at_least / len(log), index=pd.Index(radii, name="radius"), name="certified_accuracy")


def acr(log: pd.DataFrame) -> float:
    """Average certified radius: the mean of ``radius · correct`` (wrong or abstained count 0)."""
    if len(log) == 0:
        raise ValueError("ACR of an empty log is undefined")
    return float((log["radius"].to_numpy(float) * (log["correct"].to_numpy() == 1)).mean())


def envelope(curves: Mapping[object, pd.Series] | pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Best value per radius over several curves, and which curve won each radius.

    ``curves`` maps a label to a curve indexed by radius (or is a DataFrame with one column per
    curve). Ties go to the first curve in order, so the winner is deterministic.
    """
    frame = pd.DataFrame(curves)
    if frame.shape[1] == 0:
        raise ValueError("envelope of no curves is undefined")
    return frame.max(axis=1).rename("envelope"), frame.idxmax(axis=1).rename("winner")


def radius_grid(logs: Iterable[pd.DataFrame], points: int = 201) -> np.ndarray:
    """A dense radius grid from 0 to just past the largest certified radius, for plotting."""
    largest = max(
        (float(log["radius"][log["correct"] == 1].max()) for log in logs if (log["correct"] == 1).any()),
        default=0.0,
    )
    return np.linspace(0.0, largest * 1.05 if largest > 0 else 1.0, points)


def true_class_p_a_lower(log: pd.DataFrame) -> pd.Series:
    """p̲A when the prediction is correct, else 0 (no evidence for the true class), by ``idx``.

    ``p_a_lower`` bounds the probability of the *predicted* class; Sun et al. (2024, §4.3) study
    p_A of the *true* class, which this lower-bounds (an abstention or a wrong top class gives no
    certified mass to the label, so it counts as the hardest case).
    """
    if "p_a_lower" not in log.columns:
        raise ValueError("the log has no p_a_lower column (published Cohen logs do not record it)")
    values = log["p_a_lower"].astype(float).where(log["correct"] == 1, 0.0)
    return pd.Series(values.to_numpy(), index=log["idx"].to_numpy(), name="p_a_true_lower")


def easy_inputs(reference: pd.DataFrame) -> pd.Series:
    """Split the test set into easy (True) and hard (False) inputs, indexed by ``idx``.

    Sun et al. (2024, "ACR is a poor metric", §4.2–4.3, Table 1): an input is easy when p_A of
    its true class is above :data:`EASY_ABOVE`, hard otherwise. p_A is bounded by the true-class
    p̲A of a *reference* (fixed-σ) log (:func:`true_class_p_a_lower`), so the easy inputs are those
    the reference certifies correctly; hard ones are wrong, abstained, or certified at p̲A = ½.
    """
    return (true_class_p_a_lower(reference) > EASY_ABOVE).rename("easy")
