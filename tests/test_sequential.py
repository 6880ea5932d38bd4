"""Sequential certification (ddrs.core.sequential, ddrs.core.sequential_pool): sound at every stop.

The soundness tests draw from base classifiers whose p_A is known exactly: a linear classifier
under Gaussian noise is right with probability p_A = Φ(margin/(σ‖w‖)) and its smoothed version is
the same linear classifier, robust exactly to radius σΦ⁻¹(p_A). Over 12,000 certificates per
procedure (a third of them with p_A at a radius of the grid, where a bound that overshoots certifies
beyond the truth), the share certified beyond the true radius must not exceed α beyond its
binomial interval. The statistical tests simulate the base classifier's right/wrong draws as
Bernoulli(p_A) with numpy, which is what the linear classifier's draws are, through the same
stopping rule the pool runs; the pool itself is checked end to end on the linear classifier.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import norm
from torch import nn

from ddrs.core.binomial import clopper_pearson_lower
from ddrs.core.certificate import ABSTAIN
from ddrs.core.device import BaseClassifier
from ddrs.core.seeds import Stream
from ddrs.core.sequential import (
    CONFIDENCE_SEQUENCES,
    ConfidenceSequence,
    GridTest,
    confidence_sequence,
    decide,
    look_schedule,
    miss_prefixes,
    mixture_log_evidence,
)
from ddrs.core.sequential_pool import certify_sequentially
from ddrs.core.settings import (
    LOOK_ONLY_SEQUENCES,
    SEQUENCES,
    CertifySettings,
    DeviceSettings,
    SequentialSettings,
)
from ddrs.core.streams import input_streams

ALPHA = 0.1  # large enough that an unsound bound fails the test with 12,000 certificates
RADII = np.array([0.0, 0.25, 0.5, 1.0])  # in units of σ = 1
N0, CAP = 20, 2000
CPU = torch.device("cpu")


def true_radii(count: int) -> np.ndarray:
    """A third of the inputs exactly at a grid radius (p_A = Φ(r)), the rest spread between."""
    rng = np.random.default_rng(1)
    at_grid = RADII[1:][rng.integers(0, len(RADII) - 1, count // 3)]
    return np.concatenate([at_grid, rng.uniform(0.02, 1.3, count - len(at_grid))])


def simulate(
    sequence: str | ConfidenceSequence,
    radius: np.ndarray,
    seed: int,
    checks: str = "draw",
    futility: float = SequentialSettings.futility,
):
    """Certify inputs of true radius ``radius`` (σ = 1) sequentially, each drawing its own Bernoulli(p_A)
    stream, checked at every draw of a look's block (``checks="draw"``) or at the looks alone, with the
    futility rule at β′ = ``futility`` (the default's unless given; 0: off).

    Returns the certified radii (0 on abstain), whether the returned class is the right one, and the
    estimation draws each input spent.
    """
    rng = np.random.default_rng(seed)
    p_a = norm.cdf(radius)
    sequence = confidence_sequence(sequence, ALPHA, CAP) if isinstance(sequence, str) else sequence
    schedule = look_schedule(8, 1.1, CAP)
    selection = rng.binomial(N0, p_a)
    right_class = selection * 2 > N0  # c_A, the top class of the selection draws
    p_correct = np.where(right_class, p_a, 1 - p_a)
    missed = rng.random((len(radius), CAP), dtype=np.float32) >= p_correct[:, None]  # drawn before any look
    thresholds = np.broadcast_to(norm.cdf(RADII), (len(radius), len(RADII)))
    correct = np.zeros(len(radius), dtype=int)
    lower, upper = np.zeros(len(radius)), np.ones(len(radius))
    spent = np.zeros(len(radius), dtype=int)
    active = np.ones(len(radius), dtype=bool)
    for look, (start, end) in enumerate(zip([0, *schedule[:-1]], schedule, strict=True), 1):
        rows = np.flatnonzero(active)
        block = missed[rows, start:end]
        correct[rows] += (end - start) - block.sum(axis=1)
        spent[rows] = end
        where, position = np.nonzero(block)
        misses = np.split(position, np.cumsum(np.bincount(where, minlength=len(rows)))[:-1])
        decision = decide(
            sequence, schedule, np.full(len(rows), look), correct[rows], lower[rows], upper[rows], thresholds[rows],
            misses=misses if checks == "draw" else None, futility=futility,
        )  # fmt: skip
        lower[rows], upper[rows] = decision.lower, decision.upper
        active[rows[decision.stop]] = False
    certified = np.where(lower >= 0.5, norm.ppf(np.maximum(lower, 0.5)), 0.0)
    return certified, right_class, spent


def simulate_fixed(radius: np.ndarray, seed: int):
    """Cohen's CERTIFY at n = CAP on the same inputs: the Clopper–Pearson bound at level α."""
    rng = np.random.default_rng(seed)
    p_a = norm.cdf(radius)
    right_class = rng.binomial(N0, p_a) * 2 > N0
    count = rng.binomial(CAP, np.where(right_class, p_a, 1 - p_a))
    lower = clopper_pearson_lower(count, CAP, ALPHA)
    return np.where(lower >= 0.5, norm.ppf(np.maximum(lower, 0.5)), 0.0), right_class


def unsound_share(certified: np.ndarray, right_class: np.ndarray, radius: np.ndarray) -> tuple[int, int]:
    """Certificates that are wrong: beyond the true radius, or of the wrong class (any radius)."""
    beyond = certified > radius * (1 + 1e-12)  # not where σΦ⁻¹(Φ(r/σ)) rounds past a grid radius r
    wrong = (beyond & right_class) | ((certified > 0) & ~right_class)
    return int(wrong.sum()), len(radius)


def assert_at_most_alpha(wrong: int, total: int, alpha: float = ALPHA) -> None:
    """The share's one-sided 99.9% Clopper–Pearson lower bound stays at or below α."""
    assert clopper_pearson_lower(wrong, total, 0.001) <= alpha, f"{wrong} of {total} certificates unsound"


def checks_of(sequence: str) -> str:
    """Every draw where the sequence holds there, else the looks."""
    return "look" if sequence in LOOK_ONLY_SEQUENCES else "draw"


@pytest.mark.parametrize("sequence", SEQUENCES)
def test_sequential_certificates_beyond_the_true_radius_are_at_most_alpha(sequence):
    radius = true_radii(12_000)
    certified, right_class, _ = simulate(sequence, radius, seed=2, checks=checks_of(sequence))
    assert_at_most_alpha(*unsound_share(certified, right_class, radius))
    assert (certified > 0).mean() > 0.5  # the test has power: most inputs certify some radius


@pytest.mark.parametrize("sequence", ["grid", "betting_cp"])
def test_checking_every_draw_stops_no_later_and_certifies_no_less_on_the_same_streams(sequence):
    """The running bounds at every draw include those at the looks, so on the same streams no input
    stops at a later look or with a lower bound; some stop earlier (the looks' overshoot), and at the
    threshold's edge (true radius just below a grid radius) the draw checks stay sound."""
    radius = np.concatenate([true_radii(1500), np.repeat(RADII[1:], 500) - 0.001])
    at_looks, _, looks_spent = simulate(sequence, radius, seed=7, checks="look")
    at_draws, right_class, draws_spent = simulate(sequence, radius, seed=7, checks="draw")
    assert (draws_spent <= looks_spent).all() and draws_spent.mean() < looks_spent.mean()
    assert (at_draws[draws_spent == looks_spent] >= at_looks[draws_spent == looks_spent]).all()
    assert_at_most_alpha(*unsound_share(at_draws, right_class, radius))


@pytest.mark.parametrize(("sequence", "futility"), [("grid", 0.01), ("grid", 0.4), ("betting_cp", 0.01)])
def test_futility_stops_no_later_and_never_raises_a_radius_on_the_same_streams(sequence, futility):
    """The futility rule only gives radii up: on the same streams as with it off, no input stops later
    or certifies a larger radius, many stop earlier, and the certificates stay sound even at β′ = 0.4
    (inputs spread over the grid and just below every threshold, where a bound that overshoots errs)."""
    radius = np.concatenate([true_radii(1500), np.repeat(RADII[1:], 500) - 0.001])
    off, _, off_spent = simulate(sequence, radius, seed=8, futility=0.0)
    on, right_class, on_spent = simulate(sequence, radius, seed=8, futility=futility)
    assert (on_spent <= off_spent).all() and on_spent.mean() < 0.9 * off_spent.mean()
    assert (on <= off).all() and (on < off).any()
    assert_at_most_alpha(*unsound_share(on, right_class, radius))


def certifies_at_looks(p: float, futility: float, streams: int, seed: int, n: int = 100_000, alpha: float = 0.001):
    """Whether ``grid`` certifies r = 1 (σ = 1, grid {0, 1}) on each of ``streams`` Bernoulli(p) streams
    at the default's looks, n and α, checked at the looks (where the futility rule is judged); the
    counts at the looks are drawn as binomial increments, the same for every ``futility``."""
    schedule = look_schedule(SequentialSettings.first_look, SequentialSettings.growth, n)
    test = confidence_sequence("grid", alpha, n)
    rng = np.random.default_rng(seed)
    counts = rng.binomial(np.diff(schedule, prepend=0), p, size=(streams, len(schedule))).cumsum(axis=1)
    thresholds = np.broadcast_to(norm.cdf([0.0, 1.0]), (streams, 2))
    lower, upper = np.zeros(streams), np.ones(streams)
    active = np.ones(streams, dtype=bool)
    for look in range(1, len(schedule) + 1):
        rows = np.flatnonzero(active)
        decision = decide(
            test, schedule, np.full(len(rows), look), counts[rows, look - 1], lower[rows], upper[rows],
            thresholds[rows], futility=futility,
        )  # fmt: skip
        lower[rows], upper[rows] = decision.lower, decision.upper
        active[rows[decision.stop]] = False
    return lower >= norm.cdf(1.0)


def test_futility_costs_an_input_just_above_a_threshold_at_most_the_stated_power():
    """``docs/protocol.md``, "Futility": at p_A = Φ(1) + 3.5 SE (SE = √(p(1 − p)/n) at Φ(1), n = 100,000),
    where fixed n certifies r = 1 with probability 0.661, the default β′ = 0.001 loses at most 0.05 of
    ``grid``'s power to certify it. 2,000 paired streams: the loss is the share of streams that certify
    r = 1 with the rule off and not with it on (a stream never gains, by the test above)."""
    n, threshold = 100_000, norm.cdf(1.0)
    p = threshold + 3.5 * np.sqrt(threshold * (1 - threshold) / n)
    off = certifies_at_looks(p, 0.0, 2000, seed=12)
    on = certifies_at_looks(p, SequentialSettings.futility, 2000, seed=12)
    assert not (on & ~off).any()
    assert 0.5 < off.mean() < 0.661  # the point is where power is moderate
    assert 0.005 < (off & ~on).mean() <= 0.05, f"futility lost {(off & ~on).mean():.3f} of the power"


def test_the_grid_test_spends_three_quarters_of_alpha_at_the_cap_and_a_quarter_before():
    """``docs/protocol.md``, "The split of α": 99 wrong of 100,000 at σ = 0.5 are the most with which
    Clopper–Pearson certifies r = 1.5 at 3α/4 (fixed n at α allows 100, α/2 only 97); the default
    grid test certifies 1.5 there as fixed n does, the ½/½ split of earlier versions only 1.25. Before
    the cap a threshold falls once its mixture reaches 4/α, where ½/½ needed 2/α."""
    cap, alpha, sigma = 100_000, 0.001, 0.5
    thresholds = norm.cdf(np.array([[0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]]) / sigma)
    default, halves = GridTest(alpha, cap), GridTest(alpha, cap, cap_share=0.5)
    correct = np.array([cap - 99])
    assert sigma * norm.ppf(clopper_pearson_lower(correct, cap, alpha)) >= 1.5
    assert default.bounds(correct, np.array([cap]), 90, thresholds)[0] == thresholds[0, 6]  # r = 1.5
    assert halves.bounds(correct, np.array([cap]), 90, thresholds)[0] == thresholds[0, 5]  # r = 1.25
    draws = np.arange(1, 20_000)  # every draw correct: E_r grows draw by draw
    evidence = mixture_log_evidence(draws, draws, np.broadcast_to(thresholds[:, 6:7], (len(draws), 1)))[:, 0]
    for test, level in ((default, 4 / alpha), (halves, 2 / alpha)):
        first = np.argmax(evidence >= math.log(level))  # the first draw whose mixture reaches the level
        assert 0 < first < len(draws) - 1
        pair = draws[first - 1 : first + 1]
        lower = test.bounds(pair, pair, 1, thresholds[[0, 0]])[0]
        assert lower[0] < thresholds[0, 6] <= lower[1]
    with pytest.raises(ValueError, match="cap_share must lie in"):
        GridTest(alpha, cap, cap_share=1.0)


class PerLookClopperPearsonGrid(GridTest):
    """A planted error: each threshold's local test is Clopper–Pearson at level α at every look (or
    every draw), as if each were the only one; the chances to cross add up far beyond α."""

    may_tighten = ConfidenceSequence.may_tighten  # the grid's screen knows only its own mixtures

    def rejected(self, correct, draws, thresholds):
        return clopper_pearson_lower(correct, draws, self.alpha)[:, None] >= thresholds


def test_the_grid_test_is_sound_just_below_every_threshold():
    """6,000 inputs each just below a radius of the grid (true radius r − 0.001), where a grid test
    errs by certifying r, checked at every draw: twice the inputs on which the next test's planted
    error is caught."""
    radius = np.repeat(RADII[1:], 2000) - 0.001
    assert_at_most_alpha(*unsound_share(*simulate("grid", radius, seed=4)[:2], radius))


@pytest.mark.parametrize("checks", ["look", "draw"])
def test_the_soundness_check_catches_a_grid_test_with_per_look_clopper_pearson(checks):
    """On 3,000 inputs like those of the test above, the planted error is caught, checked at the looks
    or at every draw."""
    radius = np.repeat(RADII[1:], 1000) - 0.001
    certified, right_class, _ = simulate(PerLookClopperPearsonGrid(ALPHA, CAP), radius, seed=2, checks=checks)
    wrong, total = unsound_share(certified, right_class, radius)
    assert clopper_pearson_lower(wrong, total, 0.001) > ALPHA, f"only {wrong} of {total} unsound: the check is blind"


def test_the_grid_test_certifies_grid_radii_and_gives_each_threshold_the_whole_alpha():
    """Closed testing over nested hypotheses: with p_A just above every threshold's reach, the grid
    test's bound is the largest threshold whose test and every lower one reject, never between two."""
    test = GridTest(ALPHA, CAP)
    thresholds = norm.cdf(RADII)[None, :].repeat(3, axis=0)
    lower, upper = test.bounds(np.array([5, 400, 2000]), np.array([10, 500, 2000]), 1, thresholds)
    assert lower[0] == 0.0 and lower[1] == thresholds[0, 2] and lower[2] == thresholds[0, -1]
    assert (upper >= lower).all()
    with pytest.raises(ValueError, match="needs the grid's thresholds"):
        test.bounds(np.array([5]), np.array([10]), 1)


def test_fixed_n_certificates_beyond_the_true_radius_are_at_most_alpha():
    radius = true_radii(12_000)
    certified, right_class = simulate_fixed(radius, seed=3)
    assert_at_most_alpha(*unsound_share(certified, right_class, radius))


@pytest.mark.parametrize("name", ["betting", "betting_cp"])
def test_the_betting_bounds_hold_their_level_at_every_look_at_once(name):
    """The bounds of one Bernoulli(p) stream, looked at after every 5% more draws to the cap 2,000,
    leave p in at most α of 4,000 streams (Ville's inequality; for ``betting_cp`` with the fixed-n
    bound at the cap, by the union bound), lower and upper bound together."""
    rng = np.random.default_rng(5)
    sequence = confidence_sequence(name, ALPHA, CAP)
    p = 0.8
    correct = (rng.random((4000, 2000)) < p).cumsum(axis=1)
    n = look_schedule(1, 1.05, 2000)
    lower, upper = sequence.bounds(correct[:, n - 1], n[None, :], 1)
    missed = ((lower > p) | (upper < p)).any(axis=1)
    assert_at_most_alpha(int(missed.sum()), len(missed))
    assert missed.mean() > 0  # not vacuous: some streams do leave their bounds


def test_betting_cp_certifies_at_the_cap_what_fixed_n_certifies_at_half_alpha():
    """5 wrong of 100,000 at σ = 0.5: fixed-n Clopper–Pearson (α = 0.001) certifies 1.796, past the
    grid's 1.75; betting alone stops short at 1.734, as it did for 9 of the 10 inputs it lost there
    on the default's digits. ``betting_cp`` reaches Clopper–Pearson's bound at α/2 (1.788) at the
    cap, and before the cap it is the betting bound at α/2."""
    cap, alpha, sigma = 100_000, 0.001, 0.5
    correct = np.array([cap - 5])
    with_cap = confidence_sequence("betting_cp", alpha, cap)
    betting_alone = confidence_sequence("betting", alpha, cap)
    lower, upper = with_cap.bounds(correct, cap, 90)
    assert lower == clopper_pearson_lower(correct, cap, alpha / 2)
    assert sigma * norm.ppf(lower) > 1.75 > sigma * norm.ppf(betting_alone.bounds(correct, cap, 90)[0])
    assert upper == confidence_sequence("betting", alpha / 2, cap).bounds(correct, cap, 90)[1]
    before = with_cap.bounds(correct - 900, cap - 1000, 89)
    assert before == confidence_sequence("betting", alpha / 2, cap).bounds(correct - 900, cap - 1000, 89)


def test_the_sequences_agree_with_the_settings_names():
    assert tuple(CONFIDENCE_SEQUENCES) == SEQUENCES


def test_the_look_schedule_grows_to_the_cap_and_checks_its_arguments():
    schedule = look_schedule(32, 1.1, 100_000)
    assert schedule[0] == 32 and schedule[-1] == 100_000
    assert (np.diff(schedule) >= 1).all() and len(schedule) < 100
    with pytest.raises(ValueError, match="growth must be > 1"):
        look_schedule(32, 1.0, 100)
    with pytest.raises(ValueError, match="first_look must be an integer >= 1"):
        look_schedule(0, 1.1, 100)


class Linear(nn.Module):
    """f(x) = 1 if x₀ ≥ 0 else 0: under N(0, σ²I) right with p_A = Φ(|x₀|/σ), robust to radius |x₀|."""

    def forward(self, x):
        margin = x.flatten(1)[:, :1]
        return torch.cat([-margin, margin], dim=1)


def on_cpu(model: nn.Module, num_classes: int, batch_size: int) -> BaseClassifier:
    return BaseClassifier(model, num_classes, CPU, DeviceSettings(batch_size=batch_size, memory_format="contiguous"))


def run_pool(x0: np.ndarray, settings: CertifySettings, seed: int = 0, batch_size: int = 512):
    x = torch.tensor(x0, dtype=torch.float32)[:, None].repeat(1, 3)
    streams = input_streams(seed, range(len(x)), Stream.CERTIFY, CPU)
    scale = torch.ones(len(x))
    return dict(certify_sequentially(on_cpu(Linear(), 2, batch_size), x, scale, settings, streams=streams))


def settings(alpha: float = ALPHA, **sequential) -> CertifySettings:
    return CertifySettings(
        n0=N0, n=CAP, alpha=alpha, mode="sequential",
        sequential=SequentialSettings(radii=tuple(RADII), first_look=8, **sequential),
    )  # fmt: skip


def test_the_pool_certifies_the_linear_classifier_soundly_and_stops_early():
    x0 = np.concatenate([np.full(30, 1.0), np.full(30, -0.25), np.full(30, 2.5), np.full(30, 0.0)])
    results = run_pool(x0, settings(alpha=0.001))
    assert sorted(results) == list(range(len(x0)))
    wrong = sum(
        result.radius > abs(x0[i]) or result.predict not in (int(x0[i] >= 0), ABSTAIN) for i, result in results.items()
    )
    assert_at_most_alpha(wrong, len(x0), alpha=0.001)
    assert all(N0 + 8 <= result.draws <= N0 + CAP for result in results.values())
    far = [results[i] for i in range(60, 90)]  # p_A = Φ(2.5): every radius certified within a few hundred
    assert all(r.predict == 1 and r.decided and r.draws < 400 for r in far)
    assert any(results[i].predict == ABSTAIN for i in range(90, 120))


def test_a_row_does_not_depend_on_the_pool_or_the_batch():
    x0 = np.linspace(-1.2, 1.2, 12)
    together = run_pool(x0, settings())
    alone = run_pool(x0, settings(pool=1), batch_size=7)
    assert together == alone


def test_spending_draws_for_acr_grows_the_radius_and_costs_draws():
    x0 = np.full(40, 1.6)  # p_A = Φ(1.6): the grid (to r = 1) is decided long before the radius stops growing
    plain = run_pool(x0, settings(sequence="betting_cp"))  # a confidence sequence: radii between the grid's
    spent = run_pool(x0, settings(sequence="betting_cp", acr_fraction=0.05))
    assert np.mean([r.radius for r in spent.values()]) > np.mean([r.radius for r in plain.values()])
    assert np.mean([r.draws for r in spent.values()]) > np.mean([r.draws for r in plain.values()])
    assert_at_most_alpha(sum(r.radius > 1.6 for r in spent.values()), len(spent))  # still sound


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("sequence", "wald", "unknown confidence sequence"),
        ("growth", 1.0, "growth must be > 1"),
        ("radii", (-1.0,), "every radius must be finite and >= 0"),
        ("acr_fraction", 0.0, "acr_fraction must be > 0"),
        ("checks", "block", "unknown sequential checks 'block'"),
        ("futility", 0.5, r"futility must lie in \[0, 0.5\)"),
        ("futility", -0.01, r"futility must lie in \[0, 0.5\)"),
        ("sequence", "union_cp", "union_cp holds at its looks only: set checks to 'look'"),
    ],
)
def test_bad_sequential_settings_are_named(field, value, message):
    with pytest.raises(ValueError, match=message):
        SequentialSettings(**{field: value})


def test_the_look_only_sequences_are_those_that_are_not_anytime():
    assert {name for name, cls in CONFIDENCE_SEQUENCES.items() if not cls.anytime} == set(LOOK_ONLY_SEQUENCES)
    with pytest.raises(ValueError, match="union_cp holds at its looks only"):
        decide(confidence_sequence("union_cp", ALPHA, CAP), look_schedule(8, 1.1, CAP), np.array([1]), np.array([8]),
               np.zeros(1), np.ones(1), norm.cdf(RADII)[None, :], misses=[np.array([], dtype=int)])  # fmt: skip


@pytest.mark.parametrize("sequence", ["grid", "betting", "betting_cp"])
@pytest.mark.parametrize("p", [0.9, 0.6])
def test_checking_every_draw_gives_the_bounds_of_every_prefix(sequence, p):
    """Two looks of a stream (400 draws, then 440) at p = 0.9 (runs of correct draws) and 0.6 (runs of
    misses): :func:`decide`'s running bounds after each look, from the misses' prefixes it checks and
    screens, are the largest L and least U over every prefix so far, computed one by one."""
    test = confidence_sequence(sequence, ALPHA, CAP)
    schedule = look_schedule(400, 1.1, CAP)
    thresholds = norm.cdf(np.arange(0, 1.6, 0.125))[None, :]  # fine enough that p = 0.9 is between two
    missed = np.random.default_rng(9).random(schedule[1]) >= p
    every = np.arange(1, schedule[1] + 1)
    lower_every, upper_every = test.bounds(np.cumsum(~missed), every, 1, np.repeat(thresholds, len(every), axis=0))
    lower, upper = np.zeros(1), np.ones(1)
    for look, (start, end) in enumerate(zip([0, schedule[0]], schedule[:2], strict=True), 1):
        block = [np.flatnonzero(missed[start:end])]
        correct = np.array([end - missed[:end].sum()])
        decision = decide(test, schedule, np.array([look]), correct, lower, upper, thresholds, misses=block)
        lower, upper = decision.lower, decision.upper
        assert lower[0] == lower_every[:end].max() and upper[0] == upper_every[:end].min()
    at_looks = schedule[:2] - 1  # not vacuous: a bound peaks between the looks
    assert lower_every.max() > lower_every[at_looks].max() or upper_every.min() < upper_every[at_looks].min()


def test_miss_prefixes_are_just_before_and_after_each_miss():
    rows, correct, draws = miss_prefixes(np.array([10, 3]), np.array([12, 5]), [np.array([0, 4]), np.array([2])])
    # input 0 (10 of 12 before the block): misses at draws 13 and 17; input 1 (3 of 5): at draw 8
    assert sorted(zip(rows, correct, draws, strict=True)) == [
        (0, 10, 13), (0, 13, 16), (0, 13, 17), (1, 5, 7), (1, 5, 8),
    ]  # fmt: skip


class Uniform100(nn.Module):
    """argmax over 100 coordinates: at x = 0 under Gaussian noise, every class has p = 1/100 exactly."""

    def forward(self, x):
        return x.flatten(1)


@pytest.mark.parametrize("sequence", SEQUENCES)
def test_the_selection_draws_are_not_counted_into_the_bound(sequence):
    """Chen et al. (2022)'s mistake, which the pool must not make: c_A, the top class of 1,000
    selection draws among 100 equally likely classes, holds about 20 of them (10 expected), so
    counting them again would put p̲_A above its true 1/100 almost always. The logged bound must
    exceed p_A for at most α of the inputs."""
    inputs = 400
    x = torch.zeros(inputs, 100)
    streams = input_streams(6, range(inputs), Stream.CERTIFY, CPU)
    rule = SequentialSettings(sequence=sequence, first_look=8, pool=inputs, checks=checks_of(sequence))
    certify = CertifySettings(n0=1000, n=8, alpha=ALPHA, mode="sequential", sequential=rule)
    results = certify_sequentially(on_cpu(Uniform100(), 100, 4096), x, torch.ones(inputs), certify, streams=streams)
    lowers = np.array([result.p_a_lower for _, result in results])
    assert_at_most_alpha(int((lowers > 0.01).sum()), inputs)


def test_the_documented_python_example_certifies_a_model_of_ones_own_soundly():
    """The example of ``docs/protocol.md`` (and the README), run as written on a linear classifier at
    margin 0.6 under σ = 0.25: p_A = Φ(2.4), true radius 0.6, so 0.5 is the grid's largest radius it
    may certify; the draws spent come back, far below Cohen's n0 + n."""
    protocol = (Path(__file__).resolve().parents[1] / "docs" / "protocol.md").read_text()
    opening = "```python\nimport torch\nfrom ddrs.core.sequential_pool import SequentialSmooth\n"
    example = opening.removeprefix("```python\n") + protocol.split(opening, 1)[1].split("```", 1)[0]
    x = torch.zeros(1, 28, 28)
    x[0, 0, 0] = 0.6
    namespace = {"model": Linear10(), "x": x}
    exec(compile(example, "docs/protocol.md", "exec"), namespace)
    result = namespace["result"]
    assert result.predict == 1 and result.decided
    assert result.radius == 0.5  # a grid test certifies grid radii: 0.5 ≤ 0.6 < 0.75
    assert 100 + 32 <= result.draws < 100_100 / 5


class Linear10(nn.Module):
    """Ten classes, class 1 iff the first pixel is ≥ 0 (else class 0): p_A = Φ(x₀/σ), radius |x₀|."""

    def forward(self, x):
        margin = x.flatten(1)[:, :1]
        return torch.cat([-margin, margin, torch.full((len(x), 8), -1e9)], dim=1)


def test_the_pool_with_the_grid_test_is_sound_at_and_just_below_every_threshold():
    """The outside-style check, end to end through the pool: 3,200 certificates at α = 0.1 on the
    linear classifier (p_A = Φ(x₀), true radius x₀, σ = 1), 400 inputs at each grid radius, just
    below it (x₀ = r − 0.01, where certifying r is wrong), near p_A = ½ (x₀ = 0.01) and near 1
    (x₀ = 3). At most α of them may certify beyond the true radius or the wrong class; with
    :class:`PerLookClopperPearsonGrid`'s error planted in the grid test, 534 of the 3,200 do (caught)."""
    x0 = np.repeat([0.25, 0.24, 0.5, 0.49, 1.0, 0.99, 0.01, 3.0], 400)
    results = run_pool(x0, settings(sequence="grid"), seed=11)
    beyond = sum(r.radius > x0[i] * (1 + 1e-12) or r.predict not in (1, ABSTAIN) for i, r in results.items())
    assert_at_most_alpha(beyond, len(x0))
    assert all(results[i].radius in (0.0, *RADII) for i in results)  # grid radii, not between them
    assert np.mean([results[i].radius == 1.0 for i in range(2800, 3200)]) > 0.9  # and it has power
