"""The DDRS paper's published numbers, and our tables next to them.

``ddrs/reference/ddrs_paper.csv`` transcribes every printed cell of Tables 1–4 (§4.1–4.4) and of
the per-(σ₀, K) tables of Appendix H, one cell per row::

    table, dataset, variant, train, certify, sigma0, K, radius, metric, value, source

``table`` is the name of our table file (``table1`` … ``table4``, ``appendix_h_<method>``),
``variant`` the row name :class:`~ddrs.analysis.log_record.LogRecord` gives (Cohen, Cohen-DS,
Cohen-DS², …, YANG-DS; Appendix H.3's "MACER-DS² (n=8)", the setting of Table 3, is
``MACER-DS²``, its n = 1 ablation ``MACER-DS² (n=1)``), ``sigma0``/``K`` are empty where the
paper has none, ``radius`` is empty for ``metric == "ACR"``, ``value`` is as printed (percent;
ACR in radius units) and ``source`` names the table and section, with any doubt about the copy.

:func:`paper_comparison` joins our tables with these cells (ours − paper per cell), says whether
the paper's number lies inside our interval (level 1 − α of the tables' ``statistics.alpha``;
:func:`paper_comparison_caption` states it), and compares ACR in the paper's convention:
``ACR_per_input_best`` (each input's best radius over the row's logs; see ``docs/protocol.md``),
with our ``ACR_per_log`` beside it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from ddrs.analysis.assemble import interval_columns, is_radius, radius_column
from ddrs.analysis.evidence import PER_INPUT_BEST, PER_LOG, SINGLE_ACR
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
COMPARISON_COLUMNS = [
    *CELL_KEYS,
    "ours",
    "ours_low",
    "ours_high",
    "ours_per_log",
    "paper",
    "difference",
    "paper_inside",
    "source",
]
QUANTITIES = ("ours", "ours_low", "ours_high", "paper", "difference", "paper_inside")


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


def _acr_column(table: pd.DataFrame) -> str | None:
    """The ACR column compared with the paper's: its convention, else the one-log ``ACR``."""
    return next((c for c in (PER_INPUT_BEST, SINGLE_ACR) if c in table.columns), None)


def table_cells(name: str, table: pd.DataFrame) -> pd.DataFrame:
    """One of our tables (as the table rules write it) in long format, keyed like the reference.

    Tables 1–4 need ``dataset`` and ``variant``; Appendix H tables also ``sigma0`` and ``K``.
    Radius columns (``"0.25"``) become ``radius``; the paper-convention ACR column
    (``ACR_per_input_best``, or ``ACR`` for rows of one log) becomes ``metric == "ACR"``, with
    ``ours_per_log`` from ``ACR_per_log``. ``ours_low``/``ours_high`` come from the interval
    columns (NA for a table without them).
    """
    _check_table_names([name])
    keys = ["dataset", "variant"] + (["sigma0", "K"] if name in APPENDIX_H_TABLES else [])
    missing = [column for column in keys if column not in table.columns]
    if missing:
        raise ValueError(f"table {name!r}: missing column(s) {', '.join(missing)}")
    acr = _acr_column(table)
    columns = [c for c in table.columns if is_radius(c)] + ([acr] if acr else [])
    parts = []
    for column in columns:
        low, high = interval_columns(column)
        part = table[keys].assign(column=column, ours=table[column])
        part["ours_low"] = table[low] if low in table.columns else np.nan
        part["ours_high"] = table[high] if high in table.columns else np.nan
        part["ours_per_log"] = table[PER_LOG] if column == acr and PER_LOG in table.columns else np.nan
        parts.append(part)
    cells = pd.concat(parts, ignore_index=True)
    is_acr = cells["column"] == acr
    cells["metric"] = np.where(is_acr, "ACR", "certified_accuracy")
    cells["radius"] = pd.to_numeric(cells["column"].where(~is_acr), errors="coerce")
    cells["table"] = name
    for column in ("sigma0", "K"):
        if column not in cells.columns:
            cells[column] = np.nan
    cells["sigma0"] = pd.to_numeric(cells["sigma0"]).astype(float)
    cells["K"] = pd.to_numeric(cells["K"]).astype("Int64")
    for column in OURS:
        cells[column] = pd.to_numeric(cells[column]).astype(float)
    return cells[[*CELL_KEYS, *OURS]]


#: Our side of a compared cell.
OURS = ("ours", "ours_low", "ours_high", "ours_per_log")


def _join_keys(frame: pd.DataFrame) -> pd.DataFrame:
    """Float keys rounded (0.5 and 0.50 join), NA spelled the same in every key column."""
    keyed = frame.copy()
    for column in ("sigma0", "radius"):
        keyed[column] = keyed[column].round(6)
    keyed["K"] = keyed["K"].astype("float")
    return keyed


def paper_comparison(ours: Mapping[str, pd.DataFrame], reference: pd.DataFrame) -> pd.DataFrame:
    """Every cell both we and the paper report: ours with its interval, paper, ``difference =
    ours − paper`` and ``paper_inside`` (``ours_low ≤ paper ≤ ours_high``; NA without an interval).

    ``ours`` maps a table name (:data:`PAPER_TABLES`: ``table1`` … ``table4``,
    ``appendix_h_<method>``) to our table as the table rules write it; ``reference`` is
    :func:`reference_numbers` (or a subset). ACR rows compare the paper's convention
    (``ACR_per_input_best``); ``ours_per_log`` gives our per-log ACR beside it. Cells only one side
    has, and our empty cells, are left out. Rows follow the paper's order; columns are
    :data:`COMPARISON_COLUMNS`; :func:`inside_counts` counts the cells inside.
    """
    _check_table_names(ours)
    if not ours:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    cells = pd.concat([table_cells(name, table) for name, table in ours.items()], ignore_index=True)
    cells = cells[cells["ours"].notna()]
    paper = reference.rename(columns={"value": "paper"})[[*CELL_KEYS, "paper", "source"]]
    joined = _join_keys(paper).merge(_join_keys(cells), on=CELL_KEYS, how="inner", validate="one_to_one")
    joined["difference"] = joined["ours"] - joined["paper"]
    has_interval = joined["ours_low"].notna() & joined["ours_high"].notna()
    inside = (joined["ours_low"] <= joined["paper"]) & (joined["paper"] <= joined["ours_high"])
    joined["paper_inside"] = pd.array(inside.where(has_interval, None), dtype="boolean")
    joined["K"] = joined["K"].astype("Int64")
    return joined[COMPARISON_COLUMNS].reset_index(drop=True)


def inside_counts(comparison: pd.DataFrame) -> pd.DataFrame:
    """Per table and metric: compared cells, cells with an interval, and how many hold the paper's number."""
    grouped = comparison.groupby(["table", "metric"], sort=False)["paper_inside"]
    counts = grouped.agg(cells="size", with_interval="count", inside="sum").reset_index()
    return counts.astype({"inside": int})


def comparison_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """The comparison for reading: per row of a table, lines :data:`QUANTITIES` (ours, its interval,
    paper, difference, and ``paper_inside`` as 1/0) with one column per radius (``"0.25"``), ``ACR``
    (the paper's convention) and ``ACR_per_log`` (ours only, on the ``ours`` line)."""
    rows = ["table", "dataset", "variant", "sigma0", "K"]
    cells = comparison.assign(
        sigma0=comparison["sigma0"].map(lambda s: "" if pd.isna(s) else f"{s:g}"),
        K=comparison["K"].map(lambda k: "" if pd.isna(k) else str(int(k))),
        column=[
            "ACR" if metric == "ACR" else radius_column(radius)
            for metric, radius in zip(comparison["metric"], comparison["radius"], strict=True)
        ],
    )
    cells["paper_inside"] = cells["paper_inside"].astype("Float64").astype(float)
    long = cells.melt(id_vars=[*rows, "column"], value_vars=list(QUANTITIES), var_name="quantity")
    per_log = cells.assign(column=PER_LOG, quantity="ours", value=cells["ours_per_log"]).dropna(subset=["value"])
    long = pd.concat([long, per_log[[*rows, "column", "quantity", "value"]]], ignore_index=True)
    wide = long.pivot(index=[*rows, "quantity"], columns="column", values="value")
    order = list(dict.fromkeys(map(tuple, cells[rows].to_numpy().tolist())))
    index = pd.MultiIndex.from_tuples([(*row, q) for row in order for q in QUANTITIES], names=[*rows, "quantity"])
    radii = sorted((c for c in wide.columns if is_radius(c)), key=float)
    columns = radii + [c for c in ("ACR", PER_LOG) if c in wide.columns]
    return wide.reindex(index=index, columns=columns).reset_index().rename_axis(columns=None)


def paper_comparison_caption(alpha: float = 0.05) -> str:
    """Caption of the paper comparison, at the level ``alpha`` of our tables' intervals."""
    return (
        "Our tables next to the DDRS paper's printed numbers (certified accuracy in percent, ACR in "
        f"radius units); difference = ours − paper; ours_low/ours_high: our {100 * (1 - alpha):g}% interval; "
        "paper_inside: 1 where the paper's number lies inside it. The interval covers the sampling of test "
        "inputs for our one trained model, not the variation between training runs, so paper_inside is no test "
        "of a reproduction. ACR compares the paper's convention "
        "(ACR_per_input_best, an oracle over the row's logs); ACR_per_log is our best single log. Our cells "
        "are chosen on the test inputs they report, as the paper's, so their intervals leave out that "
        "choice's optimism and nothing here is a test between rows (the _held_out tables carry the tests). "
        "Only cells both report."
    )


def comparison_caption(comparison: pd.DataFrame, alpha: float = 0.05) -> str:
    """:func:`paper_comparison_caption` with the count of cells whose printed number lies in our interval."""
    counts = inside_counts(comparison)
    text = ", ".join(
        f"{row.table} {row.metric} {row.inside}/{row.with_interval}" for row in counts.itertuples() if row.with_interval
    )
    return paper_comparison_caption(alpha) + (f" Paper's number inside our interval: {text}." if text else "")


def write_comparison(comparison: pd.DataFrame, csv_path: str | os.PathLike, *, alpha: float = 0.05) -> dict[str, Path]:
    """Write :func:`comparison_table` as CSV (full precision), Markdown and LaTeX (rounded); ``alpha``
    is the level of our tables' intervals (the caption states it)."""
    caption = comparison_caption(comparison, alpha)
    return write_table(comparison_table(comparison), csv_path, caption=caption, bold=False)
