"""benchmarks/sequential_certify.py's floor: Wald's least expected draws for the decisions soundness requires."""

import math

import numpy as np
import pandas as pd
from benchmark_helpers import BENCHMARKS
from scipy.stats import norm

from ddrs.core.binomial import clopper_pearson_lower


def test_the_wald_floor_charges_only_the_certified_radius(monkeypatch):
    """Every draw correct at σ = 0.5: fixed n certifies 1.906, 1.75 on the grid, always (β = 0), so the
    floor is d(1 ‖ α)/KL(1 ‖ Φ(3.5)) = log(1/α)/(−log Φ(3.5)) ≈ 29,696 draws. An input fixed n abstains
    on costs nothing beyond the selection: abstaining needs no evidence."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from sequential_certify import ALPHA, N0, N, wald_floor

    radii = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5]
    all_correct = float(clopper_pearson_lower(N, N, ALPHA))
    certify_175 = math.log(1 / ALPHA) / -math.log(norm.cdf(3.5))
    log = pd.DataFrame(
        {"p_a_lower": [all_correct, 0.0], "radius": [0.5 * norm.ppf(all_correct), 0.0], "predict": [1, -1]}
    )
    assert 0.5 * norm.ppf(all_correct) > 1.75
    assert np.isclose(wald_floor(log.iloc[:1], 0.5, radii), N0 + certify_175, rtol=1e-6)
    assert wald_floor(log.iloc[1:], 0.5, radii) == N0
    assert np.isclose(wald_floor(log, 0.5, radii), N0 + certify_175 / 2, rtol=1e-6)


def test_an_input_on_its_threshold_is_charged_what_fixed_n_power_asks_not_the_cap(monkeypatch):
    """p̂ just above the threshold of r = 0.25 at σ = 0.25 (Φ(1)): fixed n certifies r about half the
    time there, so the floor is about d(½ ‖ α)/KL ≈ 2.76/4.8·10⁻⁵ ≈ 57,700, not the cap: a test
    certifying r as often as fixed n does needs no more."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from sequential_certify import ALPHA, N0, N, wald_floor

    counts = np.arange(N + 1)
    least = int(np.searchsorted(clopper_pearson_lower(counts, N, ALPHA), norm.cdf(1.0)))
    lower = float(clopper_pearson_lower(least, N, ALPHA))
    log = pd.DataFrame({"p_a_lower": [lower], "radius": [0.25 * norm.ppf(lower)], "predict": [1]})
    assert 0.5 * N < wald_floor(log, 0.25, [0.25, 0.5]) - N0 < 0.6 * N


def test_the_futility_benchmark_bounds_mcnemar_over_every_split_of_the_inputs_that_fell(monkeypatch):
    """benchmarks/sequential_futility.py: with the recorded test alone certifying b inputs and fixed n
    alone c, f inputs that fell turn x of the b concordant and f − x concordant-certified ones into
    fixed-only pairs; the bound is the least exact McNemar p over x. Nothing fell: the record's p."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from sequential_futility import least_mcnemar_p

    from ddrs.analysis.stats import mcnemar_p

    assert least_mcnemar_p(0, 3, 0) == float(mcnemar_p(0, 3)) == 0.25
    # b = 1, c = 3, f = 2: (1, 5) or (0, 4); the latter, 2 · 2⁻⁴, is the least
    assert least_mcnemar_p(1, 3, 2) == float(mcnemar_p(0, 4)) == 0.125 < float(mcnemar_p(1, 5))
