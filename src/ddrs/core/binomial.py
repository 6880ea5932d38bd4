"""Exact (Clopper–Pearson) confidence bounds on a binomial proportion, without torch or scipy.stats.

One definition serves both uses: Cohen et al.'s LowerConfBound on p_A inside CERTIFY (2019,
Appendix C; :func:`ddrs.core.smoothing.lower_confidence_bound`) and the 95% interval on certified
accuracy over test inputs in the tables. The bounds are quantiles of Beta distributions,
evaluated with ``scipy.special.betaincinv`` (the function ``scipy.stats.beta.ppf`` calls), because
importing scipy.stats costs every certification job a second.
"""

from __future__ import annotations

import numpy as np
from scipy.special import betaincinv


def _check(k: np.ndarray, n) -> None:
    if np.any(np.asarray(n) < 1) or np.any(k < 0) or np.any(k > n):
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k.tolist()}, n={np.asarray(n).tolist()}")


def clopper_pearson_lower(k, n, alpha: float) -> np.ndarray:
    """One-sided (1 − α) lower bound on p from k successes in n trials: the α quantile of
    Beta(k, n − k + 1), and 0 at k = 0 (statsmodels' ``proportion_confint(k, n, 2α, "beta")[0]``)."""
    k = np.asarray(k, dtype=float)
    _check(k, n)
    with np.errstate(invalid="ignore"):  # betaincinv(0, …) is nan; the bound there is 0
        return np.where(k > 0, betaincinv(k, n - k + 1, alpha), 0.0)


def clopper_pearson_upper(k, n, alpha: float) -> np.ndarray:
    """One-sided (1 − α) upper bound: the 1 − α quantile of Beta(k + 1, n − k), and 1 at k = n."""
    k = np.asarray(k, dtype=float)
    _check(k, n)
    with np.errstate(invalid="ignore"):
        return np.where(k < n, betaincinv(k + 1, n - k, 1 - alpha), 1.0)


def clopper_pearson(k, n, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided exact (1 − α) interval on p: each one-sided bound at level α/2."""
    return clopper_pearson_lower(k, n, alpha / 2), clopper_pearson_upper(k, n, alpha / 2)
