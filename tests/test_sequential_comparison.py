"""The sequential-vs-fixed comparison table (ddrs.analysis.sequential_comparison) on hand-made logs."""

import numpy as np
import pandas as pd
import pytest

from ddrs.analysis.sequential_comparison import sequential_comparison, sequential_table
from ddrs.pipeline.catalogue import SEQUENTIAL_MEASURED


def log(radii, correct, **extra) -> pd.DataFrame:
    count = len(radii)
    return pd.DataFrame(
        {"idx": range(count), "label": 0, "predict": 0, "radius": radii, "correct": correct, "time": 0.5, **extra}
    )


def test_the_comparison_pairs_inputs_and_counts_every_pass():
    fixed = log([0.6, 0.3, 0.0, 1.2], [1, 1, 0, 1])
    sequential = log([0.5, 0.3, 0.0, 0.4], [1, 1, 0, 1], draws=[300, 2100, 150, 900], decided=[1, 0, 1, 1])
    table = sequential_comparison(fixed, sequential, radii=[0.0, 0.5, 1.0], n0=100, n=2000)
    assert table["fixed"].tolist() == [75.0, 50.0, 25.0]
    assert table["sequential"].tolist() == [75.0, 25.0, 0.0]
    assert table["fixed_only"].tolist() == [0, 1, 1] and table["sequential_only"].tolist() == [0, 0, 0]
    assert (table["fixed_low"] <= table["fixed"]).all() and (table["fixed"] <= table["fixed_high"]).all()
    assert table.attrs["passes_fixed_mean"] == 2100 and table.attrs["passes_sequential_mean"] == 862.5
    assert table.attrs["passes_sequential_median"] == 600 and table.attrs["undecided_at_cap"] == 0.25
    assert table.attrs["acr_fixed"] == pytest.approx(0.525) and table.attrs["acr_sequential"] == pytest.approx(0.3)
    assert (table["mcnemar_p_holm"] >= table["mcnemar_p"]).all()
    # floored to the grid 0, 0.5, 1: fixed 0.5 + 0 + 0 + 1.0, sequential 0.5 + 0 + 0 + 0 (0.4 floors to 0)
    assert table.attrs["acr_fixed_grid"] == pytest.approx(0.375)
    assert table.attrs["acr_sequential_grid"] == pytest.approx(0.125)


def test_logs_of_other_inputs_or_without_draws_are_refused():
    fixed = log([0.6, 0.3], [1, 1])
    with pytest.raises(ValueError, match="same test inputs"):
        sequential_comparison(fixed, log([0.6], [1], draws=[1], decided=[1]), radii=[0.0], n0=1, n=1)
    with pytest.raises(ValueError, match="--mode sequential"):
        sequential_comparison(fixed, fixed, radii=[0.0], n0=1, n=1)


def test_the_catalogue_builder_stacks_each_sigma_and_draws_its_figure(tmp_path):
    paths = {}
    for name, frame in (
        ("fixed", log([0.6, 0.0], [1, 0])),
        ("sequential", log([0.5, 0.0], [1, 0], draws=[300, 2100], decided=[1, 0], p_a_lower=[0.9, 0.4])),
    ):
        paths[name] = {}
        for sigma in ("0.25", "0.5"):
            path = tmp_path / f"{name}_{sigma}.tsv"
            frame.to_csv(path, sep="\t", index=False)
            paths[name][sigma] = path
    table, figure = sequential_table(paths["fixed"], paths["sequential"], radii=[0.0, 0.5], n0=100, n=2000)
    assert table["sigma"].tolist() == [0.25, 0.25, 0.5, 0.5]
    assert np.allclose(table["passes_sequential_mean"], 1200)
    assert len(figure.axes) == 2


def test_every_value_column_is_rendered_to_the_tables_decimals():
    """The catalogue entry's Markdown and LaTeX round the columns it lists; a value column it
    does not list would print all its float digits."""
    fixed = log([0.6, 0.3], [1, 1])
    sequential = log([0.5, 0.3], [1, 1], draws=[300, 2100], decided=[1, 0])
    table = sequential_comparison(fixed, sequential, radii=[0.0, 0.5], n0=100, n=2000)
    counts = {"radius", "sequential_only", "fixed_only"}
    assert set(table.columns) - counts == set(SEQUENTIAL_MEASURED)
