"""Súkeník et al.'s certificate for a semi-elastic σ(x) (ddrs.core.semi_elastic) and the σ(x) design it
certifies (ddrs.core.distance_sigma): Cohen's radius at r = 0, smaller radii as r grows, the worst case
checked by Monte Carlo in low dimension, the inverse in r, and the refusal of a σ(x) more elastic than
the certificate assumes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtri

from ddrs.core.distance_sigma import DistanceSigma, mean_knn_distance
from ddrs.core.semi_elastic import (
    TOLERANCE,
    check_semi_elasticity,
    edge_certified,
    max_semi_elasticity,
    semi_elastic_radius,
    worst_case_probability,
)


@pytest.mark.parametrize("dim", [2, 784, 3072, 150528])
def test_rate_zero_is_cohens_radius(dim):
    for p in (0.6, 0.9, 0.999):
        assert semi_elastic_radius(p, 0.37, 0.0, dim) == 0.37 * ndtri(p)
        # a semi-elasticity too small to move σ by 10⁻⁹ costs no more than the bisection's tolerance
        assert 0.37 * ndtri(p) - (1 + 1e-9) * TOLERANCE * 0.37 <= semi_elastic_radius(p, 0.37, 1e-12, dim)
        assert semi_elastic_radius(p, 0.37, 1e-12, dim) <= 0.37 * ndtri(p)


def test_worst_case_is_cohens_at_equal_sigma_and_continuous_across_it():
    for dim in (3, 784, 150528):
        cohen = worst_case_probability(0.8, 0.0, 0.95, dim)
        assert cohen == pytest.approx(0.5 * math.erfc(-(0.8 - ndtri(0.95)) / math.sqrt(2)), abs=1e-15)
        for u in (-2e-5, 2e-5):  # L·|u| bounds the change (Lipschitz in log σ₁)
            assert abs(worst_case_probability(0.8, u, 0.95, dim) - cohen) <= 2 * math.sqrt(dim) * abs(u)


@pytest.mark.parametrize("dim", [64, 784, 3072, 150528])
def test_radius_shrinks_as_the_semi_elasticity_grows(dim):
    radii = [semi_elastic_radius(0.99, 0.5, rate, dim) for rate in (0.0, 0.003, 0.01, 0.03, 0.1)]
    assert all(a > b for a, b in zip(radii, radii[1:], strict=False)), radii
    assert radii[-1] >= 0


def test_radius_shrinks_with_the_dimension():
    """The curse of dimensionality (Súkeník et al.): the same r costs more radius in higher d."""
    radii = [semi_elastic_radius(0.99, 0.5, 0.01, dim) for dim in (64, 784, 3072, 150528)]
    assert all(a > b for a, b in zip(radii, radii[1:], strict=False)), radii


def test_abstention_and_bad_arguments():
    assert semi_elastic_radius(0.5, 0.5, 0.01, 10) == 0.0
    assert semi_elastic_radius(0.3, 0.5, 0.01, 10) == 0.0
    for bad in ((0.9, 0.0, 0.01, 10), (0.9, 0.5, -0.1, 10), (0.9, 0.5, 0.01, 0), (1.0, 0.5, 0.01, 10)):
        with pytest.raises(ValueError, match="need σ > 0"):
            semi_elastic_radius(*bad)


def _ball_set(points, centre, radius_squared):
    return ((points - centre) ** 2).sum(axis=1) <= radius_squared


def test_worst_case_bound_holds_by_monte_carlo_in_low_dimension():
    """In d = 3, for σ₁ on both sides of σ₀: every set of P₀-mass ≤ 1 − p̲ (half-spaces, balls, slabs,
    the worst-case ball itself) gets P₁-mass ≤ ξ, and the likelihood-ratio ball reaches it."""
    rng = np.random.default_rng(0)
    dim, p_lower, distance, n = 3, 0.8, 0.6, 100_000
    p_other = 1 - p_lower
    shift = np.zeros(dim)
    shift[0] = distance
    under_p0 = rng.standard_normal((n, dim))
    for log_ratio in (-0.4, -0.1, 0.1, 0.4):
        sigma1 = math.exp(log_ratio)
        under_p1 = shift + sigma1 * rng.standard_normal((n, dim))
        xi = worst_case_probability(distance, log_ratio, p_lower, dim)
        error = 4 * math.sqrt(0.25 / n)  # 4 standard errors of a proportion
        candidates = []
        for direction in rng.standard_normal((8, dim)):  # half-spaces of P₀-mass p_other
            direction /= np.linalg.norm(direction)
            threshold = np.quantile(under_p0 @ direction, 1 - p_other)
            candidates.append(lambda x, d=direction, t=threshold: x @ d >= t)
        for centre in rng.standard_normal((8, dim)) * 2:  # balls of P₀-mass p_other
            radius_squared = np.quantile(((under_p0 - centre) ** 2).sum(axis=1), p_other)
            candidates.append(lambda x, c=centre, r=radius_squared: _ball_set(x, c, r))
        for candidate in candidates:
            assert candidate(under_p0).mean() <= p_other + error
            assert candidate(under_p1).mean() <= xi + error
        # the likelihood-ratio set: a ball around c = R/(1 − σ₁²) e₁ (inside for σ₁ < 1, outside for σ₁ > 1)
        centre = shift / (1 - sigma1**2)
        spread = ((under_p0 - centre) ** 2).sum(axis=1)
        inside = sigma1 < 1
        threshold = np.quantile(spread, p_other if inside else 1 - p_other)

        def worst(x, centre=centre, threshold=threshold, inside=inside):
            return _ball_set(x, centre, threshold) == inside

        assert worst(under_p0).mean() == pytest.approx(p_other, abs=error)
        assert worst(under_p1).mean() == pytest.approx(xi, abs=error)


def test_certified_radius_survives_every_sigma_in_the_semi_elastic_range():
    """Inside the certified radius, ξ < ½ at every distance and every σ₁ with |log σ₁/σ₀| ≤ r·distance
    (the whole edge, not only its ends); just past it, somewhere on the edge ξ ≥ ½."""
    p_lower, sigma, rate, dim = 0.99, 0.5, 0.05, 784
    radius = semi_elastic_radius(p_lower, sigma, rate, dim)
    for fraction in (0.25, 0.5, 0.9, 1.0):
        distance = fraction * radius / sigma
        for u in np.linspace(-1, 1, 41) * rate * sigma * distance:
            assert worst_case_probability(distance, u, p_lower, dim) < 0.5
    beyond = (radius + 2 * TOLERANCE * sigma) / sigma
    edge = np.linspace(-1, 1, 41) * rate * sigma * beyond
    assert max(worst_case_probability(beyond, u, p_lower, dim) for u in edge) >= 0.5
    assert not edge_certified(beyond, rate * sigma * beyond, p_lower, dim)


def test_max_semi_elasticity_inverts_the_radius():
    p_lower, sigma, dim = 0.995, 0.25, 784
    for rate in (0.02, 0.1):
        radius = semi_elastic_radius(p_lower, sigma, rate, dim)
        found = max_semi_elasticity(radius, p_lower, sigma, dim)
        assert found == pytest.approx(rate, rel=1e-2)
        assert semi_elastic_radius(p_lower, sigma, found, dim) >= radius - 2 * TOLERANCE * sigma
        assert semi_elastic_radius(p_lower, sigma, 1.05 * found, dim) < radius
    cohen = sigma * ndtri(p_lower)
    assert max_semi_elasticity(0.0, p_lower, sigma, dim) == math.inf
    assert max_semi_elasticity(cohen, p_lower, sigma, dim) == 0.0
    with pytest.raises(ValueError, match="exceeds Cohen's"):
        max_semi_elasticity(1.01 * cohen, p_lower, sigma, dim)


def test_mean_knn_distance_is_the_k_nearest_and_one_lipschitz():
    rng = np.random.default_rng(1)
    reference, points = rng.random((300, 12)), rng.random((40, 12))
    brute = np.sort(np.linalg.norm(points[:, None] - reference[None], axis=2), axis=1)[:, :7].mean(axis=1)
    np.testing.assert_allclose(mean_knn_distance(points, reference, 7), brute, rtol=1e-13)
    own = np.arange(5)
    left_out = np.sort(np.linalg.norm(reference[:5, None] - reference[None], axis=2), axis=1)[:, 1:8].mean(axis=1)
    np.testing.assert_allclose(mean_knn_distance(reference[:5], reference, 7, exclude=own), left_out, rtol=1e-13)
    with pytest.raises(ValueError, match="k = 301 nearest neighbours"):
        mean_knn_distance(points, reference, 301)


def test_distance_sigma_is_rate_semi_elastic_on_random_pairs():
    rng = np.random.default_rng(2)
    reference = rng.random((400, 16))
    design = DistanceSigma.fit(reference, k=5, rate=0.3, sigma_base=0.25, calibration=np.arange(100))
    near = reference[:50] + 0.05 * rng.standard_normal((50, 16))
    far = rng.random((50, 16)) * 3
    for a, b in ((near, far), (near, near[::-1]), (near, near + 1e-3 * rng.standard_normal(near.shape))):
        ratio = np.abs(design.log_sigmas(a) - design.log_sigmas(b)) / np.linalg.norm(a - b, axis=1)
        assert ratio.max() <= 0.3 * (1 + 1e-12)
    # the offset is the median leave-one-out distance: σ = σ_b at a typical training input
    typical = mean_knn_distance(reference[:100], reference, 5, exclude=np.arange(100))
    assert design.offset == pytest.approx(np.median(typical))


class _Planted(DistanceSigma):
    """A σ(x) that declares the rate it is built with but moves three times as fast."""

    def log_sigmas(self, points):
        return np.log(self.sigma_base) + 3 * self.rate * (self.distances(points) - self.offset)


def test_a_sigma_more_elastic_than_the_certificate_is_refused():
    rng = np.random.default_rng(3)
    reference, inputs = rng.random((200, 8)), rng.random((30, 8))
    honest = DistanceSigma.fit(reference, k=4, rate=0.2, sigma_base=0.5, calibration=np.arange(50))
    assert check_semi_elasticity(honest, inputs, 0.2, seed=0) <= 0.2
    with pytest.raises(ValueError, match="0.4-semi-elastic but the certificate assumes r = 0.2"):
        check_semi_elasticity(DistanceSigma(reference, 4, 0.4, 0.5, honest.offset), inputs, 0.2, seed=0)
    planted = _Planted(reference, 4, 0.2, 0.5, honest.offset)
    with pytest.raises(ValueError, match="it is not 0.2-semi-elastic"):
        check_semi_elasticity(planted, inputs, 0.2, seed=0)
