"""Cohen et al.'s reference CERTIFY: the loop ddrs's CERTIFY is timed against (``certify_throughput.py``,
``gpu_throughput.py``).

locuslab/smoothing's ``core.Smooth.certify`` (Cohen et al. 2019, Section 3.2, CERTIFY), one input at
a time: the image repeated into forward batches, noise from torch's global generator, forward and
argmax, the predictions counted on the host (their Python loop ``_count_arr``, or ``np.bincount``),
the Clopper–Pearson lower bound on p_A (statsmodels, as theirs) and the radius σ Φ⁻¹(p_A).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.stats import norm
from statsmodels.stats.proportion import proportion_confint
from torch import nn

#: Cohen et al.'s label for an abstention
ABSTAIN = -1


def count_predictions(predictions: np.ndarray, num_classes: int, python_count: bool) -> np.ndarray:
    """How often each class was predicted: with Cohen et al.'s Python loop, or with ``np.bincount``."""
    if not python_count:
        return np.bincount(predictions, minlength=num_classes)
    counts = np.zeros(num_classes, dtype=int)
    for idx in predictions:
        counts[idx] += 1
    return counts


def sample_noise(
    model: nn.Module, image: torch.Tensor, sigma: float, num: int, batch: int, num_classes: int, python_count: bool
) -> np.ndarray:
    """Class counts of ``model`` on ``num`` Gaussian perturbations of ``image``, ``batch`` at a time."""
    counts = np.zeros(num_classes, dtype=int)
    with torch.no_grad():
        for _ in range(math.ceil(num / batch)):
            this_batch_size = min(batch, num)
            num -= this_batch_size
            repeated = image.repeat((this_batch_size, 1, 1, 1))
            noise = torch.randn_like(repeated) * sigma
            predictions = model(repeated + noise).argmax(1)
            counts += count_predictions(predictions.cpu().numpy(), num_classes, python_count)
    return counts


def cohen_certify(
    model: nn.Module,
    x: torch.Tensor,
    sigma: float,
    n0: int,
    n: int,
    alpha: float,
    batch: int,
    num_classes: int,
    python_count: bool = False,
) -> list[tuple[int, float]]:
    """CERTIFY of each input of ``x`` as Cohen et al.'s loop runs it: (predicted class or
    :data:`ABSTAIN`, certified ℓ2 radius)."""
    certified = []
    for image in x:
        c_a = int(sample_noise(model, image, sigma, n0, batch, num_classes, python_count).argmax())
        n_a = int(sample_noise(model, image, sigma, n, batch, num_classes, python_count)[c_a])
        p_a = proportion_confint(n_a, n, alpha=2 * alpha, method="beta")[0]
        certified.append((ABSTAIN, 0.0) if p_a < 0.5 else (c_a, sigma * float(norm.ppf(p_a))))
    return certified
