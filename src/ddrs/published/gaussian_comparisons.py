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
methods that beat Gaussian (:func:`headline`). A user's own log (:mod:`ddrs.published.own_logs`)
is also compared with the best log of every published family (``against`` = ``best <family>``):
among the family's logs with its labels, the one sharing the most inputs with it, then the one of
the highest ACR on those inputs.

**Tests.** On the shared inputs: per radius the exact McNemar test of the two logs' "certified at
r" indicators (:func:`~ddrs.analysis.stats.mcnemar`); for ACR the paired sign-flip test of the
per-input radii, its p-value bounded in closed form by Hoeffding's inequality
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
from ddrs.published.own_logs import is_own, is_own_repository

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
    "calibration",
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


def is_calibration(pair: Pair) -> bool:
    """Whether ``pair`` measures Gaussian against Gaussian (:func:`headline`'s calibration): two distinct
    Gaussian logs (byte-identical copies are one entry) from different runs or repositories, of one σ,
    of architectures not known to differ (the same, or one unstated: Sun et al.'s Gaussian logs state
    none), neither known to be trained at another σ. Including the pairs not known to differ makes the
    calibration larger, so fewer wins count beyond it: the conservative side."""
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
    rows, pairs = [], []
    for entry in entries:
        for against, pair in comparisons(entry, families):
            rows.append(
                {
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
                    "calibration": pair is not None and not is_own(entry) and is_calibration(pair),
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
    by_inputs: dict[int, list[int]] = {}
    for k in tested:
        by_inputs.setdefault(len(pairs[k].shared), []).append(k)
    for members in by_inputs.values():
        differences = np.stack([evidence[k][0].acr[SINGLE_ACR] - evidence[k][1].acr[SINGLE_ACR] for k in members], 1)
        means = stats.bootstrap_means(differences, n_boot=inference.n_boot, seed=inference.seed, dataset=dataset)
        low, high = stats.percentile_interval(means, inference.alpha)
        p[members, -1] = stats.sign_flip_bound_p(differences)
        can_reject[members, -1] = (differences != 0).sum(axis=0) >= 2
        for j, k in enumerate(members):
            bounds = dict(zip(interval_columns(SINGLE_ACR), (float(low[j]), float(high[j])), strict=True))
            rows[k] |= {SINGLE_ACR: float(differences[:, j].mean()), **bounds}
    adjusted = np.full_like(p, np.nan)
    for family in (
        [k for k in tested if not is_own(pairs[k].variant)],
        [k for k in tested if is_own(pairs[k].variant)],
    ):
        if family:
            adjusted[family] = stats.holm(p[family].ravel(), can_reject[family].ravel()).reshape(len(family), -1)
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


#: the headline's columns, in order
HEADLINE_COLUMNS = (
    "against",
    "logs",
    "family",
    "extra_data",
    "methods",
    "methods_better_calibrated",
    "compared",
    "better_ACR",
    "better_rate",
    "better_ACR_calibrated",
    "calibrated_rate",
    "worse_ACR",
    "better_somewhere",
    "worse_somewhere",
    "not_compared",
    "gaussian_compared",
    "gaussian_better_ACR",
    "gaussian_vs_gaussian",
    "gaussian_vs_gaussian_better",
    "gaussian_vs_gaussian_rate",
    "calibration_margin",
)
#: ``family`` of a headline row over every family
ALL_FAMILIES = "all"


def calibration(table: pd.DataFrame, alpha: float) -> tuple[int, int, float]:
    """Gaussian against Gaussian in a comparisons table (its ``calibration`` rows under the rule's
    baseline, :func:`is_calibration`): how many, how many significantly better on ACR (Holm p <
    ``alpha``), and the margin, the largest |ΔACR| among them (NaN where there is none)."""
    rows = table[(table["against"] == MATCHED) & table["calibration"].astype(bool)]
    differences = rows["ACR"].astype(float)
    better = (rows["ACR_p_holm"].astype(float) < alpha) & (differences > 0)
    margin = float(differences.abs().max()) if len(rows) else float("nan")
    return len(rows), int(better.sum()), margin


def headline(table: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """The leaderboard's headline of a comparisons table (:func:`gaussian_comparisons_table`, or its CSV
    read back).

    **Calibrated against Gaussian itself.** The test of a row sees the noise of drawing test inputs,
    not the variation between training or certification runs: two Gaussian logs of one σ and
    architecture from different runs or repositories "beat" each other too. Every row therefore
    states the Gaussian-against-Gaussian rate (``gaussian_vs_gaussian``: the calibration rows,
    :func:`calibration`; ``_better``: those significantly better; ``_rate``) beside its own, and a
    log counts as beating Gaussian beyond that calibration (``better_ACR_calibrated``) only where it is
    significantly better on ACR (Holm p < ``alpha``) *and* its ACR difference exceeds
    ``calibration_margin``, the largest |ΔACR| between two such Gaussian logs on the dataset (pooled
    over σ). Where the dataset has no calibration pair, no win is counted beyond it (NaN).

    **Rows.** One per Gaussian baseline (``against``) over every family (``family`` = ``all``), and
    the rule's baseline again on the logs an alternative one applies to (``logs``: which); then, under
    the rule's baseline, one per family and extra training data. ``methods`` counts methods (a
    repository's name with one architecture), ``methods_better_calibrated`` those with at least one log
    beating Gaussian beyond the calibration; the other counts are logs. Gaussian logs and a user's own
    logs are not counted among the methods; the Gaussian logs compared are counted apart."""
    published = table[~table["repository"].astype(str).map(is_own_repository)]
    counts = calibration(published, alpha)
    rows = [_headline_row(published, MATCHED, "all", alpha, counts)]
    for against in ALTERNATIVE_GAUSSIANS.values():
        logs = set(published.loc[published["against"] == against, "log"])
        if not logs:
            continue
        applies = f"those {against} applies to"
        rows.append(_headline_row(published, against, applies, alpha, counts))
        rows.append(_headline_row(published[published["log"].isin(logs)], MATCHED, applies, alpha, counts))
    methods = published[published["family"] != GAUSSIAN_FAMILY]
    extra = methods["extra_data"].fillna("").astype(str)
    for (family, extra_data), members in methods.groupby([methods["family"], extra], sort=True):
        rows.append(_headline_row(members, MATCHED, "all", alpha, counts, family=family, extra_data=extra_data))
    return pd.DataFrame(rows, columns=list(HEADLINE_COLUMNS))


def _headline_row(
    table: pd.DataFrame,
    against: str,
    logs: str,
    alpha: float,
    counts: tuple[int, int, float],
    family: str = ALL_FAMILIES,
    extra_data: str = "",
) -> dict:
    at = table[table["against"] == against]
    gaussian = at["family"] == GAUSSIAN_FAMILY
    tested = at["tested"].astype(bool)
    difference = at["ACR"].astype(float)
    significant = at["ACR_p_holm"].astype(float) < alpha
    better, worse = significant & (difference > 0), significant & (difference < 0)
    pairs, pairs_better, margin = counts
    calibrated = better & (difference > margin) if pairs else pd.Series(False, index=at.index)
    compared = tested & ~gaussian
    method = at["repository"].astype(str) + "\0" + at["method"].astype(str) + "\0" + at["arch"].fillna("").astype(str)
    return {
        "against": against,
        "logs": logs,
        "family": family,
        "extra_data": extra_data,
        "methods": int(method[compared].nunique()),
        "methods_better_calibrated": int(method[compared & calibrated].nunique()) if pairs else np.nan,
        "compared": int(compared.sum()),
        "better_ACR": int((compared & better).sum()),
        "better_rate": _rate(int((compared & better).sum()), int(compared.sum())),
        "better_ACR_calibrated": int((compared & calibrated).sum()) if pairs else np.nan,
        "calibrated_rate": _rate(int((compared & calibrated).sum()), int(compared.sum())) if pairs else np.nan,
        "worse_ACR": int((compared & worse).sum()),
        "better_somewhere": int((compared & (at["better_at"].fillna("") != "")).sum()),
        "worse_somewhere": int((compared & (at["worse_at"].fillna("") != "")).sum()),
        "not_compared": int((~tested & ~gaussian).sum()),
        "gaussian_compared": int((tested & gaussian).sum()),
        "gaussian_better_ACR": int((tested & gaussian & better).sum()),
        "gaussian_vs_gaussian": pairs,
        "gaussian_vs_gaussian_better": pairs_better,
        "gaussian_vs_gaussian_rate": _rate(pairs_better, pairs),
        "calibration_margin": margin,
    }


def _rate(part: int, whole: int) -> float:
    return part / whole if whole else float("nan")
