"""Render tables as CSV, Markdown and LaTeX, with the best value per column in bold (as the paper).

:func:`write_table` writes ``x.csv`` (full precision), ``x.md`` and ``x.tex`` (rounded, best in
bold) beside each other, each atomically.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ddrs.analysis.assemble import metric_columns
from ddrs.io import atomic_path, write_text_atomic

#: Columns whose groups are bolded separately (the paper bolds per dataset block).
BOLD_GROUPS = ("dataset",)


def rounded(frame: pd.DataFrame, decimals: int = 1, acr_decimals: int = 3) -> pd.DataFrame:
    """The table as the paper prints it: percent to ``decimals``, ACR to ``acr_decimals``."""
    out = frame.copy()
    for column in metric_columns(frame):
        out[column] = frame[column].astype(float).round(acr_decimals if column == "ACR" else decimals)
    return out


def best_mask(frame: pd.DataFrame, groups: Sequence[str] = BOLD_GROUPS) -> pd.DataFrame:
    """True where a metric cell holds its column's maximum within its group (e.g. dataset).

    Ties are all bold, except when every row of the group has the same value (nothing won),
    which matches the paper's Tables 1–4. Rows named ``envelope`` never compete.
    """
    mask = pd.DataFrame(False, index=frame.index, columns=frame.columns)
    keys = [g for g in groups if g in frame.columns]
    competing = ~frame.isin(["envelope"]).any(axis=1)
    grouped = frame[competing].groupby(keys, sort=False) if keys else [(None, frame[competing])]
    for _, block in grouped:
        for column in metric_columns(frame):
            values = block[column].astype(float)
            if values.notna().sum() > 1 and values.nunique() > 1:
                mask.loc[values.index[values == values.max()], column] = True
    return mask


def _formatted(frame: pd.DataFrame, decimals: int, acr_decimals: int) -> pd.DataFrame:
    out = frame.astype(object).where(frame.notna(), "")
    for column in metric_columns(frame):
        places = acr_decimals if column == "ACR" else decimals
        out[column] = [("" if pd.isna(v) else f"{v:.{places}f}") for v in frame[column]]
    return out


def to_markdown(
    frame: pd.DataFrame, *, caption: str | None = None, decimals: int = 1, acr_decimals: int = 3, bold: bool = True
) -> str:
    """A GitHub Markdown table (tabulate), best per column in ``**bold**``, caption above it."""
    table = rounded(frame, decimals, acr_decimals)
    text = _formatted(table, decimals, acr_decimals)
    if bold:
        mask = best_mask(table)
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
    """A booktabs LaTeX table (pandas Styler), best per column in ``\\textbf``."""
    table = rounded(frame, decimals, acr_decimals)
    styler = table.style.hide(axis="index")
    formats = {c: f"{{:.{acr_decimals if c == 'ACR' else decimals}f}}" for c in metric_columns(table)}
    styler = styler.format(formats, na_rep="--", escape="latex").format_index(escape="latex", axis=1)
    if bold:
        mask = best_mask(table).to_numpy()
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
)


def _escape_latex(text: str) -> str:
    """Escape LaTeX's special characters in free text (captions)."""
    for char in "&%$#_{}":
        text = text.replace(char, "\\" + char)
    return text


def write_table(
    frame: pd.DataFrame,
    csv_path: str | os.PathLike,
    *,
    caption: str | None = None,
    label: str | None = None,
    decimals: int = 1,
    acr_decimals: int = 3,
    bold: bool = True,
) -> dict[str, Path]:
    """Write ``x.csv`` (full precision), ``x.md`` and ``x.tex`` beside each other, atomically.

    Returns the three paths by format (``csv``, ``md``, ``tex``).
    """
    csv_path = Path(csv_path)
    paths = {suffix: csv_path.with_suffix(f".{suffix}") for suffix in ("csv", "md", "tex")}
    with atomic_path(paths["csv"]) as tmp:
        frame.to_csv(tmp, index=False)
    write_text_atomic(
        paths["md"], to_markdown(frame, caption=caption, decimals=decimals, acr_decimals=acr_decimals, bold=bold)
    )
    write_text_atomic(
        paths["tex"],
        to_latex(frame, caption=caption, label=label, decimals=decimals, acr_decimals=acr_decimals, bold=bold),
    )
    return paths


def best_table_caption(method: str, *, norm: int = 2, uniform_conventions: Mapping[str, str] | None = None) -> str:
    """Caption of Tables 1–4, stating how rows and ACR are chosen (and Table 4's scale convention).

    ``uniform_conventions`` maps each dataset to how its uniform-noise scales were given
    (:data:`ddrs.settings.UNIFORM_CONVENTIONS`): ``yang_std`` (Yang et al.'s σ, half-width
    λ = σ√3) or ``half_width`` (λ itself); ℓ1 tables only.
    """
    text = (
        f"Best certified accuracy (%) per ℓ{norm} radius and ACR of {method}, {method}-DS"
        + ("" if norm == 1 else f" and {method}-DS²")
        + ". FS rows: best per radius over training σ (the envelope); DS rows: best over σ₀ and K "
        "(Algorithm 1, memory-based certification). ACR: best ACR over the same logs."
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
    return text
