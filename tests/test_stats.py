"""Each statistic of the tables against an independent computation (statsmodels, scipy)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar as statsmodels_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from ddrs.analysis.stats import (
    bootstrap_means,
    flip_resamples,
    held_out_split,
    holm,
    mcnemar,
    percentile_interval,
    sign_flip_bound_p,
    sign_flip_p,
)
from ddrs.core.binomial import clopper_pearson


@pytest.mark.parametrize("n", [1, 7, 40, 200, 1000])
@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.2])
def test_clopper_pearson_equals_statsmodels_on_a_grid(n, alpha):
    k = np.unique(np.linspace(0, n, 23).round().astype(int))
    low, high = clopper_pearson(k, n, alpha)
    expected_low, expected_high = proportion_confint(k, n, alpha=alpha, method="beta")
    assert low == pytest.approx(expected_low, rel=1e-10, abs=1e-14)
    assert high == pytest.approx(expected_high, rel=1e-10, abs=1e-14)
    assert low[0] == 0.0 and high[-1] == 1.0


def test_clopper_pearson_refuses_impossible_counts():
    with pytest.raises(ValueError, match="0 <= k <= n"):
        clopper_pearson(5, 4)


def test_mcnemar_equals_statsmodels_exact_and_scipy_binomtest():
    rng = np.random.default_rng(3)
    for _ in range(60):
        n = int(rng.integers(1, 80))
        a, b = rng.random(n) < rng.random(), rng.random(n) < rng.random()
        a_only, b_only, p = mcnemar(a, b)
        table = [[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]]
        assert (a_only, b_only) == (table[0][1], table[1][0])
        assert p == pytest.approx(statsmodels_mcnemar(table, exact=True).pvalue, rel=1e-12)
        if a_only + b_only:
            assert p == pytest.approx(binomtest(int(a_only), int(a_only + b_only)).pvalue, rel=1e-9)
        else:
            assert p == 1.0


def test_mcnemar_is_vectorised_over_leading_axes():
    rng = np.random.default_rng(4)
    a, b = rng.random((3, 5, 30)) < 0.5, rng.random((3, 5, 30)) < 0.6
    _, _, p = mcnemar(a, b)
    assert p.shape == (3, 5) and p[1, 2] == mcnemar(a[1, 2], b[1, 2])[2]


@pytest.mark.parametrize("seed", range(5))
def test_holm_equals_statsmodels(seed):
    p = np.random.default_rng(seed).random(11) ** 3
    p[seed] = p[(seed + 1) % 11]  # a tie
    assert holm(p) == pytest.approx(multipletests(p, method="holm")[1], rel=1e-12)


def test_holm_leaves_missing_p_values_out_of_the_family():
    p = np.array([0.01, np.nan, 0.04])
    adjusted = holm(p)
    assert np.isnan(adjusted[1])
    assert adjusted[[0, 2]] == pytest.approx(multipletests([0.01, 0.04], method="holm")[1])


def test_bootstrap_is_reproducible_under_one_seed_and_differs_under_another():
    values = np.random.default_rng(0).random((50, 3))
    first = bootstrap_means(values, n_boot=300, seed=7, dataset="digits")
    assert np.array_equal(first, bootstrap_means(values, n_boot=300, seed=7, dataset="digits"))
    assert not np.array_equal(first, bootstrap_means(values, n_boot=300, seed=8, dataset="digits"))
    assert not np.array_equal(first, bootstrap_means(values, n_boot=300, seed=7, dataset="mnist"))
    # paired: every column sees the same resampled inputs, so a column difference is the mean difference
    difference = bootstrap_means(values[:, [0]] - values[:, [1]], n_boot=300, seed=7, dataset="digits")
    assert difference[:, 0] == pytest.approx(first[:, 0] - first[:, 1])


def test_bootstrap_interval_covers_the_mean_of_a_known_distribution():
    values = np.random.default_rng(1).normal(2.0, 1.0, size=(400, 1))
    low, high = percentile_interval(bootstrap_means(values, n_boot=2000, seed=0, dataset="x"))
    # the standard error is 1/20; the 95% interval is about mean ± 0.098
    assert low[0] < values.mean() < high[0]
    assert high[0] - low[0] == pytest.approx(2 * 1.96 * values.std() / 20, rel=0.15)


def test_held_out_split_is_a_seeded_half():
    select, evaluate = held_out_split(41, seed=0, dataset="digits")
    assert select.sum() == 20 and evaluate.sum() == 21 and not (select & evaluate).any()
    again, _ = held_out_split(41, seed=0, dataset="digits")
    other, _ = held_out_split(41, seed=1, dataset="digits")
    assert np.array_equal(select, again) and not np.array_equal(select, other)
    with pytest.raises(ValueError, match="at least 2"):
        held_out_split(1, seed=0, dataset="digits")


def test_sign_flip_p_enumerates_every_sign_pattern_when_they_are_few():
    # six inputs, 2^6 = 64 ≤ n_resamples: the exact two-sided p from every sign pattern
    d = np.array([[0.3, -0.1, 0.5, 0.2, 0.4, 0.05], [0.2, 0.2, -0.2, 0.1, 0.0, -0.3]]).T
    signs = np.array(np.meshgrid(*[[-1.0, 1.0]] * 6)).reshape(6, -1).T  # 64 × 6
    for column in range(2):
        means = signs @ d[:, column] / 6
        observed = d[:, column].mean()
        tolerance = 1e-12
        expected = min(1.0, 2 * min(np.mean(means >= observed - tolerance), np.mean(means <= observed + tolerance)))
        assert sign_flip_p(d, n_resamples=100, seed=0, dataset="d")[column] == pytest.approx(expected)
    # one input: ±d, p = 1; no difference: p = 1
    assert sign_flip_p(np.array([[5.0, -2.0]]), n_resamples=100, seed=0, dataset="d").tolist() == [1.0, 1.0]
    assert sign_flip_p(np.zeros((30, 1)), n_resamples=100, seed=0, dataset="d").tolist() == [1.0]


def test_the_hoeffding_bound_of_the_sign_flip_p_is_never_below_the_exact_p_and_reaches_any_level():
    """On 14 inputs every one of the 2^14 sign patterns gives the exact two-sided p; the closed-form
    bound is at least that (a valid p-value), and on 2,000 inputs of a clear effect it falls far below
    any Holm threshold, where a Monte Carlo p stops at 1 / (B + 1)."""
    rng = np.random.default_rng(0)
    signs = np.array(np.meshgrid(*[[-1.0, 1.0]] * 14)).reshape(14, -1).T
    for shift in (0.0, 0.3, 0.8, 1.5):
        d = rng.normal(shift, 1.0, 14)
        sums = signs @ d
        exact = min(1.0, 2 * min(np.mean(sums >= d.sum() - 1e-12), np.mean(sums <= d.sum() + 1e-12)))
        assert sign_flip_bound_p(d[:, None])[0] >= exact
    clear = rng.normal(0.2, 1.0, (2000, 1))
    assert sign_flip_bound_p(clear)[0] < 1e-10
    assert sign_flip_bound_p(np.zeros((30, 2))).tolist() == [1.0, 1.0]


def test_sign_flip_p_draws_seeded_flips_when_the_patterns_are_many():
    d = np.random.default_rng(0).normal(0.15, 1.0, (200, 3))
    first = sign_flip_p(d, n_resamples=500, seed=1, dataset="d")
    assert np.array_equal(first, sign_flip_p(d, n_resamples=500, seed=1, dataset="d"))
    assert not np.array_equal(first, sign_flip_p(d, n_resamples=500, seed=2, dataset="d"))
    # the Monte Carlo p counts the observed pattern: (1 + count) / (B + 1), never 0
    assert sign_flip_p(np.full((200, 1), 1.0), n_resamples=500, seed=1, dataset="d")[0] == pytest.approx(1 / 501)


@pytest.mark.parametrize("inputs", [12, 300], ids=["exact", "monte-carlo"])
def test_sign_flip_p_of_pairs_of_rows_is_that_of_their_differences(inputs):
    rows = np.random.default_rng(2).normal(0.5, 0.3, (inputs, 4)) * (np.random.default_rng(3).random((inputs, 4)) < 0.8)
    pairs = [(0, 1), (0, 2), (3, 1), (2, 3)]
    differences = np.stack([rows[:, a] - rows[:, b] for a, b in pairs], axis=1)
    by_pairs = sign_flip_p(rows, pairs, n_resamples=5000, seed=4, dataset="d")
    assert np.allclose(by_pairs, sign_flip_p(differences, n_resamples=5000, seed=4, dataset="d"))


def test_sign_flip_p_keeps_its_level_under_the_null():
    # symmetric differences (exchangeable rows), 300 tests of 40 inputs: rejections at 0.05 are
    # Binomial(300, ≤ 0.05); 27 or more has probability below 0.001 at the level
    d = np.random.default_rng(5).laplace(0.0, 1.0, (40, 300)) * np.random.default_rng(6).integers(0, 2, (40, 300))
    p = sign_flip_p(d, n_resamples=2000, seed=0, dataset="d")
    assert (p < 0.05).sum() < 27
    assert 0.3 < p.mean() < 0.7  # p is uniform under the null, not stuck near 1


def test_sign_flip_resamples_let_holm_reject_in_a_large_family():
    # a study's group: 8 rows, 28 pairs × 12 columns at α = 0.05. A fixed 2,000 patterns put every
    # p at ≥ 1/2001, and Holm needs p < 0.05/336 = 1.5e-4 for the first rejection
    family, alpha = 28 * 12, 0.05
    flips = flip_resamples(family, alpha)
    assert 1 / (flips + 1) <= alpha / family / 20
    d = np.random.default_rng(1).normal(0.1, 0.2, (300, 1))  # a clear gap: t ≈ 8.7
    p = sign_flip_p(d, n_resamples=flips, seed=0, dataset="d")
    assert p[0] * family < alpha


def test_holm_leaves_tests_that_cannot_reject_out_of_the_family():
    p = np.array([0.01, 0.02, 1.0, 1.0, 1.0])
    can_reject = np.array([True, True, False, False, False])
    assert holm(p, can_reject).tolist() == pytest.approx([0.02, 0.02, 1.0, 1.0, 1.0])
    assert holm(p).tolist() == pytest.approx([0.05, 0.08, 1.0, 1.0, 1.0])
