"""Every published log against Gaussian training at the same σ, on the test inputs both certify; a
user's own logs also against the best log of every family.

**Baseline rule**, the same for every row (:func:`choose_baseline`). A log certified at σ is compared
with a Gaussian log (family ``Gaussian``, :mod:`ddrs.published.families`: Gaussian data augmentation,
Cohen et al. 2019) of the same dataset, certified at the same σ from a model trained at that σ (or
at a σ the registry does not state), not the log itself, in the same input order
(:mod:`ddrs.published.input_orders`), whose labels agree with the log's at every shared ``idx``.
Among those, in this order:

1. the same input set (the same order and ``idx``);
2. the same architecture (``cifar_resnet110`` is ``resnet110``; an unstated one matches none);
3. the log's own repository (under any name of its byte-identical copies);
4. the most shared test inputs;
5. the first in registry order.

The row names its baseline log (``baseline``) and which rule chose it (``against``): ``Gaussian``
by the rule over every Gaussian log, ``Gaussian (Sun et al. 2024)`` by the same rule over Sun et
al.'s own Gaussian logs only, where one applies (:data:`ALTERNATIVE_GAUSSIANS`; they are stronger
than Salman et al.'s re-certifications of Cohen's models, which the rule picks for most CIFAR-10
logs). A log with no such Gaussian log has one row with ``baseline`` empty and no test. A Gaussian
log is compared too (with another Gaussian log): a replication check, not counted among the
methods that beat Gaussian (:mod:`ddrs.published.headline`). ``same_recipe`` marks a row whose two
logs are two runs of one recipe (one method key and σ, :mod:`ddrs.published.run_margin`; Jeong &
Shin's seeds). A user's own log (:mod:`ddrs.published.own_logs`)
is also compared with the best log of every published family (``against`` = ``best <family>``):
among the family's logs with its labels, the one sharing the most inputs with it, then the one of
the highest ACR on those inputs.

**Tests.** Each compares two fixed models (one training run of each) on the shared inputs, blind to
what another run would change (:mod:`ddrs.published.run_margin`): per radius the exact McNemar
test of the two logs' "certified at r" indicators (:func:`~ddrs.analysis.stats.mcnemar`); for ACR
the paired sign-flip test of the per-input radii, its p-value bounded in closed form by Hoeffding's inequality
(:func:`~ddrs.analysis.stats.sign_flip_bound_p`: valid at every n, no Monte Carlo floor), with the
difference's paired-bootstrap interval (:func:`~ddrs.analysis.stats.bootstrap_means`; pairs of as
many shared inputs share one bootstrap draw).

**One multiplicity control over the published logs: Holm.** Every test of a published log (every
row, both Gaussian baselines, every radius and ACR) is one Holm family, less the tests that cannot
reject whatever the data (:func:`~ddrs.analysis.stats.holm`; fewer than two discordant or differing
inputs). A user's own logs' tests (their Gaussian and family comparisons) are a second family, so
that adding them leaves every published row's adjusted p-value unchanged. Holm, not
Benjamini–Hochberg: the claims are read one by one ("this log beats Gaussian"), which the
family-wise error rate covers and the false discovery rate does not; Holm holds under any
dependence, and these tests are dependent (many logs share one Gaussian baseline and the same
inputs), where BH needs positive dependence or the Benjamini–Yekutieli price; and the exact McNemar
and bounded sign-flip p-values reach its thresholds (α/m ≈ 1.6·10⁻⁶ on CIFAR-10's 2,650 rows × 12
columns, at most 31,800 tests). A cell is bold where its Holm-adjusted p is below α; ``better_at`` /
``worse_at`` list the columns where the log is significantly above / below its baseline.
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
from ddrs.analysis.metrics import acr
from ddrs.published.families import GAUSSIAN_FAMILY
from ddrs.published.leaderboard import Entry
from ddrs.published.own_logs import is_own

#: the comparisons table's key columns, in order
LEADING = (
    "dataset",
    "method",
    "ours",
    "family",
    "extra_data",
    "repository",
    "arch",
    "sigma",
    "log",
    "against",
    "baseline",
    "inputs",
    "tested",
    "gaussian_pair",
    "same_recipe",
)
#: ``against`` of the rule over every Gaussian log
MATCHED = "Gaussian"
#: the papers whose own Gaussian logs give a second baseline, and its ``against``
ALTERNATIVE_GAUSSIANS = {"sun2024": "Gaussian (Sun et al. 2024)"}
#: ``against`` of a user's log compared with a family's best log
BEST_OF = "best {family}"
#: tolerance of a σ comparison
_SIGMA_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Pair:
    """A log and its Gaussian baseline on the inputs both certify."""

    variant: Entry
    baseline: Entry
    shared: np.ndarray


def shared_inputs(a: Entry, b: Entry) -> np.ndarray | None:
    """The ``idx`` both logs certify, or None when their input orders differ (the same idx, other
    images), they share none, or they disagree on a label there (another set of test inputs): their
    rows cannot be paired."""
    if a.order != b.order:
        return None
    shared, at_a, at_b = np.intersect1d(a.idx, b.idx, assume_unique=True, return_indices=True)
    if len(shared) == 0:
        return None
    if not np.array_equal(a.frame["label"].to_numpy()[at_a], b.frame["label"].to_numpy()[at_b]):
        return None
    return shared


def _trained_at(entry: Entry, sigma: float) -> bool:
    noise = entry.log.noise
    return noise is None or abs(noise - sigma) < _SIGMA_TOLERANCE


def same_architecture(a: str, b: str) -> bool:
    """Whether two registry ``arch`` values name one architecture (Cohen et al.'s ``cifar_`` prefix
    aside); an unstated architecture matches none."""
    a, b = (arch.removeprefix("cifar_") for arch in (a, b))
    return bool(a) and a == b


def is_gaussian_pair(pair: Pair) -> bool:
    """Whether ``pair`` measures Gaussian against Gaussian (the headline's ``gaussian_vs_gaussian``): two
    distinct Gaussian logs (byte-identical copies are one entry) from different runs or repositories, of
    one σ, of architectures not known to differ (the same, or one unstated: Sun et al.'s Gaussian logs
    state none), neither known to be trained at another σ."""
    variant, baseline = pair.variant, pair.baseline
    a, b = variant.log.arch, baseline.log.arch
    return (
        variant.family.name == baseline.family.name == GAUSSIAN_FAMILY
        and (not a or not b or same_architecture(a, b))
        and all(_trained_at(entry, entry.sigma) for entry in (variant, baseline))
    )


def choose_baseline(entry: Entry, gaussians: Sequence[Entry]) -> Pair | None:
    """The Gaussian log ``entry`` is compared with by the baseline rule (module docstring), or None."""
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
            candidate.inputs_digest != entry.inputs_digest,
            not same_architecture(candidate.log.arch, entry.log.arch),
            not candidate.shipped_by(entry.log.repository),
            -len(shared),
            position,
        )
        if best_rank is None or rank < best_rank:
            best, best_rank = Pair(entry, candidate, shared), rank
    return best


def best_of_family(entry: Entry, members: Sequence[Entry]) -> Pair | None:
    """The log of a family ``entry`` is compared with (module docstring), or None."""
    best, best_rank = None, None
    for position, candidate in enumerate(members):
        shared = None if candidate is entry else shared_inputs(entry, candidate)
        if shared is None:
            continue
        rank = (-len(shared), -acr(candidate.frame[candidate.frame["idx"].isin(shared)]), position)
        if best_rank is None or rank < best_rank:
            best, best_rank = Pair(entry, candidate, shared), rank
    return best


def published_families(entries: Sequence[Entry]) -> dict[str, list[Entry]]:
    """The published ``entries`` by family name, in registry order (a user's own logs left out)."""
    families: dict[str, list[Entry]] = {}
    for entry in entries:
        if not is_own(entry):
            families.setdefault(entry.family.name, []).append(entry)
    return families


def comparisons(entry: Entry, families: dict[str, list[Entry]]) -> list[tuple[str, Pair | None]]:
    """What ``entry`` is compared with, given the published logs by family (:func:`published_families`):
    (``against``, pair) per baseline of the module docstring; one row with no pair where no Gaussian
    log applies."""
    gaussians = families.get(GAUSSIAN_FAMILY, [])
    rows: list[tuple[str, Pair | None]] = [(MATCHED, choose_baseline(entry, gaussians))]
    for paper, against in ALTERNATIVE_GAUSSIANS.items():
        pair = choose_baseline(entry, [other for other in gaussians if other.log.paper == paper])
        if pair is not None:
            rows.append((against, pair))
    if is_own(entry):
        for family, members in families.items():
            pair = best_of_family(entry, members)
            if pair is not None:
                rows.append((BEST_OF.format(family=family), pair))
    return rows


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
    """One row per log of ``entries`` (a dataset's leaderboard) and baseline it is compared with
    (module docstring); columns as the project's comparisons tables, plus ``better_at`` and
    ``worse_at``. Rows follow the leaderboard's registry order, a log's baselines in the order of
    :func:`comparisons`."""
    columns = [*map(radius_column, radii), SINGLE_ACR]
    families = published_families(entries)
    found = [(entry, against, pair) for entry in entries for against, pair in comparisons(entry, families)]
    rows = [_leading(entry, against, pair, dataset) for entry, against, pair in found]
    pairs = [pair for _, _, pair in found]
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
    _compare_acr(rows, evidence, (p, can_reject), inference, dataset)
    adjusted = np.full_like(p, np.nan)
    for family in (
        [k for k in tested if not is_own(pairs[k].variant)],
        [k for k in tested if is_own(pairs[k].variant)],
    ):
        if family:
            adjusted[family] = stats.holm(p[family].ravel(), can_reject[family].ravel()).reshape(len(family), -1)
    bold = {(k, column) for k in tested for column in _verdicts(rows[k], columns, p[k], adjusted[k], inference.alpha)}
    suffixes = ("", "_better", "_worse", "_p", "_p_holm")
    grouped = [
        f"{c}{suffix}" for c in columns for suffix in suffixes if c != SINGLE_ACR or suffix in ("", "_p", "_p_holm")
    ]
    frame = pd.DataFrame(rows, columns=[*LEADING, *grouped, *interval_columns(SINGLE_ACR), "better_at", "worse_at"])
    frame = ordered(frame, list(LEADING))
    frame.attrs[BOLD_ATTR] = frozenset(bold)
    frame.attrs[ALPHA_ATTR] = inference.alpha
    return frame


def _leading(entry: Entry, against: str, pair: Pair | None, dataset: str) -> dict[str, object]:
    """The leading columns of ``entry``'s row against ``against`` (``pair`` None: untested)."""
    return {
        "dataset": dataset,
        "method": entry.log.method_authors,
        "ours": entry.log.method,
        "family": entry.family.name,
        "extra_data": entry.family.extra_data,
        "repository": entry.log.repository,
        "arch": entry.log.arch,
        "sigma": entry.sigma,
        "log": entry.name,
        "against": against,
        "baseline": "" if pair is None else pair.baseline.name,
        "inputs": 0 if pair is None else len(pair.shared),
        "tested": pair is not None,
        "gaussian_pair": pair is not None and not is_own(entry) and is_gaussian_pair(pair),
        "same_recipe": pair is not None and pair.variant.method == pair.baseline.method,
    }


def _compare_acr(
    rows: list[dict], evidence: dict[int, tuple[Evidence, Evidence]], tests: tuple, inference: stats.Inference, dataset
) -> None:
    """The ACR difference of every tested row ``k`` of ``evidence`` into ``rows[k]``, with its
    percentile interval, and its sign-flip p-value and whether it can reject into the last column of
    ``tests`` = (p, can_reject). Rows over the same number of shared inputs are bootstrapped together."""
    p, can_reject = tests
    by_inputs: dict[int, list[int]] = {}
    for k in evidence:
        by_inputs.setdefault(rows[k]["inputs"], []).append(k)
    for members in by_inputs.values():
        differences = np.stack([evidence[k][0].acr[SINGLE_ACR] - evidence[k][1].acr[SINGLE_ACR] for k in members], 1)
        means = stats.bootstrap_means(differences, n_boot=inference.n_boot, seed=inference.seed, dataset=dataset)
        low, high = stats.percentile_interval(means, inference.alpha)
        p[members, -1] = stats.sign_flip_bound_p(differences)
        can_reject[members, -1] = (differences != 0).sum(axis=0) >= 2
        for j, k in enumerate(members):
            bounds = dict(zip(interval_columns(SINGLE_ACR), (float(low[j]), float(high[j])), strict=True))
            rows[k] |= {SINGLE_ACR: float(differences[:, j].mean()), **bounds}


def _verdicts(row: dict, columns: Sequence[str], p: np.ndarray, adjusted: np.ndarray, alpha: float) -> list[str]:
    """Write a tested row's p-values and ``better_at`` / ``worse_at``; return its significant columns."""
    significant, better_at, worse_at = [], [], []
    for c, column in enumerate(columns):
        row |= {f"{column}_p": float(p[c]), f"{column}_p_holm": float(adjusted[c])}
        if adjusted[c] < alpha and row[column] != 0:
            significant.append(column)
            (better_at if row[column] > 0 else worse_at).append(column)
    row |= {"better_at": " ".join(better_at), "worse_at": " ".join(worse_at)}
    return significant
