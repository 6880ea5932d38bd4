"""Every figure renders from small hand-written logs with the panels, labels and legends the paper has."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from ddrs.analysis import LogRecord, plots

COLUMNS = ["idx", "label", "predict", "radius", "correct", "time", "scale", "p_a_lower"]


def make_log(rows) -> pd.DataFrame:
    """rows: (radius, correct, scale, p_a_lower) per input, idx 0.."""
    return pd.DataFrame(
        [
            [i, 1, 1 if correct else 2, radius, correct, 1.0, scale, p]
            for i, (radius, correct, scale, p) in enumerate(rows)
        ],
        columns=COLUMNS,
    )


FIXED = make_log([(0.3, 1, 0.25, 0.88), (0.1, 1, 0.25, 0.65), (0.2, 0, 0.25, 0.7), (0.0, 0, 0.25, 0.4)])
TAILORED = make_log([(0.6, 1, 0.41, 0.93), (0.05, 1, 0.12, 0.66), (0.4, 1, 0.33, 0.9), (0.0, 0, 0.20, 0.45)])


def legend_texts(ax) -> list[str]:
    return [text.get_text() for text in ax.get_legend().get_texts()]


def test_sigma_panels_one_per_sigma0_then_envelope():
    records = [
        LogRecord(FIXED, "cifar10", "cohen", "fs", "fs", 0.25),
        LogRecord(FIXED, "cifar10", "cohen", "fs", "fs", 0.5),
        LogRecord(TAILORED, "cifar10", "cohen", "fs", "ds", 0.25, K=100),
        LogRecord(FIXED, "cifar10", "cohen", "fs", "ds", 0.25, K=200),
        LogRecord(TAILORED, "cifar10", "cohen", "ds", "ds", 0.5, K=100),
    ]
    figure = plots.sigma_panels_figure(records)
    assert [ax.get_title() for ax in figure.axes] == ["σ₀ = 0.25", "σ₀ = 0.5", "envelope"]
    assert legend_texts(figure.axes[0]) == ["Cohen", "Cohen-DS"]
    assert legend_texts(figure.axes[1]) == ["Cohen", "Cohen-DS²"]
    assert legend_texts(figure.axes[-1]) == ["Cohen", "Cohen-DS", "Cohen-DS²"]
    assert all(ax.get_xlabel() == "ℓ2 radius" for ax in figure.axes)
    assert figure.axes[0].get_ylabel() == "certified accuracy (%)"
    # Cohen-DS at σ₀ 0.25 is the best over K = 100 and 200 at each radius: 75% at r = 0
    assert figure.axes[0].get_lines()[1].get_ydata()[0] == pytest.approx(75.0)


def test_sigma_panels_refuse_mixed_datasets():
    records = [LogRecord(FIXED, "cifar10", "cohen"), LogRecord(FIXED, "imagenet", "cohen")]
    with pytest.raises(ValueError, match="dataset"):
        plots.sigma_panels_figure(records)


def test_k_sweep_one_line_per_k_sorted():
    records = [
        LogRecord(TAILORED, "cifar10", "smoothadv", "ds", "ds", 0.12, K=400),
        LogRecord(FIXED, "cifar10", "smoothadv", "ds", "ds", 0.12, K=100),
    ]
    figure = plots.k_sweep_figure(records, radii=[0.0, 0.25, 0.5])
    (ax,) = figure.axes
    assert legend_texts(ax) == ["K = 100", "K = 400"]
    assert ax.get_title() == "cifar10: SmoothAdv-DS², σ₀ = 0.12"
    assert ax.get_lines()[1].get_ydata().tolist() == pytest.approx([75.0, 50.0, 25.0])


def test_sigma_examples_show_clean_fixed_and_tailored_noise():
    images = np.random.default_rng(0).random((2, 1, 8, 8))
    figure = plots.sigma_examples_figure(images, 0.5, [0.368, 0.423], seed=3)
    assert len(figure.axes) == 6
    assert [ax.get_title() for ax in figure.axes] == [
        "clean",
        "σ = 0.5",
        "σ*ₓ = 0.368",
        "clean",
        "σ = 0.5",
        "σ*ₓ = 0.423",
    ]
    shown = figure.axes[0].get_images()[0].get_array()
    assert np.allclose(shown, images[0, 0])
    again = plots.sigma_examples_figure(images, 0.5, [0.368, 0.423], seed=3)
    assert np.array_equal(again.axes[1].get_images()[0].get_array(), figure.axes[1].get_images()[0].get_array())
    with pytest.raises(ValueError, match="one σ"):
        plots.sigma_examples_figure(images, 0.5, [0.3])
    # the noise: ε₀ then ε from the generator seeded with 3, the second panel at σ₀, the third at each
    # input's σ*ₓ (a tiny σ*ₓ shows the input nearly clean), clipped to [0, 1] for display
    generator = torch.Generator().manual_seed(3)
    first, second = (torch.randn(images.shape, generator=generator).numpy() for _ in range(2))
    figure = plots.sigma_examples_figure(images, 0.5, [0.01, 0.423], seed=3)
    shown = [np.asarray(ax.get_images()[0].get_array()) for ax in figure.axes]
    for i, sigma in enumerate([0.01, 0.423]):
        clean = images[i, 0].astype(np.float32)
        assert np.allclose(shown[3 * i + 1], np.clip(clean + 0.5 * first[i, 0], 0, 1), atol=1e-6)
        assert np.allclose(shown[3 * i + 2], np.clip(clean + np.float32(sigma) * second[i, 0], 0, 1), atol=1e-6)
    assert np.abs(shown[2] - images[0, 0]).max() < 0.05 < np.abs(shown[1] - images[0, 0]).max()


def test_sigma_histogram_highlights_improved_inputs():
    figure = plots.sigma_histogram_figure(FIXED, TAILORED, sigma0=0.25, bins=4)
    (ax,) = figure.axes
    assert legend_texts(ax) == ["all test inputs", "radius improved over fixed σ", "σ₀ = 0.25"]
    assert ax.get_xlabel() == "σ*ₓ"
    # improved: idx 0 (0.6 > 0.3) and idx 2 (0.4 > wrong); idx 1 shrank, idx 3 abstains in both
    improved = plots.improved_inputs(FIXED, TAILORED)
    assert improved.tolist() == [True, False, True, False]
    heights = [patch.get_height() for patch in ax.patches]
    assert sum(heights[:4]) == 4 and sum(heights[4:]) == 2


def test_p_a_cdf_one_step_per_log():
    figure = plots.p_a_cdf_figure({"Cohen": FIXED, "Cohen-DS": TAILORED})
    (ax,) = figure.axes
    assert legend_texts(ax) == ["Cohen", "Cohen-DS"]
    assert ax.get_xlabel() == "p̲A of the true class"
    # FIXED: wrong and abstained inputs count as 0 → sorted values 0, 0, 0.65, 0.88
    assert ax.get_lines()[0].get_xdata().tolist() == [0.0, 0.0, 0.65, 0.88]


def test_easy_hard_panels_next_to_acr():
    figure = plots.easy_hard_figure({"Cohen": FIXED, "Cohen-DS": TAILORED}, FIXED, radii=[0.0, 0.5])
    easy, hard, bars = figure.axes
    assert easy.get_title() == "easy inputs (2)" and hard.get_title() == "hard inputs (2)"
    assert [text.get_text() for text in figure.legends[0].get_texts()] == ["Cohen", "Cohen-DS"]
    # easy = idx 0, 1 (reference true-class p̲A 0.88, 0.65 above the median 0.325)
    assert hard.get_lines()[1].get_ydata().tolist() == pytest.approx([50.0, 0.0])
    assert [patch.get_width() for patch in bars.patches] == pytest.approx([0.1, 0.2625])
    assert [label.get_text() for label in bars.get_yticklabels()] == ["Cohen", "Cohen-DS"]


def test_save_figure_writes_png_and_pdf(tmp_path):
    figure = plots.curves_figure({"a": FIXED, "b": TAILORED}, title="two logs")
    written = plots.save_figure(figure, tmp_path / "figs" / "curves.png")
    assert [p.name for p in written] == ["curves.png", "curves.pdf"]
    assert written[0].read_bytes()[:4] == b"\x89PNG" and written[1].read_bytes()[:4] == b"%PDF"
    assert b"/CreationDate" not in written[1].read_bytes()  # reproducible: no clock in the file
    assert legend_texts(figure.axes[0]) == ["a", "b", "envelope"]
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["curves.pdf", "curves.png"]
    # a dotted name keeps its dots: σ = 0.25 and 0.5 are two figures, not one overwritten
    for stem in ("cohen_sigma0.25", "cohen_sigma0.5"):
        plots.save_figure(figure, tmp_path / "sigma" / stem)
    names = sorted(p.name for p in (tmp_path / "sigma").iterdir())
    assert names == ["cohen_sigma0.25.pdf", "cohen_sigma0.25.png", "cohen_sigma0.5.pdf", "cohen_sigma0.5.png"]


def band_edges(ax, index: int) -> set[float]:
    """The y values of the index-th filled band's outline, rounded."""
    return {round(float(y), 6) for y in ax.collections[index].get_paths()[0].vertices[:, 1]}


def test_certified_accuracy_curves_carry_clopper_pearson_bands():
    from statsmodels.stats.proportion import proportion_confint

    figure = plots.curves_figure({"a": FIXED, "b": TAILORED}, radii=[0.0, 0.25, 0.5])
    (ax,) = figure.axes
    assert len(ax.collections) == 2  # one band per log, none for the envelope
    # TAILORED certifies 3, 2, 1 of 4 inputs at r = 0, 0.25, 0.5
    low, high = proportion_confint(np.array([3, 2, 1]), 4, alpha=0.05, method="beta")
    assert band_edges(ax, 1) == {round(100 * v, 6) for v in [*low, *high]}
    assert not plots.curves_figure({"a": FIXED}, radii=[0.0, 0.5], alpha=None).axes[0].collections


def test_sigma_panels_and_k_sweep_draw_bands():
    records = [
        LogRecord(FIXED, "cifar10", "cohen", "fs", "fs", 0.25),
        LogRecord(TAILORED, "cifar10", "cohen", "fs", "ds", 0.25, K=100),
    ]
    figure = plots.sigma_panels_figure(records, radii=[0.0, 0.5])
    assert [len(ax.collections) for ax in figure.axes] == [2, 2]
    sweep = plots.k_sweep_figure(records[1:], radii=[0.0, 0.5])
    assert len(sweep.axes[0].collections) == 1
