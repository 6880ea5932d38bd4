"""Sequential tests on paired Bernoulli streams: estimation draws until a radius is decided.

Each case is a base classifier right with probability p_A and one radius r of the grid (in units
of σ, threshold p_r = Φ(r)); every test reads the same streams (one per replicate, to the cap), so
the rows differ by the test alone:

- ``grid`` and ``betting_cp``: :func:`ddrs.core.sequential.decide` on the grid {0, r}, drawn in the
  pool's blocks (first look 32, ×1.1) and checked at every draw (``certify.sequential.checks:
  draw``), counting every draw up to the end of the block where it stops (the forward passes
  spent); ``grid`` also checked at the looks alone, with ×1.1 and with ×1.02 looks, which shows
  what the looks' overshoot costs;
- ``voracek, 2/α``: Voráček (NeurIPS 2024, arXiv 2406.17830) Algorithm 2, the Krichevsky–Trofimov
  bettor's wealth against p_r, M_t = Π_s (q_s/p_r)^X_s ((1 − q_s)/(1 − p_r))^(1 − X_s) with
  q_s = (A_{s−1} + ½)/s, checked after every draw, certifying r once M_t ≥ 2/α and A_t ≥ p_r t: the
  upper of two one-sided tests at α/2 each, the level ``betting_cp``'s betting sequence has (a reference row);
- ``voracek, 1/(2α)``: the same test at the level his published code uses (RS_conf_seq
  ``thresholds.get_upper_threshold`` compares log Q − log P with ``log(1/alpha/2)``), which Ville's
  inequality bounds at 2α per side, not α: the figures his code would report, for reference only;
- ``wald``: not a test but a floor, d(1 − β ‖ α)/KL(p_A ‖ p_r) with β = 0.01: the least expected
  draws of any test that rejects p ≤ p_r with probability ≤ α under p_r and certifies r with
  probability ≥ 1 − β under p_A (Wald 1947; E[log-likelihood ratio at the stop] ≥ the divergence of
  the decision's laws). It charges only the decision soundness requires, and p_A is known here.

    .venv/bin/python benchmarks/sequential_streams.py [--replicates 200] [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from _report import add_json_option, write_report
from scipy.special import betaln
from scipy.stats import norm
from tabulate import tabulate

from ddrs.core.sequential import ConfidenceSequence, confidence_sequence, decide, look_schedule
from ddrs.core.settings import SequentialSettings

ALPHA, CAP, BETA = 0.001, 100_000, 0.01
#: β′ of the futility row: the default's (``certify.sequential.futility``)
FUTILITY = SequentialSettings.futility
#: (p_A, radius in σ): the issue's cases, from an input far above its threshold to one always right
CASES = ((0.9, 1.0), (0.99, 2.0), (0.9999, 3.0), (1.0, 3.0))


def kl(p: float, q: float) -> float:
    """KL(Bernoulli(p) ‖ Bernoulli(q)), with 0 log 0 = 0."""
    return sum(a * math.log(a / b) for a, b in ((p, q), (1 - p, 1 - q)) if a > 0)


def wald_floor(p_a: float, threshold: float, alpha: float = ALPHA, beta: float = BETA) -> float:
    """d(1 − β ‖ α)/KL(p_A ‖ p_r): the least expected draws of a level-α test certifying with probability 1 − β."""
    return kl(1 - beta, alpha) / kl(p_a, threshold)


def streams(p_a: float, replicates: int, seed: int) -> np.ndarray:
    """Cumulative correct counts ``(replicates, CAP)`` of Bernoulli(p_A) draws."""
    rng = np.random.default_rng(seed)
    return (rng.random((replicates, CAP), dtype=np.float32) < p_a).cumsum(axis=1, dtype=np.int32)


def voracek_draws(counts: np.ndarray, threshold: float, level: float = 2 / ALPHA) -> np.ndarray:
    """Draws until the KT bettor's wealth against p_r reaches ``level``, checked after every draw (the cap if never)."""
    n = np.arange(1, CAP + 1, dtype=float)
    out = np.full(len(counts), CAP)
    for i, a in enumerate(counts.astype(float)):
        log_wealth = betaln(a + 0.5, n - a + 0.5) - betaln(0.5, 0.5) - a * math.log(threshold)
        log_wealth -= (n - a) * math.log1p(-threshold)
        hit = np.flatnonzero((log_wealth >= math.log(level)) & (a >= threshold * n))
        out[i] = n[hit[0]] if hit.size else CAP
    return out


def decide_draws(
    name: str, counts: np.ndarray, threshold: float, growth: float, checks: str = "draw", futility: float = 0.0
) -> np.ndarray:
    """Draws until :func:`decide` stops on the grid {0, r}, to the end of the look's block (the futility
    rule at β′ = ``futility``, 0: off)."""
    return run_decide(confidence_sequence(name, ALPHA, CAP), counts, threshold, growth, checks, futility)[0]


def run_decide(
    sequence: ConfidenceSequence,
    counts: np.ndarray,
    threshold: float,
    growth: float,
    checks: str = "draw",
    futility: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """``(draws, lower)`` of each stream: the draws until :func:`decide` stops on the grid {0, r}, to the end
    of the look's block, and the running lower bound there (r is certified where it is ≥ ``threshold``)."""
    schedule = look_schedule(32, growth, CAP)
    thresholds = np.broadcast_to([0.5, threshold], (len(counts), 2))
    lower, upper = np.zeros(len(counts)), np.ones(len(counts))
    spent = np.zeros(len(counts), dtype=int)
    active = np.ones(len(counts), dtype=bool)
    for look, (start, end) in enumerate(zip([0, *schedule[:-1]], schedule, strict=True), 1):
        rows = np.flatnonzero(active)
        if not rows.size:
            break
        before = counts[rows, start - 1] if start else np.zeros(len(rows), dtype=counts.dtype)
        block = np.diff(counts[rows, start:end], axis=1, prepend=before[:, None]) == 0
        misses = [np.flatnonzero(missed) for missed in block] if checks == "draw" else None
        decision = decide(
            sequence, schedule, np.full(len(rows), look), counts[rows, end - 1], lower[rows], upper[rows],
            thresholds[rows], misses=misses, futility=futility,
        )  # fmt: skip
        lower[rows], upper[rows] = decision.lower, decision.upper
        spent[rows] = end
        active[rows[decision.stop]] = False
    return spent, lower


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicates", type=int, default=200, help="streams per case")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="20 streams per case (a smoke run)")
    parser.add_argument("--tests", nargs="+", default=None, help="only these rows (default: every one)")
    add_json_option(parser)
    args = parser.parse_args()
    replicates = 20 if args.quick else args.replicates
    tests = {
        "grid": lambda c, t: decide_draws("grid", c, t, 1.1),
        f"grid, futility {FUTILITY:g}": lambda c, t: decide_draws("grid", c, t, 1.1, futility=FUTILITY),
        "grid, at the looks": lambda c, t: decide_draws("grid", c, t, 1.1, checks="look"),
        "grid, ×1.02 looks": lambda c, t: decide_draws("grid", c, t, 1.02, checks="look"),
        "betting_cp": lambda c, t: decide_draws("betting_cp", c, t, 1.1),
        "voracek, 2/α": voracek_draws,
        "voracek, 1/(2α)": lambda c, t: voracek_draws(c, t, level=1 / (2 * ALPHA)),
    }
    unknown = set(args.tests or ()) - set(tests)
    if unknown:
        parser.error(f"unknown --tests {sorted(unknown)}; choose among {list(tests)}")
    tests = {name: test for name, test in tests.items() if args.tests is None or name in args.tests}
    rows, figures = [], {}
    for case, (p_a, sigmas) in enumerate(CASES):
        threshold = float(norm.cdf(sigmas))
        counts = streams(p_a, replicates, args.seed + case)
        means = {name: float(test(counts, threshold).mean()) for name, test in tests.items()}
        means["wald"] = wald_floor(p_a, threshold)
        key = f"p{p_a:g}_r{sigmas:g}sigma"
        if "grid" in means and "betting_cp" in means:
            means["betting_cp_over_grid"] = means["betting_cp"] / means["grid"]
        figures[key] = means
        rows.append([f"{p_a:g}, {sigmas:g}σ", *(v if "over" in name else round(v) for name, v in means.items())])
    headers = ["p_A, radius", *means]
    print(f"mean estimation draws over {replicates} paired streams (α = {ALPHA}, cap {CAP:,}; wald: β = {BETA})")
    print(tabulate(rows, headers=headers, floatfmt=".2f", intfmt=","))
    write_report("sequential_streams", {"replicates": replicates, **figures}, args.json)


if __name__ == "__main__":
    main()
