"""benchmarks/sequential_certify.py's floor: the draws any sound sequential rule needs to decide the grid."""

import math

import numpy as np
import pandas as pd
from benchmark_helpers import BENCHMARKS
from scipy.stats import norm

from ddrs.core.binomial import clopper_pearson_lower


def test_the_wald_floor_of_an_all_correct_and_an_abstaining_input(monkeypatch):
    """Every draw correct at σ = 0.5: 1.75 is the grid's largest radius that n = 100,000 draws can
    certify (σΦ⁻¹(α^(1/n)) = 1.906), and certifying it takes log(1/α)/(−log Φ(3.5)) ≈ 29,696 draws
    (what Clopper–Pearson needs with every draw correct); 2.0 and beyond cost nothing. An input whose
    class is right with probability 0 is out at radius 0 after log(1/α)/log 2 ≈ 10 draws."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from sequential_certify import ALPHA, N0, N, wald_floor

    radii = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5]
    all_correct = float(clopper_pearson_lower(N, N, ALPHA))
    assert 0.5 * norm.ppf(all_correct) > 1.75
    certify_175 = math.log(1 / ALPHA) / -math.log(norm.cdf(3.5))
    rule_out_0 = math.log(1 / ALPHA) / math.log(2)
    log = pd.DataFrame({"p_a_lower": [all_correct, 0.0]})
    assert np.isclose(wald_floor(log.iloc[:1], 0.5, radii), N0 + certify_175, rtol=1e-6)
    assert np.isclose(wald_floor(log.iloc[1:], 0.5, radii), N0 + rule_out_0, rtol=1e-6)
    assert np.isclose(wald_floor(log, 0.5, radii), N0 + (certify_175 + rule_out_0) / 2, rtol=1e-6)
