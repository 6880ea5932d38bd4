"""Sequential CERTIFY: time-uniform bounds on p_A and the rule that stops drawing (numpy only).

Cohen et al.'s CERTIFY (2019, §3.2.2) spends n estimation draws on every input. Here the draws
come in looks at fixed totals N_1 < N_2 < … ≤ n (:func:`look_schedule`); after each look an input
has A correct draws (its class c_A, chosen from n0 *earlier* selection draws that are never
counted again) of N, and a confidence sequence gives bounds L_k ≤ p_A ≤ U_k that hold at every
look at once with probability ≥ 1 − α. Any stopping rule keeps the certificate σΦ⁻¹(L) of the look
where it stops sound (Proposition 2 with p̲_A = L), which is what lets :func:`decide` stop each
input as soon as every radius of the run's grid is decided. Three sequences
(:data:`CONFIDENCE_SEQUENCES`; ``docs/protocol.md``, "Sequential certification", has the formulas):

- :class:`BettingSequence`: the Krichevsky–Trofimov betting martingale of Voráček (NeurIPS 2024,
  arXiv 2406.17830, Algorithm 2; RS_conf_seq ``thresholds.get_upper_threshold``), i.e. the
  Beta(½, ½) mixture of Bernoulli likelihood ratios, a betting confidence sequence in the sense
  of Waudby-Smith & Ramdas (JRSS-B 2023, §3–4), inverted in closed form;
- :class:`UnionBoundSequence`: Clopper–Pearson at look k at level α_k = 5α/((k+4)(k+5)), which
  sums to α (Voráček's ``get_upper_threshold_ub``): the simpler cross-check;
- :class:`BettingWithFixedCap`: the betting sequence at α/2, whose lower bound at the cap is
  raised to fixed-n Clopper–Pearson's at α/2, so an input that needs every draw loses little
  against Cohen's CERTIFY.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import NamedTuple

import numpy as np
from scipy.special import betaln

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

    def __init__(self, alpha: float, cap: int):
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
        self.alpha = alpha
        #: the last look's draws (CERTIFY's n)
        self.cap = cap

    @abstractmethod
    def bounds(self, correct: np.ndarray, draws: np.ndarray, look: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` on p after ``correct`` of ``draws`` at look ``look``."""


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

    def bounds(self, correct, draws, look):
        a, n = np.broadcast_arrays(np.asarray(correct, dtype=float), np.asarray(draws, dtype=float))
        log_mixture = betaln(a + 0.5, n - a + 0.5) - betaln(0.5, 0.5)
        centre = a / n

        def excluded(p):  # log M_N(p) ≥ log(1/α), written without 0·log 0
            with np.errstate(divide="ignore", invalid="ignore"):
                log_likelihood = np.where(a > 0, a * np.log(p), 0.0) + np.where(n > a, (n - a) * np.log1p(-p), 0.0)
            return log_mixture - log_likelihood >= math.log(1 / self.alpha)

        lower = self._crossing(excluded, np.zeros_like(centre), centre)
        return lower, self._crossing(excluded, np.ones_like(centre), centre)

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

    def level(self, look):
        look = np.asarray(look, dtype=float)
        return 5 * self.alpha / ((look + 4) * (look + 5))

    def bounds(self, correct, draws, look):
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

    def bounds(self, correct, draws, look):
        lower, upper = self.betting.bounds(correct, draws, look)
        at_cap = np.asarray(draws) >= self.cap
        if at_cap.any():
            fixed_n = clopper_pearson_lower(correct, draws, self.alpha / 2)
            lower = np.where(at_cap, np.maximum(lower, fixed_n), lower)
        return lower, upper


#: the confidence sequences by name
CONFIDENCE_SEQUENCES: dict[str, type[ConfidenceSequence]] = {
    cls.name: cls for cls in (BettingSequence, UnionBoundSequence, BettingWithFixedCap)
}


def confidence_sequence(name: str, alpha: float, cap: int) -> ConfidenceSequence:
    """The confidence sequence ``name`` (:data:`CONFIDENCE_SEQUENCES`) at level ``alpha``, capped at ``cap`` draws."""
    try:
        return CONFIDENCE_SEQUENCES[name](alpha, cap)
    except KeyError:
        choices = sorted(CONFIDENCE_SEQUENCES)
        raise ValueError(f"unknown confidence sequence {name!r}; choose one of {choices}") from None


class Decision(NamedTuple):
    """What :func:`decide` makes of the inputs after a look (arrays of length B)."""

    #: stop drawing for this input now
    stop: np.ndarray
    #: the running lower bound max_{j ≤ k} L_j (every L_j holds at once, so their maximum does)
    lower: np.ndarray
    #: every radius of the grid is decided by the bounds themselves, or the input abstains (False:
    #: a radius was still in between at the last look, or the cap alone would have decided it)
    decided: np.ndarray


def decide(
    sequence: ConfidenceSequence,
    schedule: np.ndarray,
    look: np.ndarray,
    correct: np.ndarray,
    lower: np.ndarray,
    thresholds: np.ndarray,
    *,
    gain_below: np.ndarray | None = None,
    radius=None,
) -> Decision:
    """The stopping rule after look ``look`` (1-based, per input) with ``correct`` of ``schedule[look − 1]`` draws.

    ``lower`` is each input's running lower bound before this look (0 at the start) and
    ``thresholds`` ``(B, R)`` the least p̲_A certifying each radius of the grid
    (:meth:`ddrs.core.noise.SmoothingNoise.threshold`). Radius r is decided once L ≥ p_r
    (certified), U < p_r (out of reach), or L at the last look would stay below p_r even if
    every draw until then were correct. An input stops when every radius is decided, when
    U < ½ (it abstains), or at the last look. With ``gain_below`` (per input, in radius units)
    and ``radius`` (p̲_A → radius, per input), it goes on while the radius could still grow by
    more than that: while radius(min(U, best final L)) − radius(L) exceeds it.
    """
    draws = schedule[look - 1]
    last = len(schedule)
    new_lower, upper = sequence.bounds(correct, draws, look)
    lower = np.maximum(lower, new_lower)
    best_final, _ = sequence.bounds(correct + (schedule[-1] - draws), schedule[-1], last)
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
    return Decision(stop=stop, lower=lower, decided=decided)
