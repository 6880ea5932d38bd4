"""The certificate of input-dependent Gaussian smoothing with a semi-elastic σ(x) (Súkeník, Kuvshinov
& Günnemann, "Intriguing Properties of Input-Dependent Randomized Smoothing", ICML 2022; arXiv 2110.05365).

σ(·) is *r-semi-elastic* when |log σ(x) − log σ(x′)| ≤ r‖x − x′‖₂ for all x, x′ (their definition).
The smoothed classifier g(x) = argmax_c P(f(x + σ(x)ε) = c) answers A at x₁ whenever
N(x₁, σ₁²I) gives A more than ½, with σ₁ = σ(x₁). CERTIFY at x₀ bounds p_A ≥ p̲ under
N(x₀, σ₀²I) (Cohen et al. 2019, §3.2.2). Their general certification theorem is the Neyman–Pearson
argument between N(x₀, σ₀²I) and N(x₁, σ₁²I): the most mass N(x₁, σ₁²I) can put outside A is

    ξ(R, σ₁) = sup { P₁(B) : P₀(B) ≤ 1 − p̲ },    R = ‖x₁ − x₀‖,

reached by a likelihood-ratio set, a ball. With σ₀ = 1 (everything scales with σ₀), γ = |1 − σ₁²|,
λ₀ = R²/γ² and λ₁ = σ₁²R²/γ², and χ²_d(λ) the noncentral chi-squared law:

- σ₁ < σ₀: ξ = F_{d,λ₁}(F⁻¹_{d,λ₀}(1 − p̲)/σ₁²)  (B a ball beyond x₁, away from x₀);
- σ₁ > σ₀: ξ = S_{d,λ₁}(S⁻¹_{d,λ₀}(1 − p̲)/σ₁²)  (B the outside of a ball behind x₀; S = 1 − F);
- σ₁ = σ₀: ξ = Φ(R − Φ⁻¹(p̲)), Cohen et al.'s Theorem 1.

R is certified when ξ < ½ for every x₁ within R, that is for every R′ ≤ R and every σ₁ with
|log σ₁| ≤ rR′. Two facts make that a one-dimensional check at R′ = R (docs/protocol.md, "A soundly
certified data-dependent row"). For a fixed σ₁, ξ grows with R, so the worst case sits on the edge
R′ = R: for σ₁ < σ₀ the optimal set at R is a ball centred at c = R/(1 − σ₁²) > R along x₁ − x₀;
moving x₁ to any R′ in [R, c] brings N(x₁, σ₁²I) toward the ball's centre, which by Anderson's
theorem does not lower the ball's mass, so ξ(R′) ≥ ξ(R), and steps of ratio 1/(1 − σ₁²) reach any
R′ > R; for σ₁ > σ₀ the set is the outside of a ball centred behind x₀, from which x₁ moves away.
And ξ is L-Lipschitz in u = log σ₁ with L = E(χ²_d − d)₊ = 2d·f_{χ²_d}(d) (d/du of P₁(B) is
E[1_B(‖w‖² − d)] for any set B, so the supremum ξ moves no faster), which bounds it between the
points where it is evaluated. The edge's two ends σ₀e^{±rR} do not suffice: ξ is not monotone in
σ₁ between them (it dips just below σ₀), so :func:`edge_certified` bounds the whole edge by branch
and bound.
Every probability is the noncentral chi-squared of ``scipy.special.chndtr`` (Boost's, as
``scipy.stats.ncx2``, without its overhead), in float64; a quantile that does not give back its
probability, or a value that is not finite, counts as ξ = 1 (no certificate).
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
from scipy.spatial.distance import pdist
from scipy.special import chndtr, chndtrix, ndtr, ndtri
from scipy.stats import chi2

#: |log σ₁/σ₀| below which ξ is bounded from σ₁ = σ₀ by the Lipschitz constant: the noncentrality
#: R²/γ² passes 10¹⁰ there and Boost's series no longer converges
EXACT_BAND = 1e-5
#: the noncentralities R²/γ² past which :func:`edge_certified` bounds ξ from σ₁ = σ₀, in turn, before
#: :data:`EXACT_BAND` (Boost's quantile costs 0.1 ms at 10⁶, 10 ms at 10⁸, 40 ms at 10⁹)
BAND_NONCENTRALITIES = (1e6, 1e8)
#: evaluations of ξ one edge may spend before it counts as not certified
EDGE_BUDGET = 400
#: bisection tolerance, relative to σ (radius) or to the semi-elasticity found
TOLERANCE = 1e-4


def worst_case_probability(distance: float, log_ratio: float, p_lower: float, dim: int) -> float:
    """ξ: the most mass N(x₁, σ₁²I) can put outside the class A when N(x₀, σ₀²I) gives A at least
    ``p_lower``, with ``distance`` = ‖x₁ − x₀‖/σ₀ and ``log_ratio`` = log σ₁/σ₀, in dimension ``dim``."""
    p_other = 1.0 - p_lower
    if log_ratio == 0.0:
        return float(ndtr(distance - ndtri(p_lower)))
    gap = abs(math.expm1(2.0 * log_ratio))
    lam0, lam1 = (distance / gap) ** 2, (distance * math.exp(log_ratio) / gap) ** 2
    scale = math.exp(-2.0 * log_ratio)
    with np.errstate(all="ignore"):
        if log_ratio < 0:
            quantile = chndtrix(p_other, dim, lam0)
            kept, value = chndtr(quantile, dim, lam0), chndtr(quantile * scale, dim, lam1)
        else:
            quantile = chndtrix(p_lower, dim, lam0)
            kept, value = 1.0 - chndtr(quantile, dim, lam0), 1.0 - chndtr(quantile * scale, dim, lam1)
    if not (np.isfinite(value) and kept >= p_other * (1 - 1e-9)):
        return 1.0
    return float(value)


def lipschitz_constant(dim: int) -> float:
    """The Lipschitz constant of ξ in log σ₁: E(X − d)₊ = 2d·f(d) for X ~ χ²_d."""
    return math.exp(math.log(2.0 * dim) + chi2.logpdf(dim, dim))


def edge_certified(distance: float, half_width: float, p_lower: float, dim: int) -> bool:
    """Whether ξ(distance, σ₁) < ½ for every |log σ₁/σ₀| ≤ ``half_width`` (``distance`` in units of
    σ₀), proven by branch and bound (:func:`_branch_and_bound`): first with the band around σ₀ where
    the noncentrality passes each of :data:`BAND_NONCENTRALITIES` bounded from σ₀ (cheap, looser),
    then with :data:`EXACT_BAND` (tighter; Boost's quantiles there take tens of milliseconds)."""
    if half_width < EXACT_BAND:
        return _ends_below_half(distance, half_width, p_lower, dim)
    bands = [distance / (2.0 * math.sqrt(noncentrality)) for noncentrality in BAND_NONCENTRALITIES]
    bands = [band for band in bands if EXACT_BAND < band < half_width] + [EXACT_BAND]
    return any(_branch_and_bound(distance, half_width, p_lower, dim, band) for band in bands)


def _branch_and_bound(distance: float, half_width: float, p_lower: float, dim: int, band: float) -> bool:
    """ξ < ½ on the edge, proven with ξ ≤ (ξ(a) + ξ(b))/2 + L(b − a)/2 on each interval [a, b],
    intervals split until the bound holds; within ±``band`` only σ₀ and the band's ends are evaluated
    (those intervals are not split). False when a point reaches ½, an interval within the band fails,
    or more than :data:`EDGE_BUDGET` evaluations would be needed."""
    lipschitz, values = lipschitz_constant(dim), {}

    def xi(u: float) -> float:
        if u not in values:
            values[u] = worst_case_probability(distance, u, p_lower, dim)
        return values[u]

    pending = [(-half_width, -band), (-band, 0.0), (0.0, band), (band, half_width)]
    while pending:
        lo, hi = pending.pop()
        ends = xi(lo), xi(hi)
        if max(ends) >= 0.5 or len(values) > EDGE_BUDGET:
            return False
        if sum(ends) / 2 + lipschitz * (hi - lo) / 2 >= 0.5:
            if -band <= lo < hi <= band:
                return False
            pending += [(lo, (lo + hi) / 2), ((lo + hi) / 2, hi)]
    return True


def _ends_below_half(distance: float, half_width: float, p_lower: float, dim: int) -> bool:
    """Whether ξ < ½ at both ends σ₀e^{±half_width} of the edge: necessary for :func:`edge_certified`.
    Inside :data:`EXACT_BAND` it is the bound ξ(σ₀) + L·half_width on the whole edge, sufficient too."""
    if half_width < EXACT_BAND:
        return worst_case_probability(distance, 0.0, p_lower, dim) + lipschitz_constant(dim) * half_width < 0.5
    return all(worst_case_probability(distance, u, p_lower, dim) < 0.5 for u in (-half_width, half_width))


def _largest(certified, low: float, high: float, tolerance: float) -> float:
    """The largest s in [``low``, ``high``] with ``certified(s)``, for a property that holds on an
    interval [0, s*): bisection on the edge's two ends (where they fail, s ≥ s*), then the
    branch-and-bound proof, stepping down from the estimate until it holds (0 if it never does)."""
    while high - low > tolerance:
        middle = (low + high) / 2
        low, high = (middle, high) if certified(middle, proof=False) else (low, middle)
    step = tolerance
    while low > 0 and not certified(low, proof=True):
        low, step = max(low - step, 0.0), 2 * step
    return low


def semi_elastic_radius(p_lower: float, sigma: float, rate: float, dim: int) -> float:
    """The ℓ2 radius Súkeník et al.'s theorem certifies around x₀ for a ``rate``-semi-elastic σ(·)
    with σ(x₀) = ``sigma`` and p_A ≥ ``p_lower`` (Clopper–Pearson, as CERTIFY) in dimension ``dim``:
    the largest R with ξ < ½ on the edge |log σ₁/σ₀| ≤ rR, to within :data:`TOLERANCE`·σ below.
    ``rate`` = 0 gives Cohen et al.'s σΦ⁻¹(p̲); p̲ ≤ ½ (an abstention) gives 0."""
    if not (sigma > 0 and rate >= 0 and dim >= 1 and 0 <= p_lower < 1):
        raise ValueError(f"need σ > 0, r ≥ 0, d ≥ 1 and 0 ≤ p̲ < 1, got σ={sigma}, r={rate}, d={dim}, p̲={p_lower}")
    if p_lower <= 0.5:
        return 0.0
    cohen = float(ndtri(p_lower))
    if rate == 0:
        return sigma * cohen

    def certified(distance: float, proof: bool) -> bool:
        check = edge_certified if proof else _ends_below_half
        return check(distance, rate * sigma * distance, p_lower, dim)

    return sigma * _largest(certified, 0.0, cohen, TOLERANCE)


def max_semi_elasticity(radius: float, p_lower: float, sigma: float, dim: int) -> float:
    """The largest semi-elasticity r for which Súkeník et al.'s certificate still reaches ``radius``
    at (``p_lower``, ``sigma``, ``dim``) (the inverse of :func:`semi_elastic_radius` in r, to within
    :data:`TOLERANCE` relative, from below): ∞ at radius 0, 0 at Cohen's radius σΦ⁻¹(p̲); a radius
    beyond Cohen's is reached by no r and refused."""
    if not (sigma > 0 and dim >= 1 and radius >= 0 and 0.5 < p_lower < 1):
        raise ValueError(f"need σ > 0, d ≥ 1, R ≥ 0 and ½ < p̲ < 1, got σ={sigma}, d={dim}, R={radius}, p̲={p_lower}")
    distance, cohen = radius / sigma, float(ndtri(p_lower))
    if distance > cohen * (1 + 1e-12):
        raise ValueError(f"radius {radius} exceeds Cohen's σΦ⁻¹(p̲) = {sigma * cohen}: no semi-elasticity reaches it")
    if distance == 0:
        return math.inf
    if distance >= cohen:
        return 0.0
    low, high = 0.5, 1.0  # half-widths of the edge (log σ₁/σ₀), moved until the ends pass at low and fail at high
    while _ends_below_half(distance, high, p_lower, dim):
        low, high = high, 2 * high
    while not _ends_below_half(distance, low, p_lower, dim):
        low, high = low / 2, low

    def certified(half_width: float, proof: bool) -> bool:
        check = edge_certified if proof else _ends_below_half
        return check(distance, half_width, p_lower, dim)

    return _largest(certified, low, high, TOLERANCE * low) / radius


class SemiElasticDesign(Protocol):
    """A σ(x) with a proven semi-elasticity (:class:`ddrs.core.distance_sigma.DistanceSigma`)."""

    @property
    def semi_elasticity(self) -> float: ...

    def log_sigmas(self, points: np.ndarray) -> np.ndarray: ...


def measured_semi_elasticity(points: np.ndarray, log_sigmas: np.ndarray) -> float:
    """The largest |log σ(x) − log σ(x′)| / ‖x − x′‖ over all pairs of distinct ``points`` (flattened)."""
    flat = np.asarray(points, dtype=np.float64).reshape(len(points), -1)
    distance = pdist(flat)
    change = pdist(np.asarray(log_sigmas, dtype=np.float64)[:, None], "cityblock")
    ratio = np.divide(change, distance, out=np.zeros_like(change), where=distance > 0)
    return float(ratio.max(initial=0.0))


def check_semi_elasticity(design: SemiElasticDesign, points: np.ndarray, rate: float, seed: int) -> float:
    """Refuse a σ(x) the certificate at semi-elasticity ``rate`` does not cover: one whose proven
    constant exceeds ``rate``, or whose measured ratio (:func:`measured_semi_elasticity`) exceeds it
    over the ``points`` and a copy of each moved by a ``seed``-ed random offset of norm 10⁻³ to 1.
    Returns the largest ratio measured (a necessary check: pairs cannot prove the constant)."""
    if design.semi_elasticity > rate:
        raise ValueError(
            f"σ(x) is {design.semi_elasticity:g}-semi-elastic but the certificate assumes r = {rate:g}: "
            "certify with the design's own rate"
        )
    flat = np.asarray(points, dtype=np.float64).reshape(len(points), -1)
    rng = np.random.default_rng(seed)
    direction = rng.standard_normal(flat.shape)
    norm = 10.0 ** rng.uniform(-3.0, 0.0, size=(len(flat), 1))
    moved = flat + direction / np.linalg.norm(direction, axis=1, keepdims=True) * norm
    both = np.concatenate([flat, moved])
    measured = measured_semi_elasticity(both, design.log_sigmas(both))
    if measured > rate * (1 + 1e-9):
        raise ValueError(
            f"σ(x) changes by up to {measured:.6g}·‖x − x′‖ in log on the certified inputs, more than the "
            f"semi-elasticity r = {rate:g} the certificate assumes: it is not {rate:g}-semi-elastic"
        )
    return measured
