"""The DDRS paper's published numbers, and our tables next to them.

``ddrs/reference/ddrs_paper.csv`` transcribes every printed cell of Tables 1–4 (§4.1–4.4) and of
the per-(σ₀, K) tables of Appendix H, one cell per row::

    table, dataset, variant, train, certify, sigma0, K, radius, metric, value, source

``table`` is the name of our table file (``table1`` … ``table4``, ``appendix_h_<method>``),
``variant`` the row name :class:`~ddrs.analysis.records.LogRecord` gives (Cohen, Cohen-DS,
Cohen-DS², …, YANG-DS; Appendix H.3's "MACER-DS² (n=8)", the setting of Table 3, is
``MACER-DS²``, its n = 1 ablation ``MACER-DS² (n=1)``), ``sigma0``/``K`` are empty where the
paper has none, ``radius`` is empty for ``metric == "ACR"``, ``value`` is as printed (percent;
ACR in radius units) and ``source`` names the table and section, with any doubt about the copy.

:func:`paper_comparison` joins our tables with these cells (ours − paper per cell).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from ddrs.analysis.assemble import metric_columns, radius_column
from ddrs.analysis.render import write_table

REFERENCE_COLUMNS = (
    "table",
    "dataset",
    "variant",
    "train",
    "certify",
    "sigma0",
    "K",
    "radius",
    "metric",
    "value",
    "source",
)
METRICS = ("certified_accuracy", "ACR")
#: Tables 1–4: best certified accuracy per radius and ACR of each variant.
BEST_TABLES = ("table1", "table2", "table3", "table4")
#: Appendix H: certified accuracy per radius of every (variant, σ₀, K).
APPENDIX_H_TABLES = ("appendix_h_cohen", "appendix_h_smoothadv", "appendix_h_macer")
PAPER_TABLES = BEST_TABLES + APPENDIX_H_TABLES
#: What identifies one cell of a table.
CELL_KEYS = ["table", "dataset", "variant", "sigma0", "K", "metric", "radius"]
COMPARISON_COLUMNS = [*CELL_KEYS, "ours", "paper", "difference", "source"]
QUANTITIES = ("ours", "paper", "difference")


def reference_path() -> Path:
    """The transcription shipped with the package."""
    return Path(str(resources.files("ddrs") / "reference" / "ddrs_paper.csv"))


def reference_numbers(table: str | None = None) -> pd.DataFrame:
    """The paper's printed cells (validated), all tables or one of :data:`PAPER_TABLES`."""
    frame = load_reference(reference_path())
    if table is None:
        return frame
    _check_table_names([table])
    return frame[frame["table"] == table].reset_index(drop=True)


def load_reference(path: str | os.PathLike) -> pd.DataFrame:
    """Read a file of reference cells: numbers as floats, ``K`` as Int64, empty cells as NA."""
    frame = pd.read_csv(path, dtype={"table": str, "dataset": str, "variant": str, "source": str})
    missing = [column for column in REFERENCE_COLUMNS if column not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    frame = frame[list(REFERENCE_COLUMNS)]
    for column in ("sigma0", "radius", "value"):
        frame[column] = pd.to_numeric(frame[column], errors="raise").astype(float)
    frame["K"] = pd.to_numeric(frame["K"], errors="raise").astype("Int64")
    validate_reference(frame, source=str(path))
    return frame


def validate_reference(frame: pd.DataFrame, source: str = "<reference>") -> None:
    """Check a reference frame's cells are well formed; the error names the first bad rows."""
    ca = frame["metric"] == "certified_accuracy"
    appendix = frame["table"].isin(APPENDIX_H_TABLES)
    problems = {
        "unknown table": ~frame["table"].isin(PAPER_TABLES),
        f"metric not one of {METRICS}": ~frame["metric"].isin(METRICS),
        "train/certify not FS or DS": ~(frame["train"].isin(["FS", "DS"]) & frame["certify"].isin(["FS", "DS"])),
        "certified accuracy outside [0, 100] or without a radius": ca
        & ~(frame["value"].between(0, 100) & (frame["radius"] >= 0)),
        "ACR negative or with a radius": (frame["metric"] == "ACR") & ~((frame["value"] >= 0) & frame["radius"].isna()),
        "Appendix H row without σ₀": appendix & ~(frame["sigma0"] > 0),
        "Tables 1–4 row with σ₀ or K": ~appendix & (frame["sigma0"].notna() | frame["K"].notna()),
        "K given exactly for data-dependent certification": appendix
        & (frame["K"].isna() != (frame["certify"] == "FS")),
        "duplicate cell": frame.duplicated(CELL_KEYS, keep=False),
    }
    for problem, bad in problems.items():
        if bad.any():
            rows = frame.loc[bad, CELL_KEYS].head(3).to_dict("records")
            raise ValueError(f"{source}: {problem} in {int(bad.sum())} row(s), e.g. {rows}")


def _check_table_names(names) -> None:
    unknown = sorted(set(names) - set(PAPER_TABLES))
    if unknown:
        raise ValueError(f"unknown table name(s) {unknown}; the paper prints {list(PAPER_TABLES)}")


def table_cells(name: str, table: pd.DataFrame) -> pd.DataFrame:
    """One of our tables (as the table rules write it) in long format, keyed like the reference.

    Tables 1–4 need ``dataset`` and ``variant``; Appendix H tables also ``sigma0`` and ``K``.
    Radius columns (``"0.25"``) become ``radius``; ``ACR`` becomes ``metric == "ACR"``.
    """
    _check_table_names([name])
    keys = ["dataset", "variant"] + (["sigma0", "K"] if name in APPENDIX_H_TABLES else [])
    missing = [column for column in keys if column not in table.columns]
    if missing:
        raise ValueError(f"table {name!r}: missing column(s) {', '.join(missing)}")
    cells = table.melt(id_vars=keys, value_vars=metric_columns(table), var_name="column", value_name="ours")
    is_acr = cells["column"] == "ACR"
    cells["metric"] = np.where(is_acr, "ACR", "certified_accuracy")
    cells["radius"] = pd.to_numeric(cells["column"].where(~is_acr), errors="coerce")
    cells["table"] = name
    for column in ("sigma0", "K"):
        if column not in cells.columns:
            cells[column] = np.nan
    cells["sigma0"] = pd.to_numeric(cells["sigma0"]).astype(float)
    cells["K"] = pd.to_numeric(cells["K"]).astype("Int64")
    cells["ours"] = pd.to_numeric(cells["ours"]).astype(float)
    return cells[[*CELL_KEYS, "ours"]]


def _join_keys(frame: pd.DataFrame) -> pd.DataFrame:
    """Float keys rounded (0.5 and 0.50 join), NA spelled the same in every key column."""
    keyed = frame.copy()
    for column in ("sigma0", "radius"):
        keyed[column] = keyed[column].round(6)
    keyed["K"] = keyed["K"].astype("float")
    return keyed


def paper_comparison(ours: Mapping[str, pd.DataFrame], reference: pd.DataFrame) -> pd.DataFrame:
    """Every cell both we and the paper report: ours, paper and ``difference = ours − paper``.

    ``ours`` maps a table name (:data:`PAPER_TABLES`: ``table1`` … ``table4``,
    ``appendix_h_<method>``) to our table as the table rules write it; ``reference`` is
    :func:`reference_numbers` (or a subset). Cells only one side has, and our empty cells, are
    left out. Rows follow the paper's order; columns are :data:`COMPARISON_COLUMNS`.
    """
    _check_table_names(ours)
    if not ours:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    cells = pd.concat([table_cells(name, table) for name, table in ours.items()], ignore_index=True)
    cells = cells[cells["ours"].notna()]
    paper = reference.rename(columns={"value": "paper"})[[*CELL_KEYS, "paper", "source"]]
    joined = _join_keys(paper).merge(_join_keys(cells), on=CELL_KEYS, how="inner", validate="one_to_one")
    joined["difference"] = joined["ours"] - joined["paper"]
    joined["K"] = joined["K"].astype("Int64")
    return joined[COMPARISON_COLUMNS].reset_index(drop=True)


def comparison_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """The comparison for reading: per row of a table, lines ``ours``, ``paper`` and ``difference``
    with one column per radius (``"0.25"``) and ``ACR``, as our tables have."""
    rows = ["table", "dataset", "variant", "sigma0", "K"]
    cells = comparison.assign(
        sigma0=comparison["sigma0"].map(lambda s: "" if pd.isna(s) else f"{s:g}"),
        K=comparison["K"].map(lambda k: "" if pd.isna(k) else str(int(k))),
        column=[
            "ACR" if metric == "ACR" else radius_column(radius)
            for metric, radius in zip(comparison["metric"], comparison["radius"], strict=True)
        ],
    )
    long = cells.melt(id_vars=[*rows, "column"], value_vars=list(QUANTITIES), var_name="quantity")
    wide = long.pivot(index=[*rows, "quantity"], columns="column", values="value")
    order = list(dict.fromkeys(map(tuple, cells[rows].to_numpy().tolist())))
    index = pd.MultiIndex.from_tuples([(*row, q) for row in order for q in QUANTITIES], names=[*rows, "quantity"])
    radii = sorted((c for c in wide.columns if c != "ACR"), key=float)
    columns = radii + (["ACR"] if "ACR" in wide.columns else [])
    return wide.reindex(index=index, columns=columns).reset_index().rename_axis(columns=None)


COMPARISON_CAPTION = (
    "Our tables next to the DDRS paper's printed numbers (certified accuracy in percent, ACR in "
    "radius units); difference = ours − paper. Only cells both report."
)


def write_comparison(comparison: pd.DataFrame, csv_path: str | os.PathLike) -> dict[str, Path]:
    """Write :func:`comparison_table` as CSV (full precision), Markdown and LaTeX (rounded)."""
    return write_table(comparison_table(comparison), csv_path, caption=COMPARISON_CAPTION, bold=False)
