"""Our certified-accuracy curves with the DDRS paper's printed points on top (Tables 1–4).

Save the figure with :func:`ddrs.analysis.plots.save_figure`.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
from matplotlib.figure import Figure

from ddrs.analysis.plots import ACCURACY_LABEL, BAND_OPACITY, PANEL_SIZE
from ddrs.analysis.reference import APPENDIX_H_TABLES, BEST_TABLES, table_cells

TABLE_TITLES = {"table1": "Table 1", "table2": "Table 2", "table3": "Table 3", "table4": "Table 4"}


def paper_overlay_figure(ours: Mapping[str, pd.DataFrame], reference: pd.DataFrame) -> Figure:
    """One panel per (table, dataset) of Tables 1–4: our best certified accuracy per radius for
    each variant (lines, with our 95% Clopper–Pearson band where the table has intervals) and the
    paper's printed value at each of its radii (open circles, same colour). Table 4 is ℓ1, the
    others ℓ2.

    ``ours`` maps ``table1`` … ``table4`` to our tables as the table rules write them;
    ``reference`` is :func:`~ddrs.analysis.reference.reference_numbers`. Appendix H tables have
    one curve per (σ₀, K) and are compared in :func:`~ddrs.analysis.reference.paper_comparison`.
    """
    appendix = sorted(set(ours) & set(APPENDIX_H_TABLES))
    if appendix:
        raise ValueError(f"the overlay draws Tables 1–4; compare {appendix} with paper_comparison")
    cells = [table_cells(name, table) for name, table in ours.items()]
    cells = pd.concat(cells, ignore_index=True) if cells else pd.DataFrame(columns=["table", "dataset"])
    panels = list(dict.fromkeys(zip(cells["table"], cells["dataset"], strict=True)))
    if not panels:
        raise ValueError("no table given: pass at least one of " + ", ".join(BEST_TABLES))
    figure = Figure(figsize=(PANEL_SIZE[0] * len(panels), PANEL_SIZE[1]), layout="constrained")
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    for ax, (table, dataset) in zip(axes, panels, strict=True):
        _draw_panel(ax, cells, reference, table, dataset)
    axes[0].set_ylabel(ACCURACY_LABEL)
    figure.suptitle("Ours (lines) and the DDRS paper (circles)")
    return figure


def _draw_panel(ax, cells: pd.DataFrame, reference: pd.DataFrame, table: str, dataset: str) -> None:
    ours = cells[(cells["table"] == table) & (cells["dataset"] == dataset) & (cells["metric"] == "certified_accuracy")]
    paper = reference[
        (reference["table"] == table)
        & (reference["dataset"] == dataset)
        & (reference["metric"] == "certified_accuracy")
    ]
    for variant, curve in ours.groupby("variant", sort=False):
        curve = curve.dropna(subset=["ours"]).sort_values("radius")
        (line,) = ax.plot(curve["radius"], curve["ours"], label=variant)
        if curve["ours_low"].notna().all():
            band = {"color": line.get_color(), "alpha": BAND_OPACITY, "linewidth": 0}
            ax.fill_between(curve["radius"], curve["ours_low"], curve["ours_high"], **band)
        printed = paper[paper["variant"] == variant]
        if len(printed):
            ax.plot(printed["radius"], printed["value"], "o", mfc="none", color=line.get_color())
    ax.set_title(f"{TABLE_TITLES[table]}: {dataset}")
    ax.set_xlabel(f"ℓ{1 if table == 'table4' else 2} radius")
    ax.legend(fontsize="small")
