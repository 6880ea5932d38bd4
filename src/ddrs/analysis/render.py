"""Render tables as CSV, Markdown and LaTeX, with the best cells in bold (as the paper).

:func:`write_table` writes ``x.csv`` (full precision, every column), ``x.md`` and ``x.tex``
(rounded) beside each other, each atomically. In Markdown and LaTeX a metric cell ``c`` with an
interval (``c_low``, ``c_high``) reads ``value [low, high]``, and one with a Holm-adjusted p-value
(``c_p_holm``, the comparisons tables) reads ``value (p=…)``; those columns, and the discordant
counts and raw p-values beside them, are folded into the cell and not printed separately. A
printed p keeps the side of the frame's α (``frame.attrs["alpha"]``) that p is on: three decimals,
more where rounding would cross α (:func:`p_text`).

Bold: a frame that carries a significance-aware mask (``frame.attrs["bold_cells"]``, set by the
builders of :mod:`ddrs.analysis.tables`; see :mod:`ddrs.analysis.assemble`) is bolded by it;
any other frame gets the column maximum per dataset (:func:`best_mask`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ddrs.analysis.assemble import (
    ACR_COLUMNS,
    ALPHA_ATTR,
    BOLD_ATTR,
    SCIENTIFIC_ATTR,
    interval_columns,
    metric_columns,
)
from ddrs.io import atomic_path, write_text_atomic

#: Columns whose groups are bolded separately (the paper bolds per dataset block).
BOLD_GROUPS = ("dataset",)
#: Suffixes of the columns folded into a metric cell when printed.
ANNOTATIONS = ("_low", "_high", "_p", "_p_holm", "_better", "_worse")


def _places(column: str, decimals: int, acr_decimals: int) -> int:
    return acr_decimals if column in ACR_COLUMNS else decimals


def annotation_columns(frame: pd.DataFrame) -> list[str]:
    """The interval, p-value and count columns of the frame's metric columns."""
    wanted = {f"{c}{suffix}" for c in metric_columns(frame) for suffix in ANNOTATIONS}
    return [c for c in frame.columns if c in wanted]


def rounded(frame: pd.DataFrame, decimals: int = 1, acr_decimals: int = 3) -> pd.DataFrame:
    """The table as the paper prints it: percent to ``decimals``, ACR to ``acr_decimals``
    (intervals alike)."""
    out = frame.copy()
    for column in metric_columns(frame):
        places = _places(column, decimals, acr_decimals)
        for name in (column, *interval_columns(column)):
            if name in frame.columns:
                out[name] = frame[name].astype(float).round(places)
    return out


def best_mask(frame: pd.DataFrame, groups: Sequence[str] = BOLD_GROUPS) -> pd.DataFrame:
    """True where a metric cell is bold.

    With ``frame.attrs["bold_cells"]`` those cells (significance-aware, see the module docstring).
    Otherwise the column's maximum within its group (e.g. dataset): ties are all bold, except when
    every row of the group has the same value (nothing won), which matches the paper's Tables 1–4.
    Rows named ``envelope`` never compete.
    """
    mask = pd.DataFrame(False, index=frame.index, columns=frame.columns)
    if BOLD_ATTR in frame.attrs:
        for row, column in frame.attrs[BOLD_ATTR]:
            if row in mask.index and column in mask.columns:
                mask.loc[row, column] = True
        return mask
    keys = [g for g in groups if g in frame.columns]
    competing = ~frame.isin(["envelope"]).any(axis=1)
    grouped = frame[competing].groupby(keys, sort=False) if keys else [(None, frame[competing])]
    for _, block in grouped:
        for column in metric_columns(frame):
            values = block[column].astype(float)
            if values.notna().sum() > 1 and values.nunique() > 1:
                mask.loc[values.index[values == values.max()], column] = True
    return mask


def p_text(p: float, alpha: float | None = None) -> str:
    """A p-value as printed: ``p<0.001`` below 0.001, else three decimals, or as many more as it
    takes for the printed number to lie on the same side of ``alpha`` as p (at α = 0.05, 0.04996
    reads ``p=0.04996``, not ``p=0.050``), so a significant cell never reads p ≥ α and another
    never p < α; a bound ``p<α`` / ``p≥α`` where nine decimals do not tell them apart."""
    if p < 0.001 and (alpha is None or alpha >= 0.001):
        return "p<0.001"
    for places in range(3, 10):
        text = f"{p:.{places}f}"
        if alpha is None or (float(text) < alpha) == (p < alpha):
            return f"p={text}"
    return f"p<{alpha:g}" if p < alpha else f"p≥{alpha:g}"


def _formatted(frame: pd.DataFrame, decimals: int, acr_decimals: int, empty: str = "") -> pd.DataFrame:
    """Every cell as text, metric cells with their interval or p-value; annotation columns dropped."""
    out = frame.astype(object).where(frame.notna(), "")
    alpha = frame.attrs.get(ALPHA_ATTR)
    for column in metric_columns(frame):
        places = _places(column, decimals, acr_decimals)
        low, high = interval_columns(column)
        cells = []
        for i in frame.index:
            value = frame.at[i, column]
            if pd.isna(value):
                cells.append(empty)
                continue
            text = f"{value:.{places}f}"
            if low in frame.columns and high in frame.columns and pd.notna(frame.at[i, low]):
                text += f" [{frame.at[i, low]:.{places}f}, {frame.at[i, high]:.{places}f}]"
            if f"{column}_p_holm" in frame.columns and pd.notna(frame.at[i, f"{column}_p_holm"]):
                text += f" ({p_text(frame.at[i, f'{column}_p_holm'], alpha)})"
            cells.append(text)
        out[column] = cells
    for column in frame.attrs.get(SCIENTIFIC_ATTR, ()):
        out[column] = ["" if pd.isna(value) else f"{value:.2e}" for value in frame[column]]
    return out.drop(columns=annotation_columns(frame))


def to_markdown(
    frame: pd.DataFrame, *, caption: str | None = None, decimals: int = 1, acr_decimals: int = 3, bold: bool = True
) -> str:
    """A GitHub Markdown table (tabulate), bold cells in ``**bold**``, caption above it."""
    table = rounded(frame, decimals, acr_decimals)
    text = _formatted(table, decimals, acr_decimals)
    if bold:
        mask = best_mask(table)[text.columns]
        text = text.where(~mask, "**" + text.astype(str) + "**")
    body = text.to_markdown(index=False, disable_numparse=True)
    return (f"{caption}\n\n" if caption else "") + body + "\n"


def to_latex(
    frame: pd.DataFrame,
    *,
    caption: str | None = None,
    label: str | None = None,
    decimals: int = 1,
    acr_decimals: int = 3,
    bold: bool = True,
) -> str:
    """A booktabs LaTeX table (pandas Styler), bold cells in ``\\textbf``."""
    table = rounded(frame, decimals, acr_decimals)
    text = _formatted(table, decimals, acr_decimals, empty="--")
    styler = text.style.hide(axis="index").format(escape="latex").format_index(escape="latex", axis=1)
    if bold:
        mask = best_mask(table)[text.columns].to_numpy()
        styler = styler.apply(lambda _: np.where(mask, "textbf:--rwrap;", ""), axis=None)
    caption = None if caption is None else _escape_latex(caption)
    latex = styler.to_latex(caption=caption, label=label, hrules=True, position_float="centering")
    for symbol, command in _LATEX_SYMBOLS:
        latex = latex.replace(symbol, command)
    return latex


#: Unicode the tables and captions use, as LaTeX (after escaping; order matters).
_LATEX_SYMBOLS = (
    ("σ₀", r"$\sigma_0$"),
    ("σ√3", r"$\sigma\sqrt{3}$"),
    ("ℓ1", r"$\ell_1$"),
    ("ℓ2", r"$\ell_2$"),
    ("−", "-"),
    ("²", r"\textsuperscript{2}"),
    ("σ", r"$\sigma$"),
    ("λ", r"$\lambda$"),
    ("α", r"$\alpha$"),
    ("–", "--"),
    ("p<", r"p$<$"),
    ("p≥", r"p$\geq$"),
)


def _escape_latex(text: str) -> str:
    """Escape LaTeX's special characters in free text (captions)."""
    for char in "&%$#_{}":
        text = text.replace(char, "\\" + char)
    return text


def view(frame: pd.DataFrame, radii: Sequence[float] | None = None) -> tuple[pd.DataFrame, str | None]:
    """``frame`` as a terminal shows it (``ddrs show``): the radius columns of ``radii`` alone, with
    their intervals (every one when None), and no dataset column when every row is of one dataset.
    Returns that frame and the one dataset (None where there is no such column or several)."""
    radius_columns = [column for column in metric_columns(frame) if column not in ACR_COLUMNS]
    if radii is not None:
        missing = [r for r in radii if not any(abs(float(column) - r) < 1e-9 for column in radius_columns)]
        if missing:
            raise ValueError(f"no column for radius {missing}; the table's radii: {', '.join(radius_columns)}")
        hidden = [column for column in radius_columns if not any(abs(float(column) - r) < 1e-9 for r in radii)]
        frame = frame.drop(columns=[f"{c}{suffix}" for c in hidden for suffix in ("", *ANNOTATIONS)], errors="ignore")
    datasets = frame["dataset"].unique() if "dataset" in frame.columns else []
    if len(datasets) != 1:
        return frame, None
    return frame.drop(columns="dataset"), str(datasets[0])


def write_table(
    frame: pd.DataFrame,
    csv_path: str | os.PathLike,
    *,
    caption: str | None = None,
    label: str | None = None,
    decimals: int = 1,
    acr_decimals: int = 3,
    bold: bool = True,
    shown: pd.DataFrame | None = None,
) -> dict[str, Path]:
    """Write ``x.csv`` (``frame`` at full precision), ``x.md`` and ``x.tex`` (``shown``, default
    ``frame``) beside each other, atomically.

    Returns the three paths by format (``csv``, ``md``, ``tex``).
    """
    csv_path = Path(csv_path)
    shown = frame if shown is None else shown
    paths = {suffix: csv_path.with_suffix(f".{suffix}") for suffix in ("csv", "md", "tex")}
    with atomic_path(paths["csv"]) as tmp:
        frame.to_csv(tmp, index=False)
    write_text_atomic(
        paths["md"], to_markdown(shown, caption=caption, decimals=decimals, acr_decimals=acr_decimals, bold=bold)
    )
    write_text_atomic(
        paths["tex"],
        to_latex(shown, caption=caption, label=label, decimals=decimals, acr_decimals=acr_decimals, bold=bold),
    )
    return paths


#: What the two ACR columns of a best table are (captions).
ACR_CONVENTIONS = (
    "ACR_per_log: the best ACR of any one of the row's logs, a classifier one could deploy. "
    "ACR_per_input_best: the paper's convention, each input's largest certified radius over the same "
    "logs, averaged; it picks σ per input after seeing its certificate, so it is an oracle figure that "
    "no single smoothed classifier attains, and it grows with the number of logs, so it is never bold."
)


def intervals_caption(alpha: float = 0.05) -> str:
    """How cells, intervals and bold read (captions)."""
    return (
        f"Each cell: value [{100 * (1 - alpha):g}% interval], exact Clopper–Pearson over the test inputs for "
        "certified accuracy (that of the log that won the cell), seeded paired bootstrap for ACR. Bold: no "
        "other row is significantly better (exact McNemar per radius, paired sign-flip permutation test for "
        "ACR, Holm-adjusted over every pair of rows and every tested column of the group, "
        f"α = {alpha:g}), so every row within noise of the best is bold."
    )


def runtime_caption() -> str:
    """Caption of the Appendix F table (:func:`ddrs.analysis.tables.runtime_table`)."""
    return (
        "Seconds per certified input: certify_s is Cohen's CERTIFY, extra_s choosing σ (Algorithm 1 or the "
        "grid search). One Algorithm 1 run snapshots every K, so extra_s is its time to the largest K, "
        "charged to each K: an upper bound for a smaller K."
    )


def selection_caption(selection: str) -> str:
    """How a best table's cells were chosen (on the reported test inputs, or on a held-out half),
    and so whether its rows of several logs are tested."""
    if selection == "test":
        return (
            "Selection on the test inputs themselves, as in the paper: each cell is the best of its row's logs "
            "on the very inputs it reports, which favours the row with more logs even when no log differs, so "
            "a row of several logs is not tested and carries no bold and no significance here; the _held_out "
            "tables carry the tests."
        )
    if selection == "held_out":
        return (
            "Held-out selection: each cell's σ (FS) or (σ₀, K) (DS) is chosen on a seeded half of the "
            "test inputs and reported on the other half (ACR_per_input_best stays an oracle), so every "
            "row is tested. The halves split inputs, not certificates: a memory-based log (Algorithm 3, "
            "certified in idx order) lets an input's certificate depend on earlier inputs of either half."
        )
    raise ValueError(f"selection {selection!r}: choose 'test' or 'held_out'")


def comparisons_caption(alpha: float = 0.05) -> str:
    """Caption of a comparisons table (:mod:`ddrs.analysis.comparisons`)."""
    return (
        "Each variant against its baseline on the same test inputs (for a best row, the log that won the "
        "cell). Radius columns: difference of certified accuracy (percentage points) with the exact "
        "McNemar p-value; ACR columns: difference with its "
        f"{100 * (1 - alpha):g}% paired-bootstrap interval, and for ACR_per_log (ACR) the p-value of a paired "
        "sign-flip permutation test. p: Holm-adjusted over every tested comparison and tested column of the "
        f"dataset. Bold: significant at α = {alpha:g}. Rows with tested = False compare a cell chosen among "
        "several logs on the very inputs it reports, which favours the row with more logs even when no log "
        "differs: they are described, not tested (p Holm-adjusted over the dataset's untested cells, never "
        "bold); the _held_out tables carry the tests."
    )


def selection_optimism_caption(alpha: float = 0.05) -> str:
    """Caption of a selection-optimism table (:func:`ddrs.analysis.comparisons.selection_optimism_table`)."""
    return (
        "Selection optimism: on the held-out evaluation half, the value of the setting chosen on those "
        "inputs themselves (the paper's test-set selection) minus that of the setting chosen on the other "
        f"half (percentage points; ACR_per_log in radius units), with a {100 * (1 - alpha):g}% bootstrap "
        "interval. It cannot be negative; ACR_per_input_best selects per input and has none."
    )


def semi_elastic_caption(method: str, rate: float, k: int) -> str:
    """What a best table's Method-IDRS row is and which guarantee each data-dependent row carries
    (docs/protocol.md, "A soundly certified data-dependent row")."""
    return (
        f"{method}-IDRS (ours, not in the DDRS paper): the fixed-σ models certified with Súkeník et al.'s "
        f"(ICML 2022) σ(x) = σ₀·exp(r(d̄_k(x) − m)), r = {rate:g}, d̄_k the mean distance to the k = {k} nearest "
        "training inputs, by their certificate for an r-semi-elastic σ(x): sound for every query alone, "
        f"where {method}-DS's radii hold for the classifier with its memory of earlier certificates (DDRS §3.5)."
    )


def best_table_caption(
    method: str,
    *,
    norm: int = 2,
    uniform_conventions: Mapping[str, str] | None = None,
    selection: str | None = None,
    alpha: float = 0.05,
) -> str:
    """Caption of Tables 1–4, stating how rows and ACR are chosen (and Table 4's scale convention).

    ``uniform_conventions`` maps each dataset to how its uniform-noise scales were given
    (:data:`ddrs.core.settings.UNIFORM_CONVENTIONS`): ``yang_std`` (Yang et al.'s σ, half-width
    λ = σ√3) or ``half_width`` (λ itself); ℓ1 tables only. ``selection`` (``test`` or
    ``held_out``) adds how each cell's setting was chosen (:func:`selection_caption`); ``alpha``
    is the tables' level.
    """
    text = (
        f"Best certified accuracy (%) per ℓ{norm} radius and ACR of {method}, {method}-DS"
        + ("" if norm == 1 else f" and {method}-DS²")
        + ". FS rows: best per radius over training σ (the envelope); DS rows: best over σ₀ and K "
        "(Algorithm 1, memory-based certification). " + ACR_CONVENTIONS + " " + intervals_caption(alpha)
    )
    if norm == 1:
        readings = {
            "yang_std": "Yang et al.'s σ (standard deviation); half-width λ = σ√3",
            "half_width": "the half-width λ of the uniform distribution on [−λ, λ] per coordinate",
        }
        conventions = dict(uniform_conventions or {})
        unknown = sorted(set(conventions.values()) - set(readings))
        if unknown:
            raise ValueError(f"uniform conventions must be one of {sorted(readings)}, got {unknown}")
        if len(set(conventions.values())) == 1:
            text += f" Uniform noise scales are {readings[next(iter(conventions.values()))]}."
        elif conventions:
            text += (
                " Uniform noise scales are "
                + "; ".join(f"on {dataset}, {readings[convention]}" for dataset, convention in conventions.items())
                + "."
            )
    return text if selection is None else f"{text} {selection_caption(selection)}"
