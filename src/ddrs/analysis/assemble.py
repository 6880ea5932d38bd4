"""Table frames from row evidence: values, 95% intervals, and which cells are bold.

**CSV contract.** A table has its key columns, one column per radius (``"0.25"``, certified
accuracy in percent) and its ACR columns (``ACR_per_log`` and ``ACR_per_input_best``, or ``ACR``
for rows of one log), then for every such column ``c`` the columns ``c_low`` and ``c_high``: the
exact Clopper–Pearson interval over the reported test inputs for certified accuracy, and the seeded
percentile-bootstrap interval for ACR (both at level 1 − α). Markdown and LaTeX print a cell as
``value [low, high]`` (:mod:`ddrs.analysis.render`): both intervals are asymmetric (near 0 or
100 %, and for ACR), so ``± half-width`` would misstate them.

For an envelope cell the interval is that of the candidate that won it; it does not include the
optimism of choosing that candidate on the same inputs (``selection_optimism`` measures that).

**Bold.** A cell is bold when no other row of its comparable group (e.g. its dataset, rows of
one radius grid and one set of inputs) is significantly better. Every un-bolded cell is a claim,
so the family is the whole group: every unordered pair of tested rows × every tested column (the
radii, and ``ACR_per_log`` or ``ACR``), one Holm adjustment over all of them
(:func:`~ddrs.analysis.stats.holm`), less the tests that cannot reject whatever the data (fewer
than two inputs on which the two rows differ, e.g. a radius no row reaches). At a radius the test
is the exact McNemar test of the two rows' "certified at r" indicators; for ACR the paired
sign-flip permutation test of their per-input radii (:func:`~ddrs.analysis.stats.sign_flip_p`,
valid at any number of inputs, with enough sign patterns that its resolution never decides a
rejection). A row is significantly better than another in a column when their adjusted p is
below α and its value is the higher. So every row within noise of the best is bold; when all
tested rows of a group have the same value, none is.

Not tested, so never bold and never un-bolding another row: ``ACR_per_input_best``
(:data:`~ddrs.analysis.evidence.UNTESTED`), and every cell of a row chosen among several logs on
the inputs it reports (``selection="test"``; :attr:`~ddrs.analysis.evidence.Evidence.tested`),
whose choice favours the row with more logs. Under the paper's test selection a best table's rows
of several logs are therefore never bold; the ``held_out`` tables carry the tests.
The mask travels with the frame as ``frame.attrs["bold_cells"]`` (a frozenset of (row label,
column)), which :func:`ddrs.analysis.render.write_table` uses in place of the column maximum, and
α as ``frame.attrs["alpha"]`` (so a printed p-value keeps its side of α).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from ddrs.analysis.evidence import PER_INPUT_BEST, PER_LOG, SINGLE_ACR, UNTESTED, Evidence
from ddrs.analysis.stats import (
    DEFAULT_INFERENCE,
    Inference,
    bootstrap_means,
    flip_resamples,
    holm,
    mcnemar,
    percentile_interval,
    sign_flip_p,
)
from ddrs.core.binomial import clopper_pearson

ACR_COLUMNS = (PER_LOG, PER_INPUT_BEST, SINGLE_ACR)
BOLD_ATTR = "bold_cells"
#: the frame's significance level, for printing p-values on the right side of it
ALPHA_ATTR = "alpha"
#: the frame's columns printed in scientific notation (variances spanning many orders of magnitude)
SCIENTIFIC_ATTR = "scientific"


def radius_column(radius: float) -> str:
    """Column name of a radius: two decimals, as in the paper's headers, or as many as it needs
    (0.125), so that two radii of a grid never share a column."""
    two = f"{radius:.2f}"
    return two if abs(float(two) - radius) < 1e-9 else f"{radius:.15g}"


def is_radius(column) -> bool:
    try:
        float(column)
    except (TypeError, ValueError):
        return False
    return True


def metric_columns(frame: pd.DataFrame) -> list[str]:
    """The radius columns and ACR columns of a table, in order."""
    return [c for c in frame.columns if c in ACR_COLUMNS or is_radius(c)]


def interval_columns(column: str) -> tuple[str, str]:
    """Where a metric column's interval lies: ``<column>_low``, ``<column>_high``."""
    return f"{column}_low", f"{column}_high"


def ordered(frame: pd.DataFrame, leading: Sequence[str]) -> pd.DataFrame:
    """Keys, radius columns ascending, ACR columns, then the intervals in the same order."""
    radii = sorted({c for c in frame.columns if is_radius(c)}, key=float)
    metrics = radii + [c for c in ACR_COLUMNS if c in frame.columns]
    bounds = [b for c in metrics for b in interval_columns(c) if b in frame.columns]
    extra = [c for c in frame.columns if c not in set(leading) | set(metrics) | set(bounds)]
    return frame[[*leading, *metrics, *bounds, *extra]]


def assemble(
    rows: Sequence[tuple[dict, Evidence]],
    leading: Sequence[str],
    *,
    groups: Sequence[str] = ("dataset",),
    inference: Inference = DEFAULT_INFERENCE,
) -> pd.DataFrame:
    """One table row per (keys, evidence): values, intervals, and the bold mask (module docstring)."""
    records = [dict(keys) for keys, _ in rows]
    evidence = [e for _, e in rows]
    for record, e in zip(records, evidence, strict=True):
        k = e.certified.sum(axis=1)
        low, high = clopper_pearson(k, e.inputs, inference.alpha)
        for r, count, lo, hi in zip(e.radii, k, low, high, strict=True):
            column = radius_column(r)
            record[column] = 100 * count / e.inputs
            record.update(dict(zip(interval_columns(column), (100 * lo, 100 * hi), strict=True)))
        for column, values in e.acr.items():
            record[column] = float(values.mean())
    for record, intervals in zip(records, _bootstrap(evidence, inference), strict=True):
        for column, bounds in intervals.items():
            record.update(dict(zip(interval_columns(column), bounds, strict=True)))
    frame = ordered(pd.DataFrame(records), leading)
    keys = [g for g in groups if g in frame.columns]
    bold = set()
    for _, block in frame.groupby(keys, sort=False, dropna=False) if keys else [(None, frame)]:
        comparable: dict[tuple, list] = {}  # rows of one radius grid and one set of inputs
        for i in block.index:
            comparable.setdefault((evidence[i].radii, evidence[i].inputs), []).append(i)
        for members in comparable.values():
            bold |= _bold(frame, members, [evidence[i] for i in members], inference)
    frame.attrs[BOLD_ATTR] = frozenset(bold)
    frame.attrs[ALPHA_ATTR] = inference.alpha
    return frame


def _bootstrap(evidence: Sequence[Evidence], inference: Inference) -> list[dict]:
    """Per row, per ACR column: the bootstrap interval (low, high), resamples shared within a dataset."""
    out: list[dict] = [{} for _ in evidence]
    by_inputs: dict[tuple[str, int], list[tuple[int, str]]] = {}
    for i, e in enumerate(evidence):
        for column in e.acr:
            by_inputs.setdefault((e.dataset, e.inputs), []).append((i, column))
    for (dataset, _), cells in by_inputs.items():
        values = np.stack([evidence[i].acr[column] for i, column in cells], axis=1)
        means = bootstrap_means(values, n_boot=inference.n_boot, seed=inference.seed, dataset=dataset)
        low, high = percentile_interval(means, inference.alpha)
        for j, (i, column) in enumerate(cells):
            out[i][column] = (float(low[j]), float(high[j]))
    return out


def tested_columns(evidence: Sequence[Evidence]) -> list[str]:
    """The columns a test compares between these rows: each radius, then every ACR column all of
    them have that is tested (``ACR_per_log`` or ``ACR``; never ``ACR_per_input_best``)."""
    acr = [c for c in ACR_COLUMNS if c not in UNTESTED and all(c in e.acr for e in evidence)]
    return [radius_column(r) for r in evidence[0].radii] + acr


def pair_p_values(
    pairs: Sequence[tuple[Evidence, Evidence]], inference: Inference
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Unadjusted two-sided p-values of pairs of rows on the same inputs: (columns, p, can_reject),
    p and can_reject pairs × columns.

    Radius columns: the exact McNemar test of the indicators; tested ACR columns: the paired
    sign-flip permutation test of the per-input radii, all pairs of a call drawing the same flips
    from the stream of (``inference.seed``, the first row's dataset), as many as a Holm family of
    every test of the call needs (:func:`~ddrs.analysis.stats.flip_resamples`). ``can_reject``
    marks the tests with at least two inputs on which the rows differ: the others have p = 1
    whatever the data and stay out of the family (:func:`~ddrs.analysis.stats.holm`)."""
    columns = tested_columns([e for pair in pairs for e in pair])
    better, worse, p = mcnemar(np.stack([a.certified for a, _ in pairs]), np.stack([b.certified for _, b in pairs]))
    differing = better + worse
    acr = [c for c in columns if not is_radius(c)]
    flips = flip_resamples(len(pairs) * len(columns), inference.alpha)
    rows = list({id(e): e for pair in pairs for e in pair}.values())  # each row's sums once, for all its pairs
    position = {id(e): k for k, e in enumerate(rows)}
    indices = [(position[id(a)], position[id(b)]) for a, b in pairs]
    for column in acr:
        values = np.stack([e.acr[column] for e in rows], axis=1)  # inputs × rows
        tested = sign_flip_p(values, indices, n_resamples=flips, seed=inference.seed, dataset=pairs[0][0].dataset)
        p = np.concatenate([p, tested[:, None]], axis=1)
        unequal = [(values[:, a] != values[:, b]).sum() for a, b in indices]
        differing = np.concatenate([differing, np.array(unequal)[:, None]], axis=1)
    return columns, p, differing >= 2


def _bold(frame: pd.DataFrame, members: list, evidence: list[Evidence], inference: Inference) -> set:
    """Cells of one comparable group with no significantly better row: one Holm family over every
    unordered pair of tested rows × every tested column (module docstring)."""
    tested = [k for k, e in enumerate(evidence) if e.tested]
    if len(tested) < 2:
        return set()
    rows, evidence = [members[k] for k in tested], [evidence[k] for k in tested]
    pairs = list(combinations(range(len(rows)), 2))
    columns, p, can_reject = pair_p_values([(evidence[a], evidence[b]) for a, b in pairs], inference)
    significant = holm(p.ravel(), can_reject.ravel()).reshape(p.shape) < inference.alpha
    values = frame.loc[rows, columns].to_numpy(float)
    beats = np.zeros((len(rows), len(rows), len(columns)), dtype=bool)  # w significantly above j
    for k, (a, b) in enumerate(pairs):
        beats[a, b] = significant[k] & (values[a] > values[b])
        beats[b, a] = significant[k] & (values[b] > values[a])
    return _mask(rows, columns, values, beats)


def _mask(members: list, columns: list[str], values: np.ndarray, beats: np.ndarray) -> set:
    """(row, column) cells where nothing beats the row, in columns where not all rows are equal."""
    cells = set()
    for c, column in enumerate(columns):
        if np.ptp(values[:, c]) == 0 or np.isnan(values[:, c]).any():
            continue
        for j, row in enumerate(members):
            if not beats[:, j, c].any():
                cells.add((row, column))
    return cells
