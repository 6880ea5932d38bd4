"""Builders of the catalogue's figures (:mod:`ddrs.pipeline.catalogue`) that read files or group records
before drawing with :mod:`ddrs.analysis.plots`; and the paper comparison, a table with its figure."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import pandas as pd
from matplotlib.figure import Figure

from ddrs.analysis import plots
from ddrs.analysis.log_record import LogRecord
from ddrs.logs.sigma_log import sigma_column


def _labelled(records: Sequence[LogRecord]) -> dict:
    """Legend label → log."""
    return {record.label: record.log for record in records}


def sigma_examples(
    sigma_log: str | os.PathLike, *, dataset: str, sigma0: float, k: int, examples: int, data_root: str, seed: int
) -> Figure:
    """Figure 6 / Appendix D: the first ``examples`` test inputs of a σ log, clean, at σ₀ and at σ*ₓ (K = ``k``)."""
    import torch

    from ddrs.data import load_dataset

    shown = pd.read_csv(sigma_log, sep="\t").head(examples)
    test_set = load_dataset(dataset, "test", root=data_root, seed=seed)
    images = torch.stack([test_set[int(idx)][0] for idx in shown["idx"]])
    return plots.sigma_examples_figure(images, sigma0, shown[sigma_column(k)], seed=seed)


def p_a_cdf(records: Sequence[LogRecord]) -> Figure:
    """The p̲A ECDF of each record (Sun et al. 2024, Fig. 3), one line per row name."""
    return plots.p_a_cdf_figure(_labelled(records))


def p_a_cdf_per_sigma(records: Sequence[LogRecord]) -> Figure:
    """Sun et al. (2024) Figure 3: one panel per σ₀, one line per method."""
    sigmas = sorted({record.sigma0 for record in records})
    return plots.p_a_cdf_figure({f"σ = {s:g}": {r.name: r.log for r in records if r.sigma0 == s} for s in sigmas})


def easy_hard(records: Sequence[LogRecord]) -> Figure:
    """Easy vs hard inputs next to ACR, the hard ones by the first fixed-σ record's p̲A."""
    reference = next(r.log for r in records if r.certify_mode == "fs")
    return plots.easy_hard_figure(_labelled(records), reference)


def paper_comparison(tables: Mapping[str, str | os.PathLike]) -> tuple[pd.DataFrame, Figure]:
    """Every cell of our ``tables`` (name → CSV) next to the DDRS paper's, and the overlay figure."""
    from ddrs.analysis.plots_reference import paper_overlay_figure
    from ddrs.analysis.reference import BEST_TABLES, comparison_table, reference_numbers
    from ddrs.analysis.reference import paper_comparison as compare

    ours = {name: pd.read_csv(path) for name, path in tables.items()}
    reference = reference_numbers()
    best = {name: table for name, table in ours.items() if name in BEST_TABLES}
    return comparison_table(compare(ours, reference)), paper_overlay_figure(best, reference)
