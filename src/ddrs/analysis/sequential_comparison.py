"""Sequential against fixed-n certification on the same test inputs, σ and model (issue 40).

One row per radius of the grid: both certified accuracies with their 95% Clopper–Pearson
intervals, the difference in points, the exact McNemar test between the paired certificates with
Holm's adjustment over the grid; then, the same on every row, ACR under both (as logged, and with
both sides' radii floored to the grid, :func:`grid_acr`: a sequential input stops once its grid
is decided, so only the floored figures compare like with like), forward passes per
input (selection included: n0 + n for fixed n, the log's ``draws`` for sequential; mean, median,
99th percentile), the share of sequential inputs still undecided at the cap, and the wall time
per input (the logs' ``time``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ddrs.analysis.metrics import acr, certified_accuracy
from ddrs.analysis.stats import holm, mcnemar
from ddrs.core.binomial import clopper_pearson
from ddrs.logs.certification_log import read_log

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _certified(log: pd.DataFrame, radii: np.ndarray) -> np.ndarray:
    """``(radii, inputs)``: input certified correctly at radius at least r."""
    correct = log["correct"].to_numpy() == 1
    return correct[None, :] & (log["radius"].to_numpy(float)[None, :] >= radii[:, None])


def grid_acr(log: pd.DataFrame, radii: Sequence[float]) -> float:
    """ACR with each radius floored to the largest radius of ``radii`` it reaches (0 below them all,
    wrong or abstained inputs 0): what a table on that grid credits the log with."""
    grid = np.sort(np.asarray(radii, dtype=float))
    radius = log["radius"].to_numpy(float)
    reached = np.searchsorted(grid, radius, side="right") - 1
    floored = np.where(reached >= 0, grid[np.maximum(reached, 0)], 0.0)
    return float((floored * (log["correct"].to_numpy() == 1)).mean())


def _passes(draws: np.ndarray) -> dict[str, float]:
    return {"mean": float(draws.mean()), "median": float(np.median(draws)), "p99": float(np.percentile(draws, 99))}


def sequential_comparison(
    fixed: pd.DataFrame, sequential: pd.DataFrame, *, radii: Sequence[float], n0: int, n: int
) -> pd.DataFrame:
    """The comparison of a fixed-n log (``n0 + n`` forward passes per input) and a sequential log
    (its ``draws`` and ``decided`` columns) of the same inputs; ``attrs`` hold the per-log figures."""
    if sorted(fixed["idx"]) != sorted(sequential["idx"]):
        raise ValueError("the fixed-n and sequential logs must hold the same test inputs")
    missing = {"draws", "decided"} - set(sequential.columns)
    if missing:
        raise ValueError(f"the sequential log lacks {sorted(missing)}: was it written with --mode sequential?")
    fixed, sequential = fixed.sort_values("idx"), sequential.sort_values("idx")
    radii = np.asarray(radii, dtype=float)
    inputs = len(fixed)
    a_only, b_only, p = mcnemar(_certified(sequential, radii), _certified(fixed, radii))
    columns = {"radius": radii}
    for name, log in (("fixed", fixed), ("sequential", sequential)):
        accuracy = certified_accuracy(log, radii).to_numpy()
        low, high = clopper_pearson(np.round(accuracy * inputs), inputs)
        columns |= {name: 100 * accuracy, f"{name}_low": 100 * low, f"{name}_high": 100 * high}
    columns |= {
        "difference": columns["sequential"] - columns["fixed"],
        "sequential_only": a_only,
        "fixed_only": b_only,
        "mcnemar_p": p,
        "mcnemar_p_holm": holm(p),
    }
    table = pd.DataFrame(columns)
    draws = sequential["draws"].to_numpy(float)
    summary = {
        "inputs": inputs,
        "acr_fixed": acr(fixed),
        "acr_sequential": acr(sequential),
        "acr_fixed_grid": grid_acr(fixed, radii),
        "acr_sequential_grid": grid_acr(sequential, radii),
        **{f"passes_fixed_{k}": v for k, v in _passes(np.full(inputs, float(n0 + n))).items()},
        **{f"passes_sequential_{k}": v for k, v in _passes(draws).items()},
        "undecided_at_cap": float(1 - sequential["decided"].to_numpy(float).mean()),
        "seconds_fixed": float(fixed["time"].mean()),
        "seconds_sequential": float(sequential["time"].mean()),
    }
    table.attrs.update(summary)
    return table.assign(**{key: value for key, value in summary.items() if key != "inputs"})


def sequential_table(
    fixed: Mapping[str, str | os.PathLike],
    sequential: Mapping[str, str | os.PathLike],
    *,
    radii: Sequence[float],
    n0: int,
    n: int,
) -> tuple[pd.DataFrame, Figure]:
    """The catalogue's comparison: :func:`sequential_comparison` for each σ (label → log path),
    stacked with a ``sigma`` column, and :func:`draws_figure` of the sequential logs."""
    logs = {sigma: (read_log(fixed[sigma]), read_log(sequential[sigma])) for sigma in fixed}
    tables = [
        sequential_comparison(pair[0], pair[1], radii=radii, n0=n0, n=n).assign(sigma=float(sigma))
        for sigma, pair in logs.items()
    ]
    table = pd.concat(tables, ignore_index=True)
    table = table[["sigma", *(c for c in table.columns if c != "sigma")]]
    return table, draws_figure({sigma: pair[1] for sigma, pair in logs.items()}, n0=n0, n=n)


def draws_figure(sequential: Mapping[str, pd.DataFrame], *, n0: int, n: int) -> Figure:
    """Forward passes per input (selection included, log scale) against p̲_A at the stop, one panel
    per σ; fixed-n CERTIFY's n0 + n as a line, inputs stopped by the cap undecided in red."""
    from ddrs.analysis.plots import panels

    figure, axes = panels(len(sequential), sharey=True)
    for ax, (sigma, log) in zip(axes, sequential.items(), strict=True):
        decided = log["decided"].to_numpy() == 1
        for mask, colour, label in ((decided, "tab:blue", "decided"), (~decided, "tab:red", "undecided at the cap")):
            ax.scatter(log["p_a_lower"][mask], log["draws"][mask], s=6, color=colour, label=label)
        ax.axhline(n0 + n, color="black", linestyle="--", linewidth=1, label=f"fixed n0 + n = {n0 + n:,}")
        ax.set_yscale("log")
        ax.set_xlabel("p̲A at the stop")
        ax.set_title(f"σ = {sigma}")
    axes[0].set_ylabel("forward passes per input")
    axes[0].legend(fontsize=7)
    return figure
