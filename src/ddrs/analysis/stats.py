"""The statistics behind the tables' intervals, comparisons and honest selection.

- Certified accuracy over n test inputs is a binomial proportion: its interval is the exact
  Clopper–Pearson one (:func:`ddrs.core.binomial.clopper_pearson`).
- ACR is a mean of per-input radii: its interval is a seeded percentile bootstrap over test inputs.
  All cells of one dataset share the same resamples, so the bootstrap of a difference between two
  rows is paired (the same inputs in every resample).
- Two rows' "certified at r" indicators on the same inputs are compared with the exact McNemar
  test, a two-sided binomial test with p = ½ on the discordant pairs.
- Two rows' ACRs on the same inputs are compared with a paired sign-flip permutation test of the
  per-input differences (:func:`sign_flip_p`), exact for few inputs and valid at any n, where a
  bootstrap interval of the difference is not (one input: every resample is the observed
  difference, and the interval excludes 0).
- The p-values of a table's family (every pair of compared rows × every tested column, per
  group or dataset) are Holm-adjusted together (:func:`holm`), less the tests that cannot reject
  whatever the data.

Every draw comes from a generator seeded by ``(seed, stream, dataset)``, so adding a dataset to a
table does not change another dataset's draws, and the held-out split never reuses the bootstrap's.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

import numpy as np


@dataclass(frozen=True)
class Inference:
    """How a table's cells carry their uncertainty, checked once when built: intervals at level
    1 − ``alpha`` (and the tests behind bold cells and comparisons at ``alpha``), ``n_boot``
    bootstrap resamples, and the ``seed`` of the resamples and of the held-out split."""

    alpha: float = 0.05
    n_boot: int = 2000
    seed: int = 0

    def __post_init__(self):
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1), got {self.alpha}")
        if int(self.n_boot) != self.n_boot or self.n_boot < 1:
            raise ValueError(f"n_boot must be a positive integer, got {self.n_boot}")


#: the builders' default: 95% intervals, 2,000 resamples, seed 0
DEFAULT_INFERENCE = Inference()


#: resamples drawn per block (memory: block × inputs counts)
_BLOCK = 256


class Stream(IntEnum):
    """Independent random streams of one table's statistics."""

    SPLIT = 0  #: which test inputs select and which evaluate under ``selection="held_out"``
    BOOTSTRAP = 1  #: the resamples of the ACR intervals
    PERMUTATION = 2  #: the sign flips of the ACR tests
    RUNS = 3  #: the training runs a pigeonhole resample draws (:func:`pigeonhole_means`)


def generator(seed: int, stream: Stream, dataset: str) -> np.random.Generator:
    """The generator of one stream of one dataset, from the config's seed."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), int(stream), zlib.crc32(dataset.encode())]))


def bootstrap_means(values: np.ndarray, *, n_boot: int, seed: int, dataset: str) -> np.ndarray:
    """Means of each column of ``values`` (inputs × columns) over ``n_boot`` resamples of the inputs.

    Returns ``n_boot × columns``. Resample b draws n inputs with replacement (multinomial counts),
    the same for every column, so column differences are paired. Same (seed, dataset, n): same draws.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 2 or values.shape[0] == 0:
        raise ValueError(f"bootstrap needs a non-empty inputs × columns array, got shape {values.shape}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be positive, got {n_boot}")
    n = values.shape[0]
    means = np.empty((n_boot, values.shape[1]))
    for start, stop, counts in _input_counts(n, n_boot, seed, dataset):
        means[start:stop] = counts @ values / n
    return means


def _input_counts(n: int, n_boot: int, seed: int, dataset: str):
    """The bootstrap's resamples of n inputs as multinomial counts, block by block: (start, stop, counts)."""
    rng = generator(seed, Stream.BOOTSTRAP, dataset)
    for start in range(0, n_boot, _BLOCK):
        stop = min(start + _BLOCK, n_boot)
        yield start, stop, rng.multinomial(n, np.full(n, 1.0 / n), size=stop - start)


def pigeonhole_means(values: np.ndarray, *, n_boot: int, seed: int, dataset: str) -> np.ndarray:
    """Means over runs and inputs of ``values`` (runs × inputs × columns, every run on the same
    inputs) in ``n_boot`` resamples of the pigeonhole bootstrap (Owen 2007, Ann. Appl. Stat. 1(2)):
    ``n_boot × columns``.

    Resample b draws R runs and n inputs with replacement, independently (a crossed design), and
    takes the mean over the drawn runs of each run's mean over the drawn inputs. Its input counts
    are :func:`bootstrap_means`' (the same stream and blocks), its runs come from a stream of their
    own, so one run, or R identical runs, give exactly :func:`bootstrap_means`' resamples.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 3 or 0 in values.shape[:2]:
        raise ValueError(
            f"the pigeonhole bootstrap needs a non-empty runs × inputs × columns array, got {values.shape}"
        )
    runs, n, _ = values.shape
    drawn_runs = generator(seed, Stream.RUNS, dataset)
    means = np.empty((n_boot, values.shape[2]))
    for start, stop, counts in _input_counts(n, n_boot, seed, dataset):
        per_run = np.stack([counts @ run for run in values], axis=1) / n  # each run's mean over the drawn inputs
        chosen = drawn_runs.integers(runs, size=(stop - start, runs))
        means[start:stop] = np.take_along_axis(per_run, chosen[:, :, None], axis=1).mean(axis=1)
    return means


def percentile_interval(samples: np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """The (α/2, 1 − α/2) percentiles of bootstrap ``samples`` along axis 0."""
    low, high = np.quantile(samples, [alpha / 2, 1 - alpha / 2], axis=0)
    return low, high


#: a settled interval's bounds each have a Monte Carlo error below this share of their distance to 0
BOUND_TOLERANCE = 0.1
#: a settled interval draws at most this many times the configured resamples (×4 at a time)
MAX_BOOT_FACTOR = 64


def percentile_error(samples: np.ndarray, q: float) -> np.ndarray:
    """The Monte Carlo standard error of the ``q``-quantile of bootstrap ``samples`` (along axis 0):
    half the spread between the order statistics of ranks Bq ± √(Bq(1 − q)), the distribution-free
    ±1 SE interval of a quantile (its rank is binomial)."""
    ordered = np.sort(np.asarray(samples, dtype=float), axis=0)
    count = len(ordered)
    half = math.sqrt(count * q * (1 - q))
    low = min(max(math.floor(count * q - half), 0), count - 1)
    high = min(max(math.ceil(count * q + half), 0), count - 1)
    return (ordered[high] - ordered[low]) / 2


def settled_interval(
    draw, n_boot: int, alpha: float, tolerance: float = BOUND_TOLERANCE
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """A percentile interval at 1 − ``alpha`` whose bounds do not depend on the bootstrap's seed:
    ``draw(B)`` gives B resamples (B × columns); from ``n_boot`` on, B grows fourfold until each
    bound's Monte Carlo error (:func:`percentile_error`) lies below ``tolerance`` times its distance
    to 0, or B reaches :data:`MAX_BOOT_FACTOR` · ``n_boot``. Returns the bounds, the B drawn, and per
    column whether it settled (a bound that stays within its error of 0 says so where it is shown)."""
    boot = n_boot
    while True:
        samples = draw(boot)
        low, high = percentile_interval(samples, alpha)
        errors = np.stack([percentile_error(samples, alpha / 2), percentile_error(samples, 1 - alpha / 2)])
        settled = (errors <= tolerance * np.abs(np.stack([low, high]))).all(axis=0)
        if settled.all() or boot >= MAX_BOOT_FACTOR * n_boot:
            return low, high, boot, settled
        boot = min(4 * boot, MAX_BOOT_FACTOR * n_boot)


def mcnemar(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact McNemar test of paired indicators ``a`` and ``b`` (… × inputs, compared on the last axis).

    Returns (``a_only``, ``b_only``, p): the discordant counts and the two-sided exact p-value,
    ``min(1, 2 · BinomCDF(min(a_only, b_only); a_only + b_only, ½))`` — for p = ½ exactly
    ``scipy.stats.binomtest(a_only, a_only + b_only).pvalue``, and 1 with no discordant pair.
    """
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"paired indicators must have the same shape, got {a.shape} and {b.shape}")
    a_only = (a & ~b).sum(axis=-1)
    b_only = (b & ~a).sum(axis=-1)
    return a_only, b_only, mcnemar_p(a_only, b_only)


def mcnemar_p(a_only, b_only) -> np.ndarray:
    """Exact two-sided McNemar p-value from the discordant counts (see :func:`mcnemar`)."""
    from scipy.stats import binom  # here, not at import: scipy.stats costs every table job a second

    a_only, b_only = np.asarray(a_only), np.asarray(b_only)
    return np.minimum(1.0, 2 * binom.cdf(np.minimum(a_only, b_only), a_only + b_only, 0.5))


#: the Monte Carlo sign-flip test's smallest p, 1 / (B + 1), lies this factor below the smallest
#: Holm threshold α / m of its family, so its resolution never decides a rejection
FLIP_RESOLUTION = 20
#: sign patterns drawn at least, whatever the family: p-values to about two digits
MIN_FLIPS = 10_000
#: sign-pattern entries (patterns × inputs) held at once by the sign-flip test
_FLIP_BLOCK = 1 << 22


def flip_resamples(family: int, alpha: float) -> int:
    """How many sign patterns a sign-flip test of a Holm family of ``family`` tests at ``alpha``
    draws: ⌈:data:`FLIP_RESOLUTION` · m / α⌉, at least :data:`MIN_FLIPS` (a fixed count would cap
    every p at 1 / (B + 1), which Holm cannot reject once m ≥ α (B + 1))."""
    return max(MIN_FLIPS, math.ceil(FLIP_RESOLUTION * family / alpha))


def sign_flip_p(
    values, pairs: Sequence[tuple[int, int]] | None = None, *, n_resamples: int, seed: int, dataset: str
) -> np.ndarray:
    """Two-sided paired permutation p-values of per-input differences, one per test.

    ``values`` is inputs × columns (or one vector). Without ``pairs`` each column is a test's
    per-input differences; with ``pairs`` test k is the differences of columns ``pairs[k]`` =
    ``(a, b)``, ``values[:, a] − values[:, b]`` (two rows' per-input radii on the same inputs), and
    the sums are taken per column, so many pairs of few rows cost what the rows cost. Under the
    null of exchangeable rows each difference is as likely negated, so the test flips the sign of
    each input's difference and counts the sign patterns whose |sum| reaches the observed one.
    With 2ⁿ ≤ ``n_resamples`` for the n inputs whose differences are not all zero, it enumerates
    every pattern (exact: p = count / 2ⁿ); otherwise it draws ``n_resamples`` patterns from the
    generator of (``seed``, :attr:`Stream.PERMUTATION`, ``dataset``), the same for every test, and
    p = (1 + count) / (``n_resamples`` + 1), the Monte Carlo p-value that keeps the level
    (Phipson & Smyth 2010). Size ``n_resamples`` to the family with :func:`flip_resamples`. A test
    of fewer than two non-zero differences gives p = 1 (its patterns are ±d).
    """
    v = np.asarray(values, dtype=float)
    v = v[:, None] if v.ndim == 1 else v
    if v.ndim != 2 or v.shape[0] == 0:
        raise ValueError(f"a sign-flip test needs a non-empty inputs × columns array, got shape {v.shape}")
    combine = np.eye(v.shape[1]) if pairs is None else np.zeros((v.shape[1], len(pairs)))
    for k, (a, b) in enumerate(pairs or ()):
        combine[a, k], combine[b, k] = 1.0, -1.0
    differences = v @ combine
    v = v[(differences != 0).any(axis=1)]  # an input of no difference flips nothing
    n = len(v)
    observed = np.abs(differences.sum(axis=0))
    # a pattern's sums are taken in float32 (half the memory traffic of the pattern matrix): one
    # reaches the observed |sum| within float32's rounding of the sums, counted as reaching it
    reach = observed - 1e-5 * (np.abs(v) @ np.abs(combine)).sum(axis=0)
    v32 = v.astype(np.float32)
    exact = n < 63 and 2**n <= n_resamples
    total = 2**n if exact else int(n_resamples)
    draws = generator(seed, Stream.PERMUTATION, dataset)
    count = np.zeros(combine.shape[1], dtype=np.int64)
    block = max(1, _FLIP_BLOCK // max(n, v.shape[1], combine.shape[1], 1))
    for start in range(0, total, block):
        size = min(block, total - start)
        if exact:
            bits = (np.arange(start, start + size)[:, None] >> np.arange(n)) & 1
        else:
            bits = np.unpackbits(np.frombuffer(draws.bytes((size * n + 7) // 8), dtype=np.uint8))
            bits = bits[: size * n].reshape(size, n)
        sums = ((bits.astype(np.float32) * 2 - 1) @ v32).astype(float) @ combine
        count += (np.abs(sums) >= reach).sum(axis=0)
    return count / total if exact else (1 + count) / (total + 1)


def sign_flip_bound_p(values) -> np.ndarray:
    """Two-sided p-values of the paired sign-flip test of per-input differences (``values``: inputs ×
    tests), bounded in closed form, valid at every n and every level.

    Under the sign-flip null (each difference as likely negative as positive, given its size), the
    sum S = Σ εᵢ|dᵢ| has independent terms in [−|dᵢ|, |dᵢ|], so Hoeffding's inequality (1963,
    Theorem 2) gives P(|S| ≥ |T|) ≤ 2·exp(−T² / (2 Σ dᵢ²)) for the observed T = Σ dᵢ. It is the
    permutation test of :func:`sign_flip_p` without its Monte Carlo floor 1 / (B + 1): conservative by
    about z·√(2π) against the normal tail at z standard errors (a factor 12 at z = 4.7), and able to
    reach a Holm threshold α / m of any family. 1 where every difference is 0.
    """
    values = np.asarray(values, dtype=float)
    total, squares = values.sum(axis=0), (values**2).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = 2 * np.exp(-(total**2) / (2 * squares))
    return np.where(squares > 0, np.minimum(1.0, bound), 1.0)


def holm(pvalues, family=None) -> np.ndarray:
    """Holm's step-down adjustment of a family of p-values.

    The k-th smallest of the m p-values in the family becomes ``max_{j ≤ k} min(1, (m − j + 1) · p_(j))``.
    NaN entries are not in the family and stay NaN; nor are entries where the mask ``family`` is
    false, tests that cannot reject whatever the data (a McNemar test of fewer than two discordant
    pairs, a sign-flip test of fewer than two differing inputs: their smallest attainable p is 1),
    which keep their p. Leaving those out keeps the family-wise error rate (Tarone 1990) and
    spares the other tests their share of the adjustment.
    """
    p = np.asarray(pvalues, dtype=float)
    present = ~np.isnan(p) & (True if family is None else np.asarray(family, dtype=bool))
    adjusted = np.where(present, np.nan, p)
    order = np.argsort(p[present], kind="stable")
    ranked = p[present][order]
    m = len(ranked)
    steps = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * ranked))
    values = np.empty(m)
    values[order] = steps
    adjusted[present] = values
    return adjusted


def held_out_split(inputs: int, *, seed: int, dataset: str) -> tuple[np.ndarray, np.ndarray]:
    """Masks over ``inputs`` test inputs (in ``idx`` order): a seeded half that selects
    (⌊n/2⌋ inputs) and the other half that evaluates. Needs at least two inputs."""
    if inputs < 2:
        raise ValueError(f"a held-out split needs at least 2 test inputs, got {inputs}")
    chosen = generator(seed, Stream.SPLIT, dataset).permutation(inputs)[: inputs // 2]
    select = np.zeros(inputs, dtype=bool)
    select[chosen] = True
    return select, ~select
