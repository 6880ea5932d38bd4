"""The crossed runs × inputs design (ddrs.analysis.crossed): its components against statsmodels'
MixedLM, its unconditional test's level, and the power behind runs_needed against simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import ttest_1samp

from ddrs.analysis.crossed import (
    Components,
    MeanSquares,
    direct_power,
    inputs_needed,
    mixed_model_components,
    partition,
    power,
    runs_needed,
)


def crossed(rng, components: Components, runs: int, inputs: int, mean: float = 0.0, experiments: int = 1):
    """Planted draws of the crossed model: runs × inputs × experiments."""
    shape = (runs, inputs, experiments)
    return (
        mean
        + rng.normal(0, math.sqrt(components.run), (runs, 1, experiments))
        + rng.normal(0, math.sqrt(components.input), (1, inputs, experiments))
        + rng.normal(0, math.sqrt(components.residual), shape)
    )


def rejection_rate(components: Components, runs: int, inputs: int, alpha: float, mean=0.0, experiments=4000, seed=0):
    """How often the unconditional test rejects over planted experiments (an independent power)."""
    values = crossed(np.random.default_rng(seed), components, runs, inputs, mean, experiments)
    return float((MeanSquares.of(values).test()[2] < alpha).mean())


def test_the_moment_components_are_mixedlm_s_reml_estimates_where_positive():
    values = crossed(np.random.default_rng(0), Components(0.25, 1.0, 0.09), runs=5, inputs=60)[:, :, 0]
    moments = {part: float(value[0]) for part, value in MeanSquares.of(values).components().items()}
    assert all(value > 0 for value in moments.values())
    assert mixed_model_components(values) == pytest.approx(moments, rel=0.01)


def test_without_an_input_part_the_test_is_the_paired_t_test_over_runs():
    rng = np.random.default_rng(1)
    values = rng.normal(0.1, 0.2, (5, 1, 1)) + rng.normal(0, 1.0, (5, 40, 1))  # no input effect
    values[:, :, 0] -= values[:, :, 0].mean(axis=0) - values[:, :, 0].mean()  # inputs' means equal: MS_input 0
    squares = MeanSquares.of(values)
    assert squares.components()["input"][0] < 0
    variance, df, p = squares.test()
    assert df[0] == pytest.approx(4) and p[0] == pytest.approx(ttest_1samp(values.mean(axis=1)[:, 0], 0).pvalue)


@pytest.mark.parametrize(
    "components",
    [Components(1e-3, 0.0, 1e-2), Components(0.0, 1e-2, 1e-2), Components(1e-4, 3e-2, 5e-2)],
    ids=["runs", "inputs", "mostly-inputs"],
)
def test_the_unconditional_test_keeps_its_level_where_runs_or_inputs_dominate(components):
    """Null data of 5 runs × 100 inputs: the rejection rate at α = 0.05 is α within the simulation's
    noise (4,000 experiments: SE 0.0034). Where runs and inputs weigh alike it is somewhat liberal at
    small α, as Welch's test is (module docstring)."""
    assert rejection_rate(components, 5, 100, 0.05) == pytest.approx(0.05, abs=0.012)


def test_a_negative_run_estimate_does_not_trade_the_runs_few_degrees_of_freedom_for_the_inputs_many():
    """With a real run effect σ²_run is estimated negative in about 1.5 % of experiments, those where
    the runs agree by chance; tested there on the inputs' 99 df (the run term dropped), the test
    rejected at twice its level at the Bonferroni threshold of 11 claims (0.0079 against 0.0045)."""
    alpha = 0.05 / 11
    rate = rejection_rate(Components(1e-3, 0.0, 1e-2), 5, 100, alpha, experiments=20000, seed=2)
    assert rate <= alpha + 3 * math.sqrt(alpha / 20000)


def test_the_direct_power_is_statsmodels_power_where_statsmodels_evaluates_it():
    from statsmodels.stats.power import ttest_power

    sizes, dfs = np.meshgrid([0.5, 2.0, 3.0, 5.0, 20.0], [1.0, 1.5, 4.0, 50.0, 400.0])
    for alpha in (0.05, 0.005):
        expected = ttest_power(sizes, 1, alpha, df=dfs, alternative="two-sided")
        known = np.isfinite(expected)
        np.testing.assert_allclose(direct_power(sizes, dfs, alpha)[known], expected[known], atol=5e-6)


@pytest.mark.parametrize(
    ("effect", "components", "inputs", "alpha", "expected"),
    [
        (0.05, Components(4e-4, 0.01, 0.01), 100, 0.05, 4),
        # statsmodels' noncentral t gives NaN at 3 runs (2 df): the power is integrated there
        (0.1, Components(2e-4, 0.0, 1e-3), 30, 0.05, 3),
        (0.1, Components(1.5e-3, 0.0, 1e-3), 30, 0.05 / 4, 5),
    ],
)
def test_runs_needed_is_where_the_simulated_rule_reaches_power_0_8(effect, components, inputs, alpha, expected):
    """An independent power: the rule itself applied to planted experiments (4,000 each)."""
    needed = runs_needed(effect, components, inputs, alpha)
    assert needed == expected
    assert rejection_rate(components, expected, inputs, alpha, effect) >= 0.8 - 0.015
    assert rejection_rate(components, expected - 1, inputs, alpha, effect) < 0.8
    assert power(effect, components, [expected], inputs, alpha)[0] >= 0.8


def test_a_claim_the_inputs_alone_keep_below_power_0_8_is_not_reachable_and_says_how_many_inputs_would():
    """The input part alone (SE √(1/50) = 0.14 against an effect of 0.3) caps the power at any run
    count; about 90 inputs would do with many runs (here 20, where the run part is negligible)."""
    effect, components = 0.3, Components(1e-3, 1.0, 0.1)
    assert runs_needed(effect, components, 50, 0.05) == math.inf
    assert rejection_rate(components, 20, 50, 0.05, effect, experiments=2000) < 0.6
    more = int(inputs_needed(effect, components, 0.05))
    assert 80 <= more <= 100
    assert rejection_rate(components, 20, more, 0.05, effect, experiments=2000) >= 0.8 - 0.02
    assert rejection_rate(components, 20, int(0.8 * more), 0.05, effect, experiments=2000) < 0.75


def test_a_partition_sums_to_one_and_names_each_negative_estimate_it_shows_as_zero():
    row = partition(
        {"run": -2e-6, "input": 3e-4, "residual": 1e-3}, {"run": 1 / 5, "input": 1 / 100, "residual": 1 / 500}
    )
    assert row["sigma2_run"] == 0 and row["share_run"] == 0
    assert row["share_input"] + row["share_residual"] == pytest.approx(1.0)
    assert row["flag"] == "σ²_run estimated -2.00e-06, shown as 0"
