"""The leaderboard's figures: the best methods' certified-accuracy envelopes, and p_A recovered from radii.

**Which methods.** The ``top`` methods of the leaderboard by their envelope's ``ACR_per_log`` (the
best ACR of any one of their logs; :func:`shown_methods`), and the best Gaussian method if none of
them is Gaussian. The table holds them all; a figure of hundreds of curves would show none.

**Curves.** Per method, its envelope over its logs (σ, runs) at each radius of a dense grid, with
the exact Clopper–Pearson band of the log that wins each radius over the method's inputs
(:func:`ddrs.analysis.plots.accuracy_curve`).

**p_A recovered.** Sun et al. (2024, §4.3, Fig. 3) plot the distribution of p_A, the probability
of the true class under noise. Published logs hold no p_A; for a Gaussian log certified by Cohen et
al.'s CERTIFY, radius = σ·Φ⁻¹(p̲_A), so p̲_A = Φ(radius/σ) on rows with radius > 0
(:func:`recovered_p_a_lower`). That is the one-sided Clopper–Pearson lower bound at level α on
p_A, not p_A itself, and only to the radius' printed precision (three significant digits). A row
with radius 0 or an abstention says only p̲_A ≤ ½; a row with ``correct == 0`` bounds the predicted
class, not the true one. Such rows are drawn at 0, as the project's p_A figures draw wrong and
abstained predictions (:func:`ddrs.analysis.metrics.true_class_p_a_lower`). One panel per σ, one
line per shown method (its first log at that σ of a model trained at σ, else its first log at σ).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy.special import ndtr

from ddrs.analysis.metrics import acr, certified_accuracy, envelope, radius_grid
from ddrs.analysis.plots import ACCURACY_LABEL, PANEL_SIZE, accuracy_curve, p_a_cdf_figure
from ddrs.published.leaderboard import GAUSSIAN, Entry, MethodKey, methods

#: methods a figure shows by default
TOP_METHODS = 8
#: what a p_A figure says about its recovery, under its panels
P_A_NOTE = (
    "p̲A = Φ(radius/σ): the Clopper–Pearson lower bound on p_A, not p_A, to the radius' printed precision; "
    "radius 0, abstained and wrong rows only say p̲A ≤ ½ of the true class (a wrong row bounds the predicted "
    "class) and are drawn at 0."
)


def shown_methods(entries: Sequence[Entry], top: int = TOP_METHODS) -> dict[MethodKey, list[Entry]]:
    """The ``top`` methods by their best single log's ACR, then the best Gaussian one if none is Gaussian."""
    grouped = methods(entries)
    score = {key: max(acr(member.frame) for member in members) for key, members in grouped.items()}
    ranked = sorted(grouped, key=lambda key: -score[key])
    chosen = ranked[:top]
    if not any(grouped[key][0].log.method == GAUSSIAN for key in chosen):
        chosen += [key for key in ranked if grouped[key][0].log.method == GAUSSIAN][:1]
    return {key: grouped[key] for key in chosen}


def curves_figure(
    entries: Sequence[Entry], dataset: str, *, top: int = TOP_METHODS, alpha: float | None = 0.05
) -> Figure:
    """The envelope over σ of each shown method, with bands (module docstring)."""
    shown = shown_methods(entries, top)
    radii = radius_grid([member.frame for members in shown.values() for member in members])
    figure = Figure(figsize=(PANEL_SIZE[0] * 2.4, PANEL_SIZE[1] * 1.5), layout="constrained")
    ax = figure.subplots()
    for key, members in shown.items():
        curves = {number: 100 * certified_accuracy(member.frame, radii) for number, member in enumerate(members)}
        sigmas = ", ".join(dict.fromkeys(f"{member.sigma:g}" for member in members))
        label = f"{key.label}, σ ∈ {{{sigmas}}}, {key.inputs:,} inputs"
        accuracy_curve(ax, radii, envelope(curves)[0], key.inputs, alpha=alpha, label=label)
    ax.set_xlabel("ℓ2 radius")
    ax.set_ylabel(ACCURACY_LABEL)
    ax.set_title(f"{dataset}: the {len(shown)} best published methods (envelope over σ)")
    figure.legend(loc="outside lower center", ncols=1, fontsize="x-small")
    return figure


def recovered_p_a_lower(frame: pd.DataFrame, sigma: float) -> pd.DataFrame:
    """``frame`` with ``p_a_lower`` = Φ(radius/σ) where radius > 0, and ½ elsewhere (only p̲_A ≤ ½ is known)."""
    radius = frame["radius"].to_numpy(float)
    return frame.assign(p_a_lower=np.where(radius > 0, ndtr(radius / sigma), 0.5))


def p_a_figure(entries: Sequence[Entry], dataset: str, *, top: int = TOP_METHODS) -> Figure:
    """Sun et al.'s empirical distribution of p_A, recovered from radius and σ (module docstring)."""
    shown = shown_methods(entries, top)
    sigmas = sorted({member.sigma for members in shown.values() for member in members})
    panels = {}
    for sigma in sigmas:
        lines = {}
        for key, members in shown.items():
            at_sigma = [member for member in members if abs(member.sigma - sigma) < 1e-9]
            # a model trained at σ before one trained at another σ and certified at this one
            at_sigma.sort(key=lambda member: member.log.noise is not None and abs(member.log.noise - sigma) > 1e-9)
            if at_sigma:
                lines[key.label] = recovered_p_a_lower(at_sigma[0].frame, sigma)
        panels[f"σ = {sigma:g}"] = lines
    figure = p_a_cdf_figure(panels)
    # one colour per method in every panel, and one legend below them: long names would crowd the panels
    colours = {key.label: f"C{number % 10}" for number, key in enumerate(shown)}
    handles = {}
    for ax in figure.axes:
        for line in ax.get_lines():
            line.set_color(colours[line.get_label()])
            handles.setdefault(line.get_label(), line)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    note = textwrap.fill(P_A_NOTE, 130)
    figure.legend(
        list(handles.values()),
        list(handles),
        loc="outside lower center",
        fontsize="x-small",
        title=note,
        title_fontsize="x-small",
    )
    width, height = figure.get_size_inches()
    figure.set_size_inches(width, height + 0.17 * (len(handles) + note.count("\n") + 1) + 0.4)
    figure.suptitle(f"{dataset}: p̲A of the true class, recovered from radius and σ")
    return figure
