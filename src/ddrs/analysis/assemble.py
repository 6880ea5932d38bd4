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

**Bold.** A cell is bold when no other row of its group (e.g. its dataset) is significantly
better: at a radius, better with an exact McNemar test Holm-adjusted across the group's radii
below α; for ACR, better with the paired-bootstrap interval of the difference above 0. So every
row within noise of the best is bold; when all rows of a group have the same value, none is.
``ACR_per_input_best`` is never bold (:data:`~ddrs.analysis.evidence.UNTESTED`).
The mask travels with the frame as ``frame.attrs["bold_cells"]`` (a frozenset of (row label,
column)), which :func:`ddrs.analysis.render.write_table` uses in place of the column maximum.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ddrs.analysis.evidence import PER_INPUT_BEST, PER_LOG, SINGLE_ACR, UNTESTED, Evidence
from ddrs.analysis.stats import DEFAULT_INFERENCE, Inference, bootstrap_means, holm, mcnemar_p, percentile_interval
from ddrs.binomial import clopper_pearson

ACR_COLUMNS = (PER_LOG, PER_INPUT_BEST, SINGLE_ACR)
BOLD_ATTR = "bold_cells"


def radius_column(radius: float) -> str:
    """Column name of a radius: two decimals, as in the paper's headers."""
    return f"{radius:.2f}"


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
    samples = _bootstrap(evidence, inference)
    for i, record in enumerate(records):
        for column, (_, low, high) in samples[i].items():
            record.update(dict(zip(interval_columns(column), (low, high), strict=True)))
    frame = ordered(pd.DataFrame(records), leading)
    keys = [g for g in groups if g in frame.columns]
    bold = set()
    for _, block in frame.groupby(keys, sort=False, dropna=False) if keys else [(None, frame)]:
        comparable: dict[tuple, list] = {}  # rows of one radius grid and one set of inputs
        for i in block.index:
            comparable.setdefault((evidence[i].radii, evidence[i].inputs), []).append(i)
        for members in comparable.values():
            bold |= _bold_ca(frame, members, [evidence[i] for i in members], inference.alpha)
            bold |= _bold_acr(frame, members, [samples[i] for i in members], inference.alpha)
    frame.attrs[BOLD_ATTR] = frozenset(bold)
    return frame


def _bootstrap(evidence: Sequence[Evidence], inference: Inference) -> list[dict]:
    """Per row, per ACR column: (bootstrap means, low, high), resamples shared within a dataset."""
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
            out[i][column] = (means[:, j], float(low[j]), float(high[j]))
    return out


def _bold_ca(frame: pd.DataFrame, members: list, evidence: list[Evidence], alpha: float) -> set:
    """Certified-accuracy cells of one group with no significantly better row (Holm over radii)."""
    if len(members) < 2:
        return set()
    certified = np.stack([e.certified for e in evidence]).astype(float)  # rows × radii × inputs
    both = np.einsum("wri,jri->wjr", certified, certified)
    count = certified.sum(axis=2)
    better = count[:, None, :] - both  # w certified, j not
    p = mcnemar_p(better, better.transpose(1, 0, 2))
    adjusted = np.apply_along_axis(holm, 2, p)
    values = frame.loc[members, [radius_column(r) for r in evidence[0].radii]].to_numpy(float)
    beats = (values[:, None, :] > values[None, :, :]) & (adjusted < alpha)  # w significantly above j
    return _mask(members, [radius_column(r) for r in evidence[0].radii], values, beats)


def _bold_acr(frame: pd.DataFrame, members: list, samples: list[dict], alpha: float) -> set:
    """ACR cells of one group with no row whose paired-bootstrap difference is above 0."""
    if len(members) < 2:
        return set()
    bold = set()
    for column in [c for c in ACR_COLUMNS if c not in UNTESTED and all(c in s for s in samples)]:
        draws = np.stack([s[column][0] for s in samples], axis=1)  # n_boot × rows
        values = frame.loc[members, column].to_numpy(float)[:, None]
        lows = np.stack([percentile_interval(draws[:, [w]] - draws, alpha)[0] for w in range(len(members))])
        beats = (values[:, None, :] > values[None, :, :]) & (lows > 0)[:, :, None]
        bold |= _mask(members, [column], values, beats)
    return bold


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
