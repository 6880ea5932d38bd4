"""The leaderboard's figures: the best log of each family, and p_A recovered from radii.

**Which lines.** One per family and extra training data (:mod:`ddrs.published.families`; a user's
own log is its own family) in each panel: the family's best log at the panel's σ, the one of the
highest ACR on the row's input set. Each panel is one σ, so that no curve's lead is a σ effect (a
σ = 0.5 log beside σ = 1 ones crosses them where the smaller σ's cap cuts it). Each row is one
input order (logs of two orders certify other images at one idx and are never drawn together:
ImageNet's standard order, then Salman et al.'s, where SmoothAdv's logs are): of the input sets
its logs certify, the one that the most families hold a log covering, then the largest
(:func:`family_lines`, :func:`order_lines`); each line is its log cut to those inputs, and the row
names the set. A family with no log covering them is named under the figure. The best log is
chosen on the inputs drawn (the figure shows the families' best, not an unbiased estimate of them;
the claims are in published_vs_gaussian). The table holds every method; a figure of hundreds of
curves would show none.

**Panels.** Families with extra data (Salman et al.'s ImageNet pre-training and self-training on
unlabelled images) dashed, each its own dash pattern. Each curve is certified accuracy at each
radius of a dense grid; Gaussian's alone carries its exact Clopper–Pearson band
(:func:`ddrs.analysis.plots.accuracy_curve`), for scale: the others, on the same inputs, have bands
as wide at the same accuracy, and five overlapping bands would hide the curves. A dotted line marks
each drawn log's radius cap σ·Φ⁻¹(α^(1/n)) (its registry n and α; :func:`radius_cap`), and a family
whose curve passes it by more than the radius' printing is named in the panel (Cohen et al.'s
ImageNet logs reach 3.91 at σ = 1, cap 3.81: the audit's ``impossible_radius``).

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
from matplotlib.lines import Line2D
from scipy.special import ndtr

from ddrs.analysis.metrics import acr, certified_accuracy, radius_grid
from ddrs.analysis.plots import ACCURACY_LABEL, PANEL_SIZE, accuracy_curve, p_a_cdf_figure
from ddrs.published.audit import radius_bound
from ddrs.published.families import GAUSSIAN_FAMILY, Family
from ddrs.published.input_orders import STANDARD, describe
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


#: how far a log's largest radius may pass its cap before it is marked: half a unit of its printed third digit
PRINTED_SLACK = 0.005


def radius_cap(entry: Entry) -> float | None:
    """σ·Φ⁻¹(α^(1/n)), the largest radius its log's n and α let CERTIFY give (None where n or α is unknown)."""
    if entry.log.n is None or entry.log.alpha is None:
        return None
    return radius_bound(entry.sigma, int(entry.log.n), float(entry.log.alpha))


def beyond_cap(entry: Entry, frame: pd.DataFrame) -> bool:
    """Whether ``entry``'s certified radii on ``frame`` pass its cap by more than their printing."""
    cap = radius_cap(entry)
    certified = frame.loc[frame["correct"] == 1, "radius"]
    return cap is not None and len(certified) > 0 and float(certified.max()) - PRINTED_SLACK > cap


def order_lines(entries: Sequence[Entry]) -> list[FamilyLines]:
    """Per input order of ``entries`` (logs of two orders certify other images at one idx), the
    :func:`family_lines` of its logs: the input set the most of its families cover."""
    orders = sorted(dict.fromkeys(entry.order for entry in entries), key=lambda order: order != STANDARD)
    return [family_lines([entry for entry in entries if entry.order == order]) for order in orders]


def _at(members: Sequence[Entry], sigma: float) -> list[Entry]:
    return [entry for entry in members if abs(entry.sigma - sigma) < 1e-9]


def curves_figure(entries: Sequence[Entry], dataset: str, *, alpha: float | None = 0.05) -> Figure:
    """Each family's best log at each σ (module docstring): a row of panels per input order, a panel
    per σ, styled by :func:`line_styles`; Gaussian's band for scale, each log's radius cap marked."""
    rows = order_lines(entries)
    sigmas = sorted({entry.sigma for lines in rows for members in lines.members.values() for entry in members})
    families = list(dict.fromkeys(family for lines in rows for family in lines.members))
    families.sort(key=lambda family: family.name != GAUSSIAN_FAMILY)
    styles = line_styles(families)
    figure = Figure(
        figsize=(PANEL_SIZE[0] * 1.05 * len(sigmas), PANEL_SIZE[1] * 1.05 * len(rows) + 0.2 * len(families) + 1.2),
        layout="constrained",
    )
    axes = figure.subplots(len(rows), len(sigmas), sharex="col", sharey=True, squeeze=False)
    handles: dict[str, object] = {}
    capped = False
    for row, lines in zip(axes, rows, strict=True):
        for ax, sigma in zip(row, sigmas, strict=True):
            drawn, panel_capped = _best_curves_panel(ax, lines, sigma, styles, alpha)
            handles, capped = {**drawn, **handles}, capped or panel_capped
        row[0].set_ylabel(
            textwrap.fill(input_set(lines.idx, lines.order), 34) + f"\n{ACCURACY_LABEL}", fontsize="small"
        )
    for ax in axes[-1]:
        ax.set_xlabel("ℓ2 radius")
    handles = {family.label: handles[family.label] for family in families if family.label in handles}
    if capped:
        handles["radius cap σ·Φ⁻¹(α^(1/n)) of the panel's logs"] = Line2D([], [], color="grey", linestyle=":")
    left_out = [f"{family.label} ({describe(lines.order)})" for lines in rows for family in lines.left_out]
    note = (
        "Each family's log of the highest ACR at the panel's σ on the row's inputs (dashed: extra training data); "
        "band: Gaussian's "
        + ("" if alpha is None else f"{100 * (1 - alpha):g}% ")
        + "Clopper–Pearson interval (the others', on the same inputs, are as wide at the same accuracy). A curve "
        "past the dotted line has radii its log's n and α cannot give (the audit's impossible_radius)."
        + (f" No log on these inputs: {'; '.join(left_out)}." if left_out else "")
    )
    figure.legend(
        list(handles.values()),
        list(handles),
        loc="outside lower center",
        ncols=min(3, len(handles)),
        fontsize="x-small",
        title=textwrap.fill(note, 40 * min(3, len(handles))),
        title_fontsize="x-small",
        frameon=False,
    )
    figure.suptitle(f"{dataset}: the best log (highest ACR) of each family at each σ", fontsize="medium")
    return figure


def _best_curves_panel(ax, lines: FamilyLines, sigma: float, styles: dict, alpha: float | None) -> tuple[dict, bool]:
    """One panel of :func:`curves_figure`: each family's best log at ``sigma`` on ``lines``' inputs, and
    the radius caps of those logs. Returns each family's line by label and whether a cap was drawn."""
    best = {family: lines.best(_at(members, sigma)) for family, members in lines.members.items() if _at(members, sigma)}
    ax.set_title(f"σ = {sigma:g}" if best else f"σ = {sigma:g}: no log on these inputs", fontsize="medium")
    if not best:
        return {}, False
    radii = radius_grid([lines.cut(entry) for entry in best.values()])
    handles, past = {}, []
    for family, entry in best.items():
        frame = lines.cut(entry)
        curve = 100 * certified_accuracy(frame, radii)
        band = alpha if family.name == GAUSSIAN_FAMILY else None
        drawn = accuracy_curve(ax, radii, curve, len(lines.idx), alpha=band, label=family.label, **styles[family])
        handles.setdefault(family.label, drawn)
        if beyond_cap(entry, frame):
            past.append(family.label)
    caps = sorted({cap for entry in best.values() if (cap := radius_cap(entry)) is not None})
    for cap in caps:
        ax.axvline(cap, color="grey", linestyle=":", linewidth=1)
    if past:
        text = textwrap.fill(f"past its cap: {', '.join(past)}", 28)
        ax.text(0.97, 0.97, text, transform=ax.transAxes, ha="right", va="top", fontsize="x-small")
    return handles, bool(caps)


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
