"""Where a table's uncertainty comes from: training runs, test inputs, Monte Carlo (DESIGN.md, "Replication").

For one fixed-σ model recipe (method, σ₀) trained in R runs and certified on N shared test inputs,
a metric (ACR, or certified accuracy at r) is the mean over inputs of per-input values y[r, i].
Its variance splits into three parts, each estimated by moments:

- **training runs**: ``var_r(m_r)``, the variance of the run's metric m_r between runs on the same
  inputs and (common random numbers) the same noise draws, R − 1 degrees of freedom;
- **test inputs**: ``mean_r var_i(y[r, i]) / N``, the sampling variance of one run's metric over a
  test set of N inputs (binomial for certified accuracy);
- **Monte Carlo**: ``mean_i var_d(z[d, i]) / N`` over run 0's log and its re-certifications d with
  other CERTIFY noise (``replication.monte_carlo``), the variance of one model's metric from its
  noise draws alone.

Its table says which part dominates, and how many runs a paired comparison of two such recipes
needs to detect a difference ``effect`` with power 0.8 at level α: the paired t-test of R per-run
differences, each with variance 2·var_r (two independent runs), solved by statsmodels'
``TTestPower``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ddrs.analysis.assemble import radius_column
from ddrs.analysis.evidence import per_input
from ddrs.analysis.loading import load_records
from ddrs.analysis.log_record import LogRecord, load_log
from ddrs.analysis.stats import DEFAULT_INFERENCE, Inference
from ddrs.analysis.tables import Radii, radii_for

PARTS = ("runs", "inputs", "monte_carlo")
PART_NAMES = {"runs": "training runs", "inputs": "test inputs", "monte_carlo": "Monte Carlo"}
POWER = 0.8
#: where statsmodels' solver fails, :func:`runs_needed` scans run counts up to this many (NaN beyond)
MAX_RUNS_SCANNED = 1000


def metric_values(log: pd.DataFrame, radii: Sequence[float]) -> tuple[list[str], np.ndarray]:
    """Per-input values of a log's metrics, inputs × metrics: 100 · "certified at r" per radius, then
    the radius (0 where wrong) whose mean is the ACR."""
    correct, radius = per_input(log)
    certified = [100.0 * (correct & (radius >= r)) for r in radii]
    return [radius_column(r) for r in radii] + ["ACR"], np.stack([*certified, radius], axis=1)


def runs_needed(effect: float, run_variance: float, alpha: float) -> float:
    """Runs per method for a paired t-test over runs to detect ``effect`` with power :data:`POWER`
    at ``alpha`` when each run's metric varies by ``run_variance`` (module docstring); NaN where the
    runs do not vary (any two runs detect it).

    statsmodels' root finder returns NaN where the answer is two or three runs (effect sizes from
    about 8: the noncentral t at 1 degree of freedom); there the least run count from 2 up whose
    power reaches :data:`POWER` is taken, a power it cannot evaluate counting as not reached (NaN if
    none up to :data:`MAX_RUNS_SCANNED` does, rather than scan without end).
    """
    import warnings

    from statsmodels.stats.power import TTestPower
    from statsmodels.tools.sm_exceptions import ConvergenceWarning

    if run_variance <= 0:
        return math.nan
    size, test = effect / math.sqrt(2 * run_variance), TTestPower()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        solved = test.solve_power(effect_size=size, alpha=alpha, power=POWER, alternative="two-sided")
    if math.isfinite(solved):
        return float(math.ceil(solved))
    for runs in range(2, MAX_RUNS_SCANNED + 1):
        if test.power(effect_size=size, nobs=runs, alpha=alpha, alternative="two-sided") >= POWER:
            return float(runs)
    return math.nan


def budget_rows(runs: np.ndarray, monte_carlo: np.ndarray, columns: Sequence[str]) -> list[dict]:
    """The three parts of each metric's variance (module docstring): ``runs`` is runs × inputs ×
    metrics, ``monte_carlo`` certifications of run 0 × inputs × metrics (its first the run's own log)."""
    n = runs.shape[1]
    per_run = runs.mean(axis=1)
    parts = {
        "runs": per_run.var(axis=0, ddof=1) if runs.shape[0] > 1 else np.full(len(columns), np.nan),
        "inputs": runs.var(axis=1, ddof=1).mean(axis=0) / n,
        "monte_carlo": monte_carlo.var(axis=0, ddof=1).mean(axis=0) / n
        if monte_carlo.shape[0] > 1
        else np.full(len(columns), np.nan),
    }
    rows = []
    for j, metric in enumerate(columns):
        values = {part: float(parts[part][j]) for part in PARTS}
        total = sum(v for v in values.values() if np.isfinite(v))
        known = {part: v for part, v in values.items() if np.isfinite(v)}
        row = {"metric": metric, "value": float(per_run[:, j].mean())}
        row |= {f"var_{part}": values[part] for part in PARTS}
        row |= {f"share_{part}": values[part] / total if total > 0 else math.nan for part in PARTS}
        row["dominant"] = PART_NAMES[max(known, key=known.get)] if total > 0 else "none (no variance)"
        rows.append(row)
    return rows


def variance_budget(
    records: Sequence[LogRecord],
    monte_carlo: Sequence[str | os.PathLike] = (),
    radii: Radii = None,
    *,
    effect_acr: float = 0.02,
    effect_accuracy: float = 2.0,
    inference: Inference = DEFAULT_INFERENCE,
):
    """The variance budget table and its figure, per dataset, method and σ₀ (module docstring).

    ``records`` are fixed-σ logs of every training run; ``monte_carlo`` the re-certifications of run
    0's models, each beside its model's own log (the same directory).
    """
    loaded = load_records(records)
    recertified: dict[Path, list[pd.DataFrame]] = {}
    for path in monte_carlo:
        recertified.setdefault(Path(path).parent, []).append(load_log(path))
    groups: dict[tuple, dict[int, tuple[LogRecord, pd.DataFrame]]] = {}
    for record, log in loaded:
        groups.setdefault((record.dataset, record.name, record.sigma0), {})[record.replicate] = (record, log)
    rows = []
    for (dataset, name, sigma0), by_run in groups.items():
        first, log0 = by_run[0]
        grid = radii_for(radii, dataset, first.norm)
        columns, _ = metric_values(log0, grid)
        runs = np.stack([metric_values(by_run[r][1], grid)[1] for r in sorted(by_run)])
        draws = [log0, *recertified.get(Path(first.source).parent, [])]
        mc = np.stack([metric_values(log, grid)[1] for log in draws])
        for row in budget_rows(runs, mc, columns):
            effect = effect_acr if row["metric"] == "ACR" else effect_accuracy
            row |= {"effect": effect, "runs_needed": runs_needed(effect, row["var_runs"], inference.alpha)}
            rows.append(
                {
                    "dataset": dataset,
                    "variant": name,
                    "sigma0": sigma0,
                    "runs": len(by_run),
                    "monte_carlo": len(draws) - 1,
                    **row,
                }
            )
    table = pd.DataFrame(rows)
    return table, budget_figure(table)


def budget_figure(table: pd.DataFrame) -> Figure:
    """Each metric's variance split into its three parts (stacked shares), one panel per row and σ₀."""
    panels = list(dict.fromkeys(zip(table["dataset"], table["variant"], table["sigma0"], strict=True)))
    columns = 3
    rows = math.ceil(len(panels) / columns)
    figure = Figure(figsize=(4.2 * columns, 2.8 * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False, sharey=True)
    colours = {"runs": "tab:red", "inputs": "tab:blue", "monte_carlo": "tab:gray"}
    for ax, (dataset, variant, sigma0) in zip(axes.flat, panels, strict=False):
        block = table[(table["dataset"] == dataset) & (table["variant"] == variant) & (table["sigma0"] == sigma0)]
        bottom = np.zeros(len(block))
        for part in PARTS:
            share = block[f"share_{part}"].fillna(0).to_numpy()
            ax.bar(block["metric"], share, bottom=bottom, color=colours[part], label=PART_NAMES[part])
            bottom += share
        runs = int(block["runs"].iloc[0])
        ax.set_title(f"{variant} σ₀={sigma0:g} ({dataset}, {runs} runs)", fontsize=9)
        ax.tick_params(axis="x", labelrotation=90, labelsize=7)
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    axes[0, 0].set_ylabel("share of variance")
    axes[0, 0].legend(fontsize=7, loc="lower left")
    figure.suptitle("Variance budget: certified accuracy at r (%) and ACR", fontsize=10)
    return figure
