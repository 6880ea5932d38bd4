"""Sequential CERTIFY: time-uniform bounds on p_A and the rule that stops drawing (numpy only).

Cohen et al.'s CERTIFY (2019, §3.2.2) spends n estimation draws on every input. Here the draws
come in looks at fixed totals N_1 < N_2 < … ≤ n (:func:`look_schedule`); after each look an input
has A correct draws (its class c_A, chosen from n0 *earlier* selection draws that are never
counted again) of N, and a confidence sequence gives bounds L_k ≤ p_A ≤ U_k that hold at every
look at once with probability ≥ 1 − α. Any stopping rule keeps the certificate σΦ⁻¹(L) of the look
where it stops sound (Proposition 2 with p̲_A = L), which is what lets :func:`decide` stop each
input as soon as every radius of the run's grid is decided. The sequences built on a test
martingale hold at every *draw* at once (Ville's inequality), so :func:`decide` checks them at
every draw of a block (:func:`miss_prefixes`): the looks then only say when forward passes are
spent, and cost no overshoot beyond the block in which a decision is reached. Three sequences
and one grid test (:data:`CONFIDENCE_SEQUENCES`; ``docs/protocol.md``, "Sequential
certification", has the formulas):

- :class:`BettingSequence`: the Krichevsky–Trofimov betting martingale of Voráček (NeurIPS 2024,
  arXiv 2406.17830, Algorithm 2; RS_conf_seq ``thresholds.get_upper_threshold``), i.e. the
  Beta(½, ½) mixture of Bernoulli likelihood ratios, a betting confidence sequence in the sense
  of Waudby-Smith & Ramdas (JRSS-B 2023, §3–4), inverted in closed form;
- :class:`UnionBoundSequence`: Clopper–Pearson at look k at level α_k = 5α/((k+4)(k+5)), which
  sums to α (Voráček's ``get_upper_threshold_ub``): the simpler cross-check;
- :class:`BettingWithFixedCap`: the betting sequence at α/2, whose lower bound at the cap is
  raised to fixed-n Clopper–Pearson's at α/2, so an input that needs every draw loses little
  against Cohen's CERTIFY;
- :class:`GridTest` (the default): no interval for p_A but one test per radius of the grid, a
  mixture of likelihood ratios against its threshold p_r at α/4 with fixed-n Clopper–Pearson at
  3α/4 at the cap, combined by closed testing over the nested hypotheses p < p_r, so each radius
  gets the whole α; its bound, and so the certificate, takes the grid's values.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy.special import betaln, logsumexp, rel_entr

from ddrs.core.binomial import clopper_pearson_lower, clopper_pearson_upper

#: bisection steps of the betting bounds: 2⁻⁶⁰ of [0, 1], below float64's spacing near 1
_BISECTION_STEPS = 60


def look_schedule(first_look: int, growth: float, n: int) -> np.ndarray:
    """The looks' cumulative estimation draws: ``first_look``, then ×``growth`` (rounded up), last ``n``.

    Fixed before any draw and the same for every input, so a union bound over looks is valid and
    an input's row never depends on the inputs it shared a forward pass with.
    """
    if int(first_look) != first_look or first_look < 1:
        raise ValueError(f"first_look must be an integer >= 1, got {first_look}")
    if not growth > 1:
        raise ValueError(f"growth must be > 1, got {growth}")
    looks = [min(int(first_look), n)]
    while looks[-1] < n:
        looks.append(min(n, max(looks[-1] + 1, math.ceil(looks[-1] * growth))))
    return np.array(looks, dtype=np.int64)


class ConfidenceSequence(ABC):
    """Bounds on a Bernoulli mean from ``correct`` of ``draws`` at look ``look`` (1-based), holding
    at every look at once with probability ≥ 1 − ``alpha``; arrays broadcast elementwise."""

    name: str
    #: the lower bound only takes the grid's thresholds p_r, so the certificate is the grid radius r
    grid_valued = False
    #: the bounds hold at every draw at once, not only at the looks, so they may be checked at every
    #: draw (``ddrs.core.settings.LOOK_ONLY_SEQUENCES`` names the others)
    anytime = True

    def __init__(self, alpha: float, cap: int):
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
        self.alpha = alpha
        #: the last look's draws (CERTIFY's n)
        self.cap = cap

    @abstractmethod
    def bounds(
        self, correct: np.ndarray, draws: np.ndarray, look: np.ndarray, thresholds: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` on p after ``correct`` of ``draws`` at look ``look``; ``thresholds``
        ``(B, R)``, the grid's p_r, are what :class:`GridTest` tests (confidence sequences ignore them)."""

    def may_tighten(
        self, correct: np.ndarray, draws: np.ndarray, lower: np.ndarray, upper: np.ndarray, thresholds: np.ndarray
    ) -> np.ndarray:
        """False where the bounds after ``correct`` of ``draws`` (fewer than the cap) cannot beat the running
        ``lower`` and ``upper``: a cheap necessary condition that spares computing them (all True here)."""
        return np.ones(np.shape(correct), dtype=bool)


class BettingSequence(ConfidenceSequence):
    """{p : M_N(p) < 1/α}, M_N(p) = B(A + ½, N − A + ½) / (B(½, ½) · p^A (1 − p)^(N − A)).

    M_N(p) is the wealth of betting on each draw with the Krichevsky–Trofimov prediction
    q = (A + ½)/(N + 1) against p (Voráček 2024, Algorithm 2: the product of the predictions
    telescopes into the Beta(½, ½) marginal likelihood), a non-negative martingale with M_0 = 1
    under the true p. Ville's inequality bounds the chance that it ever reaches 1/α by α, so
    the true p lies in every set at once with probability ≥ 1 − α, lower and upper bound jointly
    (Waudby-Smith & Ramdas 2023, Theorem 3). log M_N is convex in p with its minimum (< 0) at A/N,
    so each bound is the one crossing on its side, found by bisection and rounded outwards.
    """

    name = "betting"

    def bounds(self, correct, draws, look, thresholds=None):
        excluded, centre = self._excluded(correct, draws)
        lower = self._crossing(excluded, np.zeros_like(centre), centre)
        return lower, self._crossing(excluded, np.ones_like(centre), centre)

    def may_tighten(self, correct, draws, lower, upper, thresholds=None):
        """L > ``lower`` needs ``lower`` excluded, M_N(lower) ≥ 1/α, on the centre's left; U < ``upper``
        needs ``upper`` excluded on its right (the bounds are the set's edges on either side)."""
        excluded, centre = self._excluded(correct, draws)
        return (centre > lower) & excluded(lower) | (centre < upper) & excluded(upper)

    def _excluded(self, correct, draws):
        """p ↦ M_N(p) ≥ 1/α after ``correct`` of ``draws`` (log M_N written without 0·log 0), and A/N."""
        a, n = np.broadcast_arrays(np.asarray(correct, dtype=float), np.asarray(draws, dtype=float))
        log_mixture, level = betaln(a + 0.5, n - a + 0.5) - betaln(0.5, 0.5), math.log(1 / self.alpha)

        def excluded(p):
            with np.errstate(divide="ignore", invalid="ignore"):
                log_likelihood = np.where(a > 0, a * np.log(p), 0.0) + np.where(n > a, (n - a) * np.log1p(-p), 0.0)
            return log_mixture - log_likelihood >= level

        return excluded, a / n

    @staticmethod
    def _crossing(excluded, end, centre):
        """Bisect between ``end`` of [0, 1] and ``centre`` (always in the set) for the set's edge on that
        side: returns the excluded point nearest it (or ``end`` when none is), so the bound errs outwards."""
        out, ins = end.copy(), centre.copy()
        for _ in range(_BISECTION_STEPS):
            middle = (out + ins) / 2
            rejected = excluded(middle)
            out = np.where(rejected, middle, out)
            ins = np.where(rejected, ins, middle)
        return out


class UnionBoundSequence(ConfidenceSequence):
    """One-sided Clopper–Pearson bounds at look k at level α_k = 5α/((k + 4)(k + 5)).

    Σ_k α_k = α (the sum telescopes: 5α Σ (1/(k+4) − 1/(k+5)) = α), so by the union bound each
    side holds at every look at once with probability ≥ 1 − α (Voráček 2024, §4, the union-bound
    baseline; RS_conf_seq ``thresholds.get_upper_threshold_ub``, ``alpha = lambda t: 5*alph/(t+4)/(t+5)``).
    """

    name = "union_cp"
    anytime = False  # α_k is spent per look: checked at every draw, the levels would not sum to α

    def level(self, look):
        look = np.asarray(look, dtype=float)
        return 5 * self.alpha / ((look + 4) * (look + 5))

    def bounds(self, correct, draws, look, thresholds=None):
        level = self.level(look)
        return clopper_pearson_lower(correct, draws, level), clopper_pearson_upper(correct, draws, level)


class BettingWithFixedCap(ConfidenceSequence):
    """The betting sequence at level α/2, its lower bound at the cap n raised to the one-sided
    Clopper–Pearson bound of the same n draws at level α/2.

    The betting set is wider at n than Clopper–Pearson's fixed-n bound (by a factor ~√(πn) on its
    all-correct tail), so an input whose p_A sits just above a radius's threshold stops as out of
    reach, or reaches the cap below the radius that fixed-n CERTIFY would certify. Both bounds hold
    for the same input's stream: P(∃k: p < L_k^betting) ≤ α/2 (Ville), and the Clopper–Pearson bound
    on its first n estimation draws is below p with probability ≤ α/2 whether or not the input
    stops before the cap (it is used only if it gets there), so by the union bound the lower bound
    holds at every look at once with probability ≥ 1 − α. The upper bound is the betting one: it
    only decides when to stop.
    """

    name = "betting_cp"

    def __init__(self, alpha: float, cap: int):
        super().__init__(alpha, cap)
        self.betting = BettingSequence(alpha / 2, cap)

    def may_tighten(self, correct, draws, lower, upper, thresholds=None):
        return self.betting.may_tighten(correct, draws, lower, upper) | (np.asarray(draws) >= self.cap)

    def bounds(self, correct, draws, look, thresholds=None):
        lower, upper = self.betting.bounds(correct, draws, look)
        at_cap = np.asarray(draws) >= self.cap
        if at_cap.any():
            fixed_n = clopper_pearson_lower(correct, draws, self.alpha / 2)
            lower = np.where(at_cap, np.maximum(lower, fixed_n), lower)
        return lower, upper


#: the grid test's alternatives for threshold p_r: q = 1 − ρ(1 − p_r), ρ = 0 (every draw correct)
#: with weight ¼, and the 48 mid-quantiles u² of ρ ~ Beta(½, 1) with ¾ between them (a prior dense
#: near ρ = 0, where the smoothed classifiers' p_A sit: the alternatives just above a high threshold)
_ALTERNATIVES = np.concatenate([[0.0], ((np.arange(48) + 0.5) / 48) ** 2])
_LOG_WEIGHTS = np.log(np.concatenate([[0.25], np.full(48, 0.75 / 48)]))


def log_likelihood_ratio_ceiling(correct: np.ndarray, draws: np.ndarray, p: np.ndarray) -> np.ndarray:
    """N·KL(Â ‖ p), Â = A/N: the log of the largest likelihood ratio (q/p)^A ((1 − q)/(1 − p))^(N − A)
    of any alternative q (q = Â attains it), so a ceiling on every mixture of them (inf at p ∈ {0, 1}
    unless Â = p)."""
    share = np.asarray(correct, dtype=float) / draws
    p = np.clip(p, 0.0, 1.0)
    return draws * (rel_entr(share, p) + rel_entr(1 - share, 1 - p))


def mixture_log_evidence(
    correct: np.ndarray, draws: np.ndarray, thresholds: np.ndarray, *, below: bool = False
) -> np.ndarray:
    """log E_r after ``correct`` of ``draws``, for each threshold p_r (``(B, R)``; correct, draws ``(B,)``).

    E_r = Σ_i w_i (q_i/p_r)^A ((1 − q_i)/(1 − p_r))^(N − A), a mixture of likelihood ratios of
    alternatives q_i against p_r. Against H_r: p ≤ p_r (the default) the alternatives lie above it,
    q_i = 1 − ρ_i(1 − p_r) (:data:`_ALTERNATIVES`, :data:`_LOG_WEIGHTS`); with ``below``, against
    p ≥ p_r, they lie below it, q_i = max(0, 1 − (1 − p_r)/ρ_i) with equal weights (ρ_i > 0). A factor's
    expectation under p, p q/p_r + (1 − p)(1 − q)/(1 − p_r), is linear in p and 1 at p = p_r, so ≤ 1
    on the null's side of p_r: E_r is a non-negative supermartingale with E_0 = 1 under every p of its
    null and, by Ville's inequality, reaches 1/a with probability ≤ a, at whatever draws it is looked
    at. −inf where p_r ≥ 1 (no p̲_A reaches it).
    """
    a = np.asarray(correct, dtype=float)[:, None, None]
    n = np.asarray(draws, dtype=float)[:, None, None] * np.ones_like(a)
    p = np.asarray(thresholds, dtype=float)[:, :, None]
    reachable = p < 1
    gap = np.where(reachable, 1 - p, 1.0)  # 1 − p_r, placeholder 1 where unreachable
    if below:
        rho, log_weights = _ALTERNATIVES[1:], np.full(len(_ALTERNATIVES) - 1, -math.log(len(_ALTERNATIVES) - 1))
        ratio = np.minimum(1 / rho, 1 / gap)  # (1 − q)/(1 − p_r), q ≥ 0
    else:
        rho, log_weights = _ALTERNATIVES, _LOG_WEIGHTS
        ratio = rho * np.ones_like(gap)
    with np.errstate(divide="ignore", invalid="ignore"):
        success = np.log1p(-ratio * gap) - np.log1p(-gap)  # log(q/p_r); −inf for q = 0
        log_terms = np.where(a > 0, a * success, 0.0) + np.where(n > a, (n - a) * np.log(ratio), 0.0)
    return np.where(reachable[..., 0], logsumexp(log_terms + log_weights, axis=-1), -np.inf)


class GridTest(ConfidenceSequence):
    """One sequential test per threshold p_r of the grid, combined by closed testing (no union bound).

    H_r: p < p_r is tested by the mixture :func:`mixture_log_evidence` at level (1 − s)α at every
    look, and at the cap also by fixed-n Clopper–Pearson at level sα, s = ``cap_share``: rejected
    when E_r ≥ 1/((1 − s)α) or, at n draws, CP_lower(A, n, sα) ≥ p_r. Each H_r's test has level α
    (union of the two, as in :class:`BettingWithFixedCap`). The default s = ¾ (α/2 each until issue
    60) spends most of α where the inputs that fixed n certifies near a threshold are decided: at the
    cap, whose critical value moves from z_{α/2} = 3.29 to z_{3α/4} = 3.17 (fixed n: 3.09), while the
    mixture's level moves from log(2/α) to log(4/α), 9 % more evidence (``docs/protocol.md``, "The
    split of α"). The hypotheses are nested (p < p_1 implies p < p_2 for p_1 < p_2),
    so closed testing (Marcus, Peritz & Gabriel 1976) needs no correction: the lower bound is the
    largest p_j whose H_j and every lower H_k are rejected (0 when H at ½ is not). It exceeds the true
    p only if the lowest true null, at the least p_r > p, is rejected: probability ≤ α, at every look
    at once, whatever the stopping rule (``docs/protocol.md``, "Sequential certification").
    The upper bound only decides when to stop (a radius out of reach), and soundness does not depend
    on it: just below the least p_r whose mirrored mixture (``below``) against p ≥ p_r reaches 1/α,
    since p < p_r then puts every higher threshold out of reach too (1 while none has).
    """

    name = "grid"
    grid_valued = True

    def __init__(self, alpha: float, cap: int, cap_share: float = 0.75):
        super().__init__(alpha, cap)
        if not 0 < cap_share < 1:
            raise ValueError(f"cap_share must lie in (0, 1), got {cap_share}")
        #: the share of α spent by the fixed-n Clopper–Pearson test at the cap, the rest by the mixture
        self.cap_share = cap_share
        #: the evidence E_r at which the mixture rejects H_r, 1/((1 − s)α)
        self.mixture_level = 1 / ((1 - cap_share) * alpha)

    def bounds(self, correct, draws, look, thresholds=None):
        if thresholds is None:
            raise ValueError("the grid test needs the grid's thresholds p_r")
        correct, draws = np.broadcast_arrays(np.asarray(correct, dtype=float), np.asarray(draws, dtype=float))
        thresholds = np.asarray(thresholds, dtype=float)
        rejected = self.rejected(correct, draws, thresholds)
        order = np.argsort(thresholds, axis=1)
        ordered = np.take_along_axis(thresholds, order, axis=1)
        closed = np.cumprod(np.take_along_axis(rejected, order, axis=1), axis=1).astype(bool)
        lower = np.where(closed, ordered, 0.0).max(axis=1)
        out_of_reach = mixture_log_evidence(correct, draws, thresholds, below=True) >= math.log(1 / self.alpha)
        upper = np.nextafter(np.where(out_of_reach, thresholds, np.inf).min(axis=1), 0.0)
        return lower, np.minimum(upper, 1.0)

    def may_tighten(self, correct, draws, lower, upper, thresholds):
        """Exactly where the bounds beat ``lower`` or ``upper``. Each factor of E_r, q_i/p_r = (1 − ρ_i)/p_r
        + ρ_i, falls as p_r grows and each mirrored one rises, so a lower threshold is rejected whenever
        a higher one is, and a higher one is out of reach whenever a lower one is: L > ``lower`` iff the
        least reachable p_r above it has E_r ≥ :attr:`mixture_level`, U < ``upper`` iff the largest p_r ≤ it
        has the mirrored E_r ≥ 1/α. Every mixture is at most exp(N·KL(Â ‖ p_r)) (:func:`log_likelihood_ratio_ceiling`),
        which screens the counts before those two E_r are computed."""
        correct, draws = np.asarray(correct, dtype=float), np.asarray(draws, dtype=float)
        reachable = thresholds < 1
        next_certified = np.where(reachable & (thresholds > lower[:, None]), thresholds, np.inf).min(axis=1)
        next_out_of_reach = np.where(reachable & (thresholds <= upper[:, None]), thresholds, -np.inf).max(axis=1)
        certifies = self._reaches(correct, draws, next_certified, self.mixture_level, below=False)
        rules_out = self._reaches(correct, draws, next_out_of_reach, 1 / self.alpha, below=True)
        return certifies | rules_out | (draws >= self.cap)

    @staticmethod
    def _reaches(correct, draws, threshold, level, *, below):
        """Whether the mixture against ``threshold`` (the mirrored one with ``below``; ±inf: none) reaches
        ``level``, computed only where the ceiling of :func:`log_likelihood_ratio_ceiling` allows it."""
        share = correct / draws
        with np.errstate(invalid="ignore"):  # the ceiling at ±inf is nan, where the share test is False anyway
            on_its_side = share < threshold if below else share > threshold
            screened = on_its_side & (log_likelihood_ratio_ceiling(correct, draws, threshold) >= math.log(level))
        rows = np.flatnonzero(screened)
        evidence = mixture_log_evidence(correct[rows], draws[rows], threshold[rows, None], below=below)[:, 0]
        screened[rows] = evidence >= math.log(level)
        return screened

    def rejected(self, correct: np.ndarray, draws: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
        """``(B, R)``: each H_r's local test (level α) rejects after ``correct`` of ``draws``."""
        rejected = mixture_log_evidence(correct, draws, thresholds) >= math.log(self.mixture_level)
        at_cap = draws >= self.cap
        if at_cap.any():
            fixed_n = clopper_pearson_lower(correct, draws, self.cap_share * self.alpha)
            rejected |= at_cap[:, None] & (fixed_n[:, None] >= thresholds)
        return rejected


#: the confidence sequences by name
CONFIDENCE_SEQUENCES: dict[str, type[ConfidenceSequence]] = {
    cls.name: cls for cls in (BettingSequence, UnionBoundSequence, BettingWithFixedCap, GridTest)
}


def confidence_sequence(name: str, alpha: float, cap: int) -> ConfidenceSequence:
    """The confidence sequence ``name`` (:data:`CONFIDENCE_SEQUENCES`) at level ``alpha``, capped at ``cap`` draws."""
    try:
        return CONFIDENCE_SEQUENCES[name](alpha, cap)
    except KeyError:
        choices = sorted(CONFIDENCE_SEQUENCES)
        raise ValueError(f"unknown confidence sequence {name!r}; choose one of {choices}") from None


def credited_correct(correct: np.ndarray, draws: np.ndarray, cap: int, futility: float = 0.0) -> np.ndarray:
    """The correct draws at the cap that :func:`decide` credits an input with ``correct`` of ``draws``
    when it asks whether a radius is still within reach.

    ``futility`` 0: every remaining draw, ``correct + (cap − draws)`` (curtailment: a radius is given
    up only when no stream could reach it). Else the futility rule: ``correct + ⌈(cap − draws) ·
    CP_upper(correct, draws, futility)⌉``, the remaining draws at the rate of the one-sided
    Clopper–Pearson upper bound on p_A at level β′ = ``futility``. Never more than curtailment's, so it
    stops no later and gives up radii only (``docs/protocol.md``, "Futility").
    """
    correct, draws = np.asarray(correct, dtype=np.int64), np.asarray(draws, dtype=np.int64)
    remaining = cap - draws
    if not futility:
        return correct + remaining
    rate = clopper_pearson_upper(correct, draws, futility)
    return correct + np.minimum(remaining, np.ceil(remaining * rate).astype(np.int64))


class Decision(NamedTuple):
    """What :func:`decide` makes of the inputs after a look (arrays of length B)."""

    #: stop drawing for this input now
    stop: np.ndarray
    #: the running lower bound, the largest L at any draw checked so far (every L holds at once, so
    #: their maximum does)
    lower: np.ndarray
    #: the running upper bound, the least U at any draw checked so far (it only decides when to stop)
    upper: np.ndarray
    #: every radius of the grid is decided by the bounds themselves, or the input abstains (False:
    #: a radius was still in between at the last look, or the cap alone would have decided it)
    decided: np.ndarray


def miss_prefixes(
    correct: np.ndarray, draws: np.ndarray, misses: Sequence[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The draws inside a block at which its bounds peak: ``(rows, correct, draws)``, just before and
    just after each miss.

    ``correct`` and ``draws`` count input b's draws before its block and ``misses[b]`` holds the
    positions (0-based, increasing) in the block of its draws that were not c_A. Along a run of draws
    of c_A every mixture E_r of :func:`mixture_log_evidence` grows (each factor is q/p_r > 1) and
    every mirrored one shrinks, along a run of misses the reverse; so over a block the grid test's
    largest lower bound falls just before a miss or at the block's end, and its least upper bound
    just after a miss or at the end. The betting bounds peak there too while L and U stay on their
    side of the Krichevsky–Trofimov estimate, which they do unless the counts are a handful.
    """
    lengths = np.array([len(m) for m in misses], dtype=np.int64)
    rows = np.repeat(np.arange(len(misses)), lengths)
    position = np.concatenate([np.asarray(m, dtype=np.int64) for m in misses]) if len(misses) else lengths
    earlier = np.arange(len(position)) - np.repeat(np.cumsum(lengths) - lengths, lengths)  # misses before it
    before = correct[rows] + position - earlier  # correct draws before the miss (and after it)
    at = draws[rows] + position
    inside = position > 0  # just before a block's first draw is the previous look, checked there
    return (
        np.concatenate([rows[inside], rows]),
        np.concatenate([before[inside], before]),
        np.concatenate([at[inside], at + 1]),
    )


def decide(
    sequence: ConfidenceSequence,
    schedule: np.ndarray,
    look: np.ndarray,
    correct: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    thresholds: np.ndarray,
    *,
    misses: Sequence[np.ndarray] | None = None,
    gain_below: np.ndarray | None = None,
    radius=None,
    futility: float = 0.0,
) -> Decision:
    """The stopping rule after look ``look`` (1-based, per input) with ``correct`` of ``schedule[look − 1]`` draws.

    ``lower`` and ``upper`` are each input's running bounds before this look (0 and 1 at the start)
    and ``thresholds`` ``(B, R)`` the least p̲_A certifying each radius of the grid
    (:meth:`ddrs.core.noise.SmoothingNoise.threshold`). With ``misses`` (per input, the positions in
    this look's block of its draws that were not c_A) the bounds are checked at every draw of the
    block (:func:`miss_prefixes`; an :attr:`~ConfidenceSequence.anytime` sequence only), else at the
    look alone. Radius r is decided once L ≥ p_r (certified), U < p_r (out of reach), or L at the
    last look would stay below p_r even with the correct draws :func:`credited_correct` credits the
    rest of the stream (every one with ``futility`` 0; else at the rate of their Clopper–Pearson
    upper bound at level ``futility``, the futility rule). The first two, once true at some draw,
    stay true, so stopping at the look decides what the first such draw would have; the third is
    judged at the look, on the draws already spent, and only ever gives a radius up. An input stops
    when every radius is decided, when U < ½ (it abstains), or at the last look. With ``gain_below``
    (per input, in radius units) and ``radius`` (p̲_A → radius, per input), it goes on while the
    radius could still grow by more than that: while radius(min(U, best final L)) − radius(L)
    exceeds it.
    """
    draws = schedule[look - 1]
    last = len(schedule)
    new_lower, new_upper = sequence.bounds(correct, draws, look, thresholds)
    lower, upper = np.maximum(lower, new_lower), np.minimum(upper, new_upper)
    if misses is not None:
        if not sequence.anytime:
            raise ValueError(f"{sequence.name} holds at its looks only; it cannot be checked at every draw")
        start = np.where(look > 1, schedule[np.maximum(look - 2, 0)], 0)  # each block's first draw
        rows, a, n = miss_prefixes(correct - (draws - start) + np.array([len(m) for m in misses]), start, misses)
        kept = sequence.may_tighten(a, n, lower[rows], upper[rows], thresholds[rows])
        rows, a, n = rows[kept], a[kept], n[kept]
        inside_lower, inside_upper = sequence.bounds(a, n, look[rows], thresholds[rows])
        np.maximum.at(lower, rows, inside_lower)
        np.minimum.at(upper, rows, inside_upper)
    credited = credited_correct(correct, draws, schedule[-1], futility)
    best_final, _ = sequence.bounds(credited, schedule[-1], last, thresholds)
    best_final = np.maximum(lower, best_final)
    at_cap = look >= last
    between = (lower[:, None] < thresholds) & (upper[:, None] >= thresholds)
    reachable = best_final[:, None] >= thresholds
    abstains = upper < 0.5
    stop = ~(between & reachable).any(axis=1) | abstains | at_cap
    decided = ~(between & (reachable | at_cap[:, None])).any(axis=1) | abstains
    if gain_below is not None:
        reachable = radius(np.minimum(upper, best_final))
        grows = reachable - radius(np.maximum(lower, 0.5)) > gain_below
        stop = stop & ~(grows & ~abstains & ~at_cap)
    return Decision(stop=stop, lower=lower, upper=upper, decided=decided)
