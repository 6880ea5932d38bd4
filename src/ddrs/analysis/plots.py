"""The paper's figures from certification logs (matplotlib, no pyplot state: Agg canvas).

Every function returns a :class:`matplotlib.figure.Figure`, so callers and tests can inspect
axes, titles and legends; :func:`save_figure` writes it as PNG and PDF, atomically.

Certified-accuracy curves carry a shaded band: the exact Clopper–Pearson (1 − ``alpha``) interval
over the test inputs at each radius (for an envelope, that of the log that wins the radius), as in
the tables (:mod:`ddrs.analysis.assemble`). ``alpha=None`` draws the curves alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ddrs.analysis.loading import load_records
from ddrs.analysis.log_record import LogRecord, display_name, load_log, variant_order
from ddrs.analysis.metrics import (
    acr,
    certified_accuracy,
    easy_inputs,
    envelope,
    radius_grid,
    true_class_p_a_lower,
)
from ddrs.core.binomial import clopper_pearson
from ddrs.io import atomic_path

if TYPE_CHECKING:
    import torch

PANEL_SIZE = (3.6, 3.0)
ACCURACY_LABEL = "certified accuracy (%)"
#: opacity of the interval bands
BAND_OPACITY = 0.2


def save_figure(figure: Figure, path: str | os.PathLike) -> list[Path]:
    """Write ``figure`` as ``<name>.png`` and ``<name>.pdf`` beside ``path`` (atomically), ``<name>``
    being ``path``'s name less a ``.png`` or ``.pdf`` suffix: ``cohen_sigma0.25`` keeps its ``.25``.
    The PDF carries no creation date, so the same figure is the same bytes whenever it is drawn."""
    path = Path(path)
    name = path.name.removesuffix(".png").removesuffix(".pdf")
    written = []
    for fmt in ("png", "pdf"):
        target = path.with_name(f"{name}.{fmt}")
        with atomic_path(target) as tmp:
            metadata = {"CreationDate": None} if fmt == "pdf" else None
            figure.savefig(tmp, format=fmt, dpi=150, bbox_inches="tight", metadata=metadata)
        written.append(target)
    return written


def panels(count: int, *, sharey: bool = True) -> tuple[Figure, list]:
    figure = Figure(figsize=(PANEL_SIZE[0] * count, PANEL_SIZE[1]), layout="constrained")
    axes = figure.subplots(1, count, sharey=sharey, squeeze=False)[0]
    return figure, list(axes)


def _radius_label(norm: int) -> str:
    return f"ℓ{norm} radius"


def _only(records: Sequence[LogRecord], attribute: str):
    values = {getattr(r, attribute) for r in records}
    if len(values) != 1:
        raise ValueError(f"this figure takes logs of one {attribute}; got {sorted(map(str, values))}")
    return values.pop()


def _best_curve(loaded: Sequence[tuple[LogRecord, pd.DataFrame]], radii) -> pd.Series:
    """Certified accuracy (percent) of the best log at each radius (envelope over σ₀ / K)."""
    return envelope({i: 100 * certified_accuracy(log, radii) for i, (_, log) in enumerate(loaded)})[0]


def accuracy_curve(ax, radii, curve, inputs: int, *, alpha: float | None = 0.05, **line):
    """Plot a certified-accuracy curve (percent over ``inputs`` test inputs) with its
    Clopper–Pearson band (none when ``alpha`` is None); returns the line."""
    (drawn,) = ax.plot(radii, curve, **line)
    if alpha is not None:
        counts = np.rint(np.asarray(curve, dtype=float) * inputs / 100)
        low, high = clopper_pearson(counts, inputs, alpha)
        ax.fill_between(radii, 100 * low, 100 * high, color=drawn.get_color(), alpha=BAND_OPACITY, linewidth=0)
    return drawn


def sigma_panels_figure(
    records: Sequence[LogRecord], radii: Sequence[float] | None = None, *, alpha: float | None = 0.05
) -> Figure:
    """Figures 3–5: certified accuracy vs radius, one panel per σ₀, the envelope last.

    ``records`` are one dataset and method: Method (fixed σ = σ₀), Method-DS and Method-DS²
    logs, on the inputs the tables count (:func:`~ddrs.analysis.loading.load_records`). A variant
    with several K is drawn as its best over K at each radius; the last panel is each variant's
    best over σ₀ and K (the envelope of Tables 1–3).
    """
    dataset, method = _only(records, "dataset"), _only(records, "method")
    loaded = load_records(records)
    radii = radius_grid([log for _, log in loaded]) if radii is None else np.asarray(radii, float)
    sigmas = sorted({record.sigma0 for record in records})
    names = variant_order(records)
    figure, axes = panels(len(sigmas) + 1)
    for ax, sigma in zip(axes[:-1], sigmas, strict=True):
        for name in names:
            members = [(r, log) for r, log in loaded if r.name == name and r.sigma0 == sigma]
            if members:
                accuracy_curve(ax, radii, _best_curve(members, radii), len(members[0][1]), alpha=alpha, label=name)
        ax.set_title(f"σ₀ = {sigma:g}")
    for name in names:
        members = [(r, log) for r, log in loaded if r.name == name]
        accuracy_curve(axes[-1], radii, _best_curve(members, radii), len(members[0][1]), alpha=alpha, label=name)
    axes[-1].set_title("envelope")
    for ax in axes:
        ax.set_xlabel(_radius_label(records[0].norm))
        ax.legend(fontsize="small")
    axes[0].set_ylabel(ACCURACY_LABEL)
    figure.suptitle(f"{dataset}: {display_name(method)}")
    return figure


def k_sweep_figure(
    records: Sequence[LogRecord], radii: Sequence[float] | None = None, *, alpha: float | None = 0.05
) -> Figure:
    """Figure 7: certified accuracy vs radius for one model and σ₀, one line per K."""
    dataset, name, sigma = _only(records, "dataset"), _only(records, "name"), _only(records, "sigma0")
    loaded = sorted(((r, r.load()) for r in records), key=lambda item: item[0].K or 0)
    radii = radius_grid([log for _, log in loaded]) if radii is None else np.asarray(radii, float)
    figure, (ax,) = panels(1)
    for record, log in loaded:
        curve = 100 * certified_accuracy(log, radii)
        accuracy_curve(ax, radii, curve, len(log), alpha=alpha, label=f"K = {record.K or 0}")
    ax.set_xlabel(_radius_label(records[0].norm))
    ax.set_ylabel(ACCURACY_LABEL)
    ax.set_title(f"{dataset}: {name}, σ₀ = {sigma:g}")
    ax.legend(fontsize="small")
    return figure


def curves_figure(
    logs: Mapping[str, str | os.PathLike | pd.DataFrame],
    radii: Sequence[float] | None = None,
    *,
    show_envelope: bool = True,
    norm: int = 2,
    title: str | None = None,
    alpha: float | None = 0.05,
) -> Figure:
    """Certified accuracy vs radius of any labelled logs, with their envelope dashed (its band is
    that of the log winning each radius, already drawn)."""
    frames = {label: load_log(log) for label, log in logs.items()}
    radii = radius_grid(frames.values()) if radii is None else np.asarray(radii, float)
    curves = {label: 100 * certified_accuracy(log, radii) for label, log in frames.items()}
    figure, (ax,) = panels(1)
    for label, curve in curves.items():
        accuracy_curve(ax, radii, curve, len(frames[label]), alpha=alpha, label=label)
    if show_envelope and len(curves) > 1:
        ax.plot(radii, envelope(curves)[0], "k--", label="envelope")
    ax.set_xlabel(_radius_label(norm))
    ax.set_ylabel(ACCURACY_LABEL)
    if title:
        ax.set_title(title)
    ax.legend(fontsize="small")
    return figure


def sigma_examples_figure(
    images,
    sigma0: float,
    sigmas: Sequence[float],
    *,
    noise: str = "gaussian",
    seed: int = 0,
) -> Figure:
    """Figure 6 / Appendix D: each input clean, noised at σ₀ and noised at its σ*ₓ.

    ``images`` is an array or tensor ``(N, C, H, W)`` in [0, 1] and ``sigmas`` the N optimised
    scales (a σ-log column). Noise is drawn from a generator seeded with ``seed``; pixels are
    clipped to [0, 1] for display only.
    """
    import torch

    from ddrs.core.noise import get_noise

    images = torch.as_tensor(np.asarray(images), dtype=torch.float32)
    if images.ndim != 4:
        raise ValueError(f"images must have shape (N, C, H, W), got {tuple(images.shape)}")
    sigmas = torch.as_tensor(np.asarray(sigmas), dtype=torch.float32)
    if sigmas.shape != images.shape[:1]:
        raise ValueError(f"need one σ*ₓ per image: {len(sigmas)} scales for {len(images)} images")
    smoothing = get_noise(noise)
    generator = torch.Generator().manual_seed(seed)
    fixed = smoothing.perturb(images, sigma0, generator)
    tailored = smoothing.perturb(images, sigmas, generator)
    symbol = "σ" if noise == "gaussian" else "λ"
    figure = Figure(figsize=(3 * 2.2, len(images) * 2.3), layout="constrained")
    axes = figure.subplots(len(images), 3, squeeze=False)
    for row, (clean, at_sigma0, at_sigma, sigma) in enumerate(zip(images, fixed, tailored, sigmas, strict=True)):
        pictures = (
            (clean, "clean"),
            (at_sigma0, f"{symbol} = {sigma0:.3g}"),
            (at_sigma, f"{symbol}*ₓ = {float(sigma):.3f}"),
        )
        for ax, (picture, title) in zip(axes[row], pictures, strict=True):
            _show(ax, picture)
            ax.set_title(title)
    return figure


def _show(ax, picture: torch.Tensor) -> None:
    pixels = picture.clamp(0, 1).permute(1, 2, 0).numpy()
    if pixels.shape[2] == 1:
        ax.imshow(pixels[:, :, 0], cmap="gray", vmin=0, vmax=1)
    else:
        ax.imshow(pixels)
    ax.set_axis_off()


def improved_inputs(fixed_log: pd.DataFrame, ds_log: pd.DataFrame) -> pd.Series:
    """By ``idx``: does the data-dependent log certify a larger radius than fixed σ?

    Radii of wrong or abstained predictions count as 0 (as in ACR).
    """
    fixed = (fixed_log["radius"] * (fixed_log["correct"] == 1)).set_axis(fixed_log["idx"])
    tailored = (ds_log["radius"] * (ds_log["correct"] == 1)).set_axis(ds_log["idx"])
    if set(fixed.index) != set(tailored.index):
        raise ValueError("the fixed-σ and data-dependent logs certify different test inputs")
    return (tailored > fixed.reindex(tailored.index)).rename("improved")


def sigma_histogram_figure(
    fixed_log: str | os.PathLike | pd.DataFrame,
    ds_log: str | os.PathLike | pd.DataFrame,
    *,
    sigma0: float | None = None,
    bins: int = 30,
) -> Figure:
    """Appendix E: histogram of σ*ₓ (the DS log's ``scale``), inputs with an improved radius highlighted."""
    fixed, tailored = load_log(fixed_log), load_log(ds_log)
    if "scale" not in tailored.columns:
        raise ValueError("the data-dependent log has no scale column (σ*ₓ per input)")
    scales = tailored["scale"].astype(float).set_axis(tailored["idx"])
    improved = improved_inputs(fixed, tailored)
    edges = np.histogram_bin_edges(scales, bins=bins)
    figure, (ax,) = panels(1)
    ax.hist(scales, bins=edges, color="tab:orange", label="all test inputs")
    ax.hist(scales[improved.reindex(scales.index)], bins=edges, color="tab:green", label="radius improved over fixed σ")
    if sigma0 is not None:
        ax.axvline(sigma0, color="k", linestyle="--", label=f"σ₀ = {sigma0:g}")
    ax.set_xlabel("σ*ₓ")
    ax.set_ylabel("inputs")
    ax.legend(fontsize="small")
    return figure


def p_a_cdf_figure(
    logs: Mapping[str, str | os.PathLike | pd.DataFrame] | Mapping[str, Mapping[str, str | os.PathLike | pd.DataFrame]],
) -> Figure:
    """Empirical CDF of the true-class p̲A per log (Sun et al. 2024, Fig. 3: where hard inputs lie).

    ``logs`` maps a legend label to a log, or a panel title (e.g. ``σ = 0.5``) to such a mapping:
    one panel each. Wrong or abstained predictions count as p̲A = 0
    (:func:`~ddrs.analysis.true_class_p_a_lower`).
    """
    by_panel = logs if all(isinstance(v, Mapping) for v in logs.values()) else {"": logs}
    figure, axes = panels(len(by_panel))
    for ax, (title, curves) in zip(axes, by_panel.items(), strict=True):
        for label, log in curves.items():
            values = np.sort(true_class_p_a_lower(load_log(log)).to_numpy())
            ax.step(values, np.arange(1, len(values) + 1) / len(values), where="post", label=label)
        ax.set_title(title)
        ax.set_xlabel("p̲A of the true class")
        ax.set_xlim(0, 1)
        ax.legend(fontsize="small")
    axes[0].set_ylabel("share of test inputs")
    return figure


def easy_hard_figure(
    logs: Mapping[str, str | os.PathLike | pd.DataFrame],
    reference: str | os.PathLike | pd.DataFrame,
    *,
    radii: Sequence[float] | None = None,
    norm: int = 2,
    alpha: float | None = 0.05,
) -> Figure:
    """Certified accuracy on easy and on hard inputs, next to ACR (Sun et al. 2024, §4.2–4.3).

    ACR rewards large radii on easy inputs far more than any gain on hard ones; showing the two
    subsets separately reveals what ACR hides. Easy / hard is fixed once for all logs by the
    reference (fixed-σ) log's true-class p̲A (:func:`~ddrs.analysis.easy_inputs`).
    """
    easy = easy_inputs(load_log(reference))
    frames = {label: load_log(log) for label, log in logs.items()}
    radii = radius_grid(frames.values()) if radii is None else np.asarray(radii, float)
    figure, axes = panels(3, sharey=False)
    for label, log in frames.items():
        is_easy = easy.reindex(log["idx"]).to_numpy()
        if pd.isna(is_easy).any():
            raise ValueError(f"log {label!r} certifies inputs missing from the reference log")
        is_easy = is_easy.astype(bool)
        for ax, subset in ((axes[0], log[is_easy]), (axes[1], log[~is_easy])):
            if len(subset):
                accuracy_curve(
                    ax, radii, 100 * certified_accuracy(subset, radii), len(subset), alpha=alpha, label=label
                )
    axes[0].set_title(f"easy inputs ({int(easy.sum())})")
    axes[1].set_title(f"hard inputs ({int((~easy).sum())})")
    for ax in axes[:2]:
        ax.set_xlabel(_radius_label(norm))
        ax.set_ylabel(ACCURACY_LABEL)
    # one legend for both curve panels, below them, so many logs never hide the curves
    figure.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize="small")
    labels = list(frames)
    axes[2].barh(range(len(labels)), [acr(log) for log in frames.values()], tick_label=labels)
    axes[2].invert_yaxis()  # first log on top, in legend order
    axes[2].set_title("ACR (all inputs)")
    axes[2].set_xlabel("ACR")
    return figure
