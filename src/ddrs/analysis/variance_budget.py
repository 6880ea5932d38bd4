"""Where a replicated recipe's uncertainty comes from: runs, inputs, the residual (DESIGN.md, "Replication").

For one fixed-σ model recipe (method, σ₀) trained in R runs and certified on N shared test inputs,
a metric (ACR, or certified accuracy at r) is the mean over inputs of per-input values y[r, i], which
follow the crossed runs × inputs model of :mod:`ddrs.analysis.crossed`. One run's metric, on a new
run and a new test set of N inputs, has the variance

    σ²_run + σ²_input/N + σ²_residual/N,

and the table partitions it: ``sigma2_<part>`` the moment estimates of the components (a negative
one shown as 0, named in ``flag``), ``share_<part>`` each part's share (they sum to 1). The claims'
paired differences have their own partition, in the claims table (:mod:`ddrs.analysis.claims`).

**Monte Carlo.** Run 0's model re-certified ``replication.monte_carlo`` times with other CERTIFY
noise (those logs beside its own) gives the variance of one model's per-input value from its noise
draws alone, σ²_monte_carlo = mean_i var_d(z[d, i]), and its share
σ²_monte_carlo/N of the same total. It is not a fourth part: every run is certified with the same
draws (common random numbers), so the noise's effect shared by the runs lies in the input part and
the rest in the residual; ``share_monte_carlo`` shows how much of those two it accounts for.

A metric that varies at no level (no input certified at that radius in any run or draw) is left out.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ddrs.analysis.assemble import SCIENTIFIC_ATTR, radius_column
from ddrs.analysis.crossed import PARTS, MeanSquares, partition
from ddrs.analysis.evidence import per_input
from ddrs.analysis.loading import load_records
from ddrs.analysis.log_record import LogRecord, load_log
from ddrs.analysis.tables import Radii, radii_for

PART_NAMES = {"run": "training runs", "input": "test inputs", "residual": "residual", "monte_carlo": "Monte Carlo"}
#: the table's variance columns, printed in scientific notation
VARIANCES = [*(f"sigma2_{part}" for part in PARTS), "sigma2_monte_carlo"]
#: the table's columns, in order
COLUMNS = [
    *("dataset", "variant", "sigma0", "runs", "inputs", "monte_carlo", "metric", "value"),
    *VARIANCES,
    *(f"share_{part}" for part in (*PARTS, "monte_carlo")),
    *("dominant", "flag"),
]


def metric_values(log: pd.DataFrame, radii: Sequence[float]) -> tuple[list[str], np.ndarray]:
    """Per-input values of a log's metrics, inputs × metrics: 100 · "certified at r" per radius, then
    the radius (0 where wrong) whose mean is the ACR."""
    correct, radius = per_input(log)
    certified = [100.0 * (correct & (radius >= r)) for r in radii]
    return [radius_column(r) for r in radii] + ["ACR"], np.stack([*certified, radius], axis=1)


def budget_rows(runs: np.ndarray, monte_carlo: np.ndarray, columns: Sequence[str]) -> list[dict]:
    """The partition of each metric's variance (module docstring): ``runs`` is runs × inputs ×
    metrics (at least two runs), ``monte_carlo`` certifications of run 0 × inputs × metrics (its first
    the run's own log); metrics that vary at no level are left out."""
    inputs = runs.shape[1]
    components = MeanSquares.of(runs).components()
    noise = monte_carlo.var(axis=0, ddof=1).mean(axis=0) if len(monte_carlo) > 1 else np.full(len(columns), np.nan)
    rows = []
    for j, metric in enumerate(columns):
        estimates = {part: float(components[part][j]) for part in PARTS}
        row = partition(estimates, {"run": 1.0, "input": 1 / inputs, "residual": 1 / inputs})
        total = row["sigma2_run"] + (row["sigma2_input"] + row["sigma2_residual"]) / inputs
        if total == 0 and not noise[j] > 0:
            continue
        shares = {part: row[f"share_{part}"] for part in PARTS}
        rows.append(
            {"metric": metric, "value": float(runs[:, :, j].mean())}
            | row
            | {
                "sigma2_monte_carlo": float(noise[j]),
                "share_monte_carlo": float(noise[j]) / inputs / total if total > 0 else math.nan,
                "dominant": PART_NAMES[max(shares, key=shares.get)] if total > 0 else PART_NAMES["monte_carlo"],
            }
        )
    return rows


def variance_budget(records: Sequence[LogRecord], monte_carlo: Sequence[str | os.PathLike] = (), radii: Radii = None):
    """The variance budget table and its figure, per dataset, method and σ₀ of at least two runs
    (module docstring).

    ``records`` are fixed-σ logs of every training run; ``monte_carlo`` the re-certifications of run
    0's models, each beside its model's own log (the same directory).
    """
    recertified: dict[Path, list[pd.DataFrame]] = {}
    for path in monte_carlo:
        recertified.setdefault(Path(path).parent, []).append(load_log(path))
    groups: dict[tuple, dict[int, tuple[LogRecord, pd.DataFrame]]] = {}
    for record, log in load_records(records):
        groups.setdefault((record.dataset, record.name, record.sigma0), {})[record.replicate] = (record, log)
    rows = []
    for (dataset, name, sigma0), by_run in groups.items():
        if len(by_run) < 2:
            continue
        first, log0 = by_run[0]
        grid = radii_for(radii, dataset, first.norm)
        columns, _ = metric_values(log0, grid)
        runs = np.stack([metric_values(by_run[r][1], grid)[1] for r in sorted(by_run)])
        draws = [log0, *recertified.get(Path(first.source).parent, [])]
        mc = np.stack([metric_values(log, grid)[1] for log in draws])
        keys = {"dataset": dataset, "variant": name, "sigma0": sigma0, "runs": len(by_run), "inputs": runs.shape[1]}
        rows += [keys | {"monte_carlo": len(draws) - 1} | row for row in budget_rows(runs, mc, columns)]
    table = pd.DataFrame(rows, columns=COLUMNS)
    table.attrs[SCIENTIFIC_ATTR] = VARIANCES
    return table, budget_figure(table)


def budget_figure(table: pd.DataFrame) -> Figure:
    """Each metric's variance split into its three parts (stacked shares), with the Monte Carlo share
    marked (it lies within the input and residual parts), one panel per recipe."""
    panels = list(dict.fromkeys(zip(table["dataset"], table["variant"], table["sigma0"], strict=True)))
    columns = 3
    rows = max(1, math.ceil(len(panels) / columns))
    figure = Figure(figsize=(4.2 * columns, 2.8 * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False, sharey=True)
    colours = {"run": "tab:red", "input": "tab:blue", "residual": "tab:gray"}
    for ax, (dataset, variant, sigma0) in zip(axes.flat, panels, strict=False):
        block = table[(table["dataset"] == dataset) & (table["variant"] == variant) & (table["sigma0"] == sigma0)]
        bottom = np.zeros(len(block))
        for part in PARTS:
            share = block[f"share_{part}"].fillna(0).to_numpy()
            ax.bar(block["metric"], share, bottom=bottom, color=colours[part], label=PART_NAMES[part])
            bottom += share
        ax.plot(block["metric"], block["share_monte_carlo"], "k_", markersize=10, label=PART_NAMES["monte_carlo"])
        runs = int(block["runs"].iloc[0])
        ax.set_title(f"{variant} σ₀={sigma0:g} ({dataset}, {runs} runs)", fontsize=9)
        ax.tick_params(axis="x", labelrotation=90, labelsize=7)
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    axes[0, 0].set_ylabel("share of one run's variance")
    axes[0, 0].legend(fontsize=7, loc="lower left")
    figure.suptitle("Variance budget: certified accuracy at r (%) and ACR", fontsize=10)
    return figure
