"""Wins against the margin: how many published logs beat Gaussian beyond a ΔACR margin, as the margin grows.

The headline (:mod:`ddrs.published.headline`) counts a log as beating Gaussian beyond runs where it is
significantly better on ACR by the per-input test (Holm, p < α) and its ΔACR exceeds the run-level
margin of its σ (:mod:`ddrs.published.run_margin`). This figure shows that count for every margin
m ≥ 0 (the sensitivity curve): one step line per σ, the logs at that σ under the baseline rule's
Gaussian with Holm p < α and ΔACR > m (Gaussian logs and a user's own logs left out). At m = 0 it is
the per-input count; where the σ has one pooled margin it is marked (a dashed line and a dot at the
count it gives); a σ whose recipes' run spreads differ (Levene rejects: each comparison has its own
margin) says ``margin per recipe`` in its label, and one without replicated runs ``no replication
data``, neither with a mark, so a reader can see what any margin would give without one being
invented. The margin axis is linear
up to 10⁻³ ACR and logarithmic beyond (``symlog``), so the small run-level margins and the large
differences of the strongest methods both show.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ddrs.analysis.plots import PANEL_SIZE
from ddrs.published.families import GAUSSIAN_FAMILY
from ddrs.published.gaussian_comparisons import MATCHED
from ddrs.published.headline import published_rows
from ddrs.published.run_margin import NO_REPLICATION, PER_RECIPE_RULE, Margins

#: below this margin (ACR) the axis is linear, above it logarithmic
LINEAR_BELOW = 1e-3


def wins(table: pd.DataFrame, alpha: float) -> dict[float, np.ndarray]:
    """σ → the ΔACR of each published log other than Gaussian ones significantly better than the rule's
    Gaussian log on ACR (Holm p < ``alpha``), sorted; every σ of those logs compared, none dropped."""
    rows = published_rows(table)
    rows = rows[(rows["against"] == MATCHED) & rows["tested"].astype(bool) & (rows["family"] != GAUSSIAN_FAMILY)]
    difference = rows["ACR"].astype(float)
    better = (rows["ACR_p_holm"].astype(float) < alpha) & (difference > 0)
    return {
        float(sigma): np.sort(difference[better & (rows["sigma"] == sigma)].to_numpy())
        for sigma in sorted(rows["sigma"].astype(float).unique())
    }


def wins_beyond(differences: np.ndarray, margin: float) -> int:
    """How many of the winning ``differences`` exceed ``margin``."""
    return int((np.asarray(differences) > margin).sum())


def margin_figure(table: pd.DataFrame, replication: pd.DataFrame, dataset: str, alpha: float) -> Figure:
    """The sensitivity curve of a comparisons table (or its CSV) and its replication table (module docstring)."""
    by_sigma, margins = wins(table, alpha), Margins.of(replication)
    figure = Figure(figsize=(PANEL_SIZE[0] * 1.6, PANEL_SIZE[1] * 1.3), layout="constrained")
    ax = figure.subplots()
    largest = max([LINEAR_BELOW, *(float(d[-1]) for d in by_sigma.values() if len(d))])
    for k, (sigma, differences) in enumerate(by_sigma.items()):
        colour = f"C{k % 10}"
        margin = margins.pooled_margin(sigma)
        known = np.isfinite(margin)
        unmarked = "margin per recipe" if margins.rule(sigma) == PER_RECIPE_RULE else NO_REPLICATION
        label = (
            f"σ = {sigma:g}: margin {margin:.4f}, {wins_beyond(differences, margin)} of {len(differences)} wins"
            if known
            else f"σ = {sigma:g}: {unmarked} ({len(differences)} wins per input)"
        )
        steps = np.arange(len(differences), -1, -1)
        ax.step(np.r_[0.0, differences, largest * 1.1], np.r_[steps, 0], where="post", color=colour, label=label)
        if known:
            ax.axvline(margin, color=colour, linestyle="--", linewidth=0.8)
            ax.plot([margin], [wins_beyond(differences, margin)], "o", color=colour)
    ax.set_xscale("symlog", linthresh=LINEAR_BELOW)
    ax.set_xlim(0, largest * 1.1)
    ax.set_xlabel("margin m: ΔACR a win must exceed")
    ax.set_ylabel(f"logs better than Gaussian (Holm p < {alpha:g}) with ΔACR > m")
    ax.set_title(f"{dataset}: wins over Gaussian against the margin (dashed: run-level margin)", fontsize="medium")
    if by_sigma:
        ax.legend(fontsize="small")
    return figure
