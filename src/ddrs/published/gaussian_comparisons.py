"""Every published log against Gaussian training at the same σ, on the test inputs both certify.

**Baseline.** For a log certified at σ, its baseline is a Gaussian log (our method ``cohen``:
Gaussian data augmentation, Cohen et al. 2019) of the same dataset certified at the same σ from a
model trained at that σ (or at a σ the registry does not state), not the log itself, whose labels
agree with the log's at every shared ``idx`` (the same test inputs in the same order), chosen in
this order (:func:`choose_baseline`):

1. one the log's own repository publishes (under any name of its byte-identical copies): the
   authors' own Gaussian baseline, trained and certified as they trained and certified theirs;
2. then one of the same architecture;
3. then the one sharing the most test inputs;
4. then the first in registry order.

A log with no such Gaussian log is listed with ``baseline`` empty and no test. A Gaussian log is
compared too (against another Gaussian log): a replication check.

**Tests.** On the shared inputs: per radius the exact McNemar test of the two logs' "certified at
r" indicators (:func:`~ddrs.analysis.stats.mcnemar`), and for ACR the paired sign-flip permutation
test of the per-input radii (:func:`~ddrs.analysis.stats.sign_flip_p`) with the difference's
paired-bootstrap interval (:func:`~ddrs.analysis.stats.bootstrap_means`): the statistics of the
project's comparisons tables (:mod:`ddrs.analysis.comparisons`), computed for many pairs at once
(pairs of as many shared inputs share one bootstrap draw and one set of sign patterns; the same
draws a pair alone would get).

**Holm family.** One published method at one σ (:class:`~ddrs.published.leaderboard.MethodKey`
× σ, the leaderboard's "method × σ"): its logs at σ (one, or its runs) × every radius and ACR,
less the tests that cannot reject whatever the data (:func:`~ddrs.analysis.stats.holm`). Holm
bounds the chance of any false claim that this method at this σ differs from Gaussian; it does not
bound it across the leaderboard's methods. A leaderboard-wide family (about 18,000 tests on
CIFAR-10) would need ⌈20·m/α⌉ ≈ 7·10⁶ sign patterns per ACR test for the Monte Carlo resolution
never to decide a rejection (:func:`~ddrs.analysis.stats.flip_resamples`), hours on two cores; the
raw ``_p`` columns allow any other family. A cell is bold where its Holm-adjusted p is below α.
``better_at`` / ``worse_at`` list the columns where the log is significantly above / below Gaussian.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ddrs.analysis import stats
from ddrs.analysis.assemble import ALPHA_ATTR, BOLD_ATTR, interval_columns, ordered, radius_column
from ddrs.analysis.comparisons import radius_comparison
from ddrs.analysis.evidence import SINGLE_ACR, Evidence, row_evidence
from ddrs.published.leaderboard import GAUSSIAN, Entry

#: the comparisons table's key columns, in order
LEADING = (
    "dataset",
    "method",
    "ours",
    "repository",
    "arch",
    "sigma",
    "log",
    "baseline",
    "inputs",
    "tested",
)
#: tolerance of a σ comparison
_SIGMA_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Pair:
    """A log and its Gaussian baseline on the inputs both certify."""

    variant: Entry
    baseline: Entry
    shared: np.ndarray


def shared_inputs(a: Entry, b: Entry) -> np.ndarray | None:
    """The ``idx`` both logs certify, or None when they share none or disagree on a label there
    (another order or set of test inputs: their rows cannot be paired)."""
    shared, at_a, at_b = np.intersect1d(a.idx, b.idx, assume_unique=True, return_indices=True)
    if len(shared) == 0:
        return None
    if not np.array_equal(a.frame["label"].to_numpy()[at_a], b.frame["label"].to_numpy()[at_b]):
        return None
    return shared


def _trained_at(entry: Entry, sigma: float) -> bool:
    noise = entry.log.noise
    return noise is None or abs(noise - sigma) < _SIGMA_TOLERANCE


def choose_baseline(entry: Entry, gaussians: Sequence[Entry]) -> Pair | None:
    """The Gaussian log ``entry`` is compared with (module docstring), or None."""
    best, best_rank = None, None
    for position, candidate in enumerate(gaussians):
        if candidate is entry or abs(candidate.sigma - entry.sigma) > _SIGMA_TOLERANCE:
            continue
        if not _trained_at(candidate, entry.sigma):
            continue
        shared = shared_inputs(entry, candidate)
        if shared is None:
            continue
        rank = (
            not candidate.shipped_by(entry.log.repository),
            candidate.log.arch != entry.log.arch,
            -len(shared),
            position,
        )
        if best_rank is None or rank < best_rank:
            best, best_rank = Pair(entry, candidate, shared), rank
    return best


def _evidence(entry: Entry, shared: np.ndarray, dataset: str, radii: Sequence[float]) -> Evidence:
    frame = entry.frame[entry.frame["idx"].isin(shared)]
    return row_evidence(dataset, [frame], radii, single=True)


def gaussian_comparisons_table(
    entries: Sequence[Entry],
    dataset: str,
    radii: Sequence[float],
    *,
    inference: stats.Inference = stats.DEFAULT_INFERENCE,
) -> pd.DataFrame:
    """One row per log of ``entries`` (a dataset's leaderboard) against its Gaussian baseline
    (module docstring); columns as the project's comparisons tables, plus ``better_at`` and
    ``worse_at``. Rows follow the leaderboard's registry order."""
    gaussians = [entry for entry in entries if entry.log.method == GAUSSIAN]
    columns = [*map(radius_column, radii), SINGLE_ACR]
    rows, pairs = [], []
    for entry in entries:
        pair = choose_baseline(entry, gaussians)
        rows.append(
            {
                "dataset": dataset,
                "method": entry.log.method_authors,
                "ours": entry.log.method,
                "repository": entry.log.repository,
                "arch": entry.log.arch,
                "sigma": entry.sigma,
                "log": entry.name,
                "baseline": "" if pair is None else pair.baseline.name,
                "inputs": 0 if pair is None else len(pair.shared),
                "tested": pair is not None,
            }
        )
        pairs.append(pair)
    tested = [k for k, pair in enumerate(pairs) if pair is not None]
    evidence = {
        k: (
            _evidence(pairs[k].variant, pairs[k].shared, dataset, radii),
            _evidence(pairs[k].baseline, pairs[k].shared, dataset, radii),
        )
        for k in tested
    }
    p = np.full((len(rows), len(columns)), np.nan)
    can_reject = np.zeros((len(rows), len(columns)), dtype=bool)
    for k in tested:
        cells, p[k, :-1] = radius_comparison(*evidence[k])
        rows[k] |= {column: float(value) if column in columns else value for column, value in cells.items()}
        can_reject[k, :-1] = [cells[f"{c}_better"] + cells[f"{c}_worse"] >= 2 for c in columns[:-1]]
    family_of = {k: (pairs[k].variant.method, round(pairs[k].variant.sigma, 9)) for k in tested}
    family_size = {}
    for family in family_of.values():
        family_size[family] = family_size.get(family, 0) + len(columns)
    by_inputs: dict[int, list[int]] = {}
    for k in tested:
        by_inputs.setdefault(len(pairs[k].shared), []).append(k)
    for members in by_inputs.values():
        differences = np.stack([evidence[k][0].acr[SINGLE_ACR] - evidence[k][1].acr[SINGLE_ACR] for k in members], 1)
        means = stats.bootstrap_means(differences, n_boot=inference.n_boot, seed=inference.seed, dataset=dataset)
        low, high = stats.percentile_interval(means, inference.alpha)
        flips = stats.flip_resamples(max(family_size[family_of[k]] for k in members), inference.alpha)
        p_acr = stats.sign_flip_p(differences, n_resamples=flips, seed=inference.seed, dataset=dataset)
        for j, k in enumerate(members):
            bounds = dict(zip(interval_columns(SINGLE_ACR), (float(low[j]), float(high[j])), strict=True))
            rows[k] |= {SINGLE_ACR: float(differences[:, j].mean()), **bounds}
            p[k, -1] = p_acr[j]
            can_reject[k, -1] = int((differences[:, j] != 0).sum()) >= 2
    adjusted = np.full_like(p, np.nan)
    families: dict[tuple, list[int]] = {}
    for k in tested:
        families.setdefault(family_of[k], []).append(k)
    for members in families.values():
        adjusted[members] = stats.holm(p[members].ravel(), can_reject[members].ravel()).reshape(
            len(members), len(columns)
        )
    bold = set()
    for k in tested:
        better_at, worse_at = [], []
        for c, column in enumerate(columns):
            rows[k] |= {f"{column}_p": float(p[k, c]), f"{column}_p_holm": float(adjusted[k, c])}
            if adjusted[k, c] < inference.alpha and rows[k][column] != 0:
                bold.add((k, column))
                (better_at if rows[k][column] > 0 else worse_at).append(column)
        rows[k] |= {"better_at": " ".join(better_at), "worse_at": " ".join(worse_at)}
    suffixes = ("", "_better", "_worse", "_p", "_p_holm")
    grouped = [
        f"{c}{suffix}" for c in columns for suffix in suffixes if c != SINGLE_ACR or suffix in ("", "_p", "_p_holm")
    ]
    frame = pd.DataFrame(rows, columns=[*LEADING, *grouped, *interval_columns(SINGLE_ACR), "better_at", "worse_at"])
    frame = ordered(frame, list(LEADING))
    frame.attrs[BOLD_ATTR] = frozenset(bold)
    frame.attrs[ALPHA_ATTR] = inference.alpha
    return frame
