"""The leaderboard's figures: the best log of each family, and p_A recovered from radii.

**Which lines.** One per family and extra training data (:mod:`ddrs.published.families`; a user's
own log is its own family): the family's best log, the one of the highest ACR on the figure's input
set (:func:`family_lines`). The input set is one common to every line drawn, so that the curves
compare: of the input sets the dataset's logs certify (keyed by input order and idx: logs of two
orders certify other images at one idx and are never drawn together), the one that the most
families hold a log covering, then the largest; each line is its log cut to those inputs, and the
title names the set and its order. A family with no log covering
them is left out and named in the title. The best log is chosen on the inputs drawn (the figure
shows the families' best, not an unbiased estimate of them; the claims are in
published_vs_gaussian). The table holds every method; a figure of hundreds of curves would show none.

**Panels.** Families trained on the dataset's own training set only, left; those with extra data
(Salman et al.'s ImageNet pre-training and self-training on unlabelled images), right, beside the
Gaussian line again for reference. Each curve is certified accuracy at each radius of a dense grid,
with its exact Clopper–Pearson band (:func:`ddrs.analysis.plots.accuracy_curve`).

**p_A recovered.** Sun et al. (2024, §4.3, Fig. 3) plot the distribution of p_A, the probability
of the true class under noise. Published logs hold no p_A; for a Gaussian log certified by Cohen et
al.'s CERTIFY, radius = σ·Φ⁻¹(p̲_A), so p̲_A = Φ(radius/σ) on rows with radius > 0
(:func:`recovered_p_a_lower`). That is the one-sided Clopper–Pearson lower bound at level α on
p_A, not p_A itself, and only to the radius' printed precision (three significant digits). A row
with radius 0 or an abstention says only p̲_A ≤ ½; a row with ``correct == 0`` bounds the predicted
class, not the true one. Such rows are drawn at 0, as the project's p_A figures draw wrong and
abstained predictions (:func:`ddrs.analysis.metrics.true_class_p_a_lower`). One panel per σ, one
line per family of the curves figure: its best log at that σ on the same inputs.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy.special import ndtr

from ddrs.analysis.metrics import acr, certified_accuracy, radius_grid
from ddrs.analysis.plots import ACCURACY_LABEL, PANEL_SIZE, accuracy_curve, p_a_cdf_figure
from ddrs.published.families import GAUSSIAN_FAMILY, Family
from ddrs.published.input_orders import describe
from ddrs.published.leaderboard import Entry, input_set

#: what a p_A figure says about its recovery, under its panels
P_A_NOTE = (
    "p̲A = Φ(radius/σ): the Clopper–Pearson lower bound on p_A, not p_A, to the radius' printed precision; "
    "radius 0, abstained and wrong rows only say p̲A ≤ ½ of the true class (a wrong row bounds the predicted "
    "class) and are drawn at 0."
)


@dataclass(frozen=True)
class FamilyLines:
    """The figure's input set (sorted ``idx`` in one input ``order``), each family's logs covering it,
    and the families left out."""

    idx: np.ndarray
    order: str
    members: dict[Family, list[Entry]]
    left_out: tuple[Family, ...]

    def cut(self, entry: Entry) -> pd.DataFrame:
        """``entry``'s rows on the figure's inputs."""
        return entry.frame[entry.frame["idx"].isin(self.idx)]

    def best(self, members: Sequence[Entry]) -> Entry:
        """The log of the highest ACR on the figure's inputs (the first of equals)."""
        return max(members, key=lambda entry: acr(self.cut(entry)))

    def best_logs(self) -> dict[Family, Entry]:
        return {family: self.best(members) for family, members in self.members.items()}


def family_lines(entries: Sequence[Entry]) -> FamilyLines:
    """The input set the most families cover, then the largest, and each family's logs covering it
    (module docstring); families in order of first appearance, Gaussian first."""
    sets = {entry.inputs_digest: entry.idx for entry in entries}
    order = {entry.inputs_digest: entry.order for entry in entries}
    families = list(dict.fromkeys(entry.family for entry in entries))
    families.sort(key=lambda family: family.name != GAUSSIAN_FAMILY)
    covers = {
        (outer, inner): outer == inner
        or (order[outer] == order[inner] and np.isin(sets[inner], sets[outer], assume_unique=True).all())
        for outer in sets
        for inner in sets
    }
    covering: dict[str, dict[Family, list[Entry]]] = {digest: {} for digest in sets}
    for digest in sets:
        for entry in entries:
            if covers[entry.inputs_digest, digest]:
                covering[digest].setdefault(entry.family, []).append(entry)
    chosen = max(sets, key=lambda digest: (len(covering[digest]), len(sets[digest])))
    held = covering[chosen]
    members = {family: held[family] for family in families if family in held}
    return FamilyLines(np.sort(sets[chosen]), order[chosen], members, tuple(f for f in families if f not in held))


#: the dash patterns of extra-data families, one each in order: their curves nearly coincide on CIFAR-10
#: (Salman et al.'s pre-trained and self-trained SmoothAdv), and one pattern would hide all but the last drawn
EXTRA_DATA_DASHES = ((0, (6, 2)), (0, (2, 2)), (0, (6, 2, 1, 2)), (3, (1, 3)))


def line_styles(families: Sequence[Family]) -> dict[Family, dict]:
    """One style per family in every figure: Gaussian black, the others a colour each in order,
    dashed where they used extra training data, each extra-data family with its own dash pattern
    (:data:`EXTRA_DATA_DASHES`) so that coinciding curves stay visible."""
    others = [family for family in families if family.name != GAUSSIAN_FAMILY]
    colours = {family: f"C{number % 10}" for number, family in enumerate(others)}
    extra = [family for family in families if family.extra_data]
    dashes = {family: EXTRA_DATA_DASHES[number % len(EXTRA_DATA_DASHES)] for number, family in enumerate(extra)}
    return {
        family: {"color": colours.get(family, "black"), **({"linestyle": dashes[family]} if family in dashes else {})}
        for family in families
    }


def _line_label(family: Family, entry: Entry) -> str:
    arch = f" ({entry.log.arch})" if entry.log.arch else ""
    owner = entry.log.repository.split("/")[0]
    return textwrap.fill(f"{family.label}: {entry.log.method_authors}{arch} [{owner}], σ = {entry.sigma:g}", 75)


def _left_out_label(family: Family, entries: Sequence[Entry], order: str) -> str:
    """A family left out of a figure, with the input orders of its logs where none is the figure's."""
    orders = sorted({entry.order for entry in entries if entry.family == family})
    return family.label if order in orders else f"{family.label}, only in the {' and the '.join(map(describe, orders))}"


def curves_figure(entries: Sequence[Entry], dataset: str, *, alpha: float | None = 0.05) -> Figure:
    """The best log of each family on one common input set, extra-data families in a second panel
    (module docstring), styled by :func:`line_styles`."""
    lines = family_lines(entries)
    best = lines.best_logs()
    own_data = [family for family in best if not family.extra_data]
    extra = [family for family in best if family.extra_data]
    gaussian = [family for family in own_data if family.name == GAUSSIAN_FAMILY]
    panels = [("trained on the dataset's training set only", own_data)]
    if extra:
        panels.append(("with extra training data (dashed; Gaussian for reference)", gaussian + extra))
    styles = line_styles(list(best))
    radii = radius_grid([lines.cut(entry) for entry in best.values()])
    figure = Figure(figsize=(PANEL_SIZE[0] * 1.9 * len(panels), PANEL_SIZE[1] * 2.6), layout="constrained")
    axes = figure.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    for ax, (title, families) in zip(axes, panels, strict=True):
        for family in families:
            entry = best[family]
            curve = 100 * certified_accuracy(lines.cut(entry), radii)
            accuracy_curve(
                ax, radii, curve, len(lines.idx), alpha=alpha, label=_line_label(family, entry), **styles[family]
            )
        ax.set_title(title, fontsize="medium")
        ax.set_xlabel("ℓ2 radius")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize="x-small", frameon=False)
    axes[0].set_ylabel(ACCURACY_LABEL)
    left_out = "; ".join(_left_out_label(family, entries, lines.order) for family in lines.left_out)
    suffix = f"\nno log on these inputs: {left_out}" if left_out else ""
    figure.suptitle(
        f"{dataset}: the best log (highest ACR) of each family on {input_set(lines.idx, lines.order)}{suffix}",
        fontsize="medium",
    )
    return figure


def recovered_p_a_lower(frame: pd.DataFrame, sigma: float) -> pd.DataFrame:
    """``frame`` with ``p_a_lower`` = Φ(radius/σ) where radius > 0, and ½ elsewhere (only p̲_A ≤ ½ is known)."""
    radius = frame["radius"].to_numpy(float)
    return frame.assign(p_a_lower=np.where(radius > 0, ndtr(radius / sigma), 0.5))


def p_a_figure(entries: Sequence[Entry], dataset: str) -> Figure:
    """Sun et al.'s empirical distribution of p_A, recovered from radius and σ (module docstring)."""
    lines = family_lines(entries)
    sigmas = sorted({entry.sigma for members in lines.members.values() for entry in members})
    panels = {}
    for sigma in sigmas:
        drawn = {}
        for family, members in lines.members.items():
            at_sigma = [entry for entry in members if abs(entry.sigma - sigma) < 1e-9]
            if at_sigma:
                drawn[family.label] = recovered_p_a_lower(lines.cut(lines.best(at_sigma)), sigma)
        panels[f"σ = {sigma:g}"] = drawn
    figure = p_a_cdf_figure(panels)
    # one colour per family in every panel, and one legend below them: long names would crowd the panels
    styles = {family.label: style for family, style in line_styles(list(lines.members)).items()}
    handles = {}
    for ax in figure.axes:
        for line in ax.get_lines():
            line.set(**styles[line.get_label()])
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
    figure.suptitle(
        f"{dataset}: p̲A of the true class, recovered from radius and σ, on {input_set(lines.idx, lines.order)}"
    )
    return figure
