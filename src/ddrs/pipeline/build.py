"""Run one catalogue entry (:mod:`ddrs.pipeline.catalogue`): call its builder and write what it returns.

What is written follows from the result's type: a DataFrame is a table (CSV, Markdown, LaTeX), a
:class:`~ddrs.analysis.tables.BestTable` also writes its winners, a Figure its PNG and PDF.
:func:`run_step` runs any step of the workflow that certifies nothing (a catalogue entry, or a
published-logs step of :mod:`ddrs.pipeline.published_steps`) from the experiment and its rule's
wildcards, as ``ddrs build`` does for ``rules/tables.smk`` and ``rules/published.smk``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import singledispatch
from importlib import import_module
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ddrs.analysis.plots import save_figure
from ddrs.analysis.render import write_table
from ddrs.analysis.tables import BestTable
from ddrs.io import atomic_path
from ddrs.jobs.provenance_record import record
from ddrs.pipeline.catalogue import CATALOGUE


def build(
    name: str, arguments: Mapping[str, Mapping[str, Any]], outputs: Mapping[str, str], inputs: Sequence[str] = ()
) -> None:
    """Build catalogue entry ``name`` from its ``arguments`` (:meth:`Target.arguments`) into ``outputs``;
    ``inputs`` are the files it reads (:meth:`Target.inputs`), named by digest in its record."""
    module, function = CATALOGUE[name].builder.split(":")
    result = getattr(import_module(module), function)(**arguments["builder"])
    write(result, outputs, **arguments["render"])
    record(outputs.values(), name, arguments, inputs)


def run_step(exp, rule: str, wildcards: Mapping[str, str]) -> None:
    """Run the workflow's rule ``rule`` for ``wildcards`` on the experiment ``exp``: what its job reads
    and writes, and its builder's arguments, computed here as the rule computed them."""
    from ddrs.pipeline.published_steps import STEPS

    if rule in STEPS:
        STEPS[rule](exp, **wildcards)
        return
    if rule not in CATALOGUE:
        raise ValueError(f"no step of the workflow is named {rule!r}: a catalogue entry or one of {sorted(STEPS)}")
    target = CATALOGUE[rule]
    outputs = target.paths(exp.layout, target.pattern.format(**wildcards))
    build(rule, target.arguments(exp, wildcards), outputs, target.inputs(exp, wildcards))


@singledispatch
def write(result: Any, outputs: Mapping[str, str], **render: Any) -> None:
    raise TypeError(f"a builder returned {type(result).__name__}; expected a DataFrame, BestTable, Figure or tuple")


@write.register
def _(frame: pd.DataFrame, outputs: Mapping[str, str], *, measured: Sequence[str] = (), **render: Any) -> None:
    write_table(frame, outputs["csv"], shown=shown(frame, measured, render.get("decimals", 1)), **render)


def shown(frame: pd.DataFrame, measured: Sequence[str], decimals: int) -> pd.DataFrame:
    """``frame`` with its ``measured`` columns as text to ``decimals`` places (Markdown and LaTeX)."""
    missing = sorted(set(measured) - set(frame.columns))
    if missing:
        raise ValueError(f"measured columns {missing} are not in the table; it has {list(frame.columns)}")
    text = {c: [("" if pd.isna(v) else f"{v:.{decimals}f}") for v in frame[c]] for c in measured}
    return frame.assign(**text)


@write.register
def _(best: BestTable, outputs: Mapping[str, str], **render: Any) -> None:
    write_table(best.table, outputs["csv"], **render)
    with atomic_path(outputs["winners"]) as tmp:
        best.winners.to_csv(tmp, index=False)


@write.register
def _(figure: Figure, outputs: Mapping[str, str], **render: Any) -> None:
    save_figure(figure, outputs["png"])


@write.register
def _(results: tuple, outputs: Mapping[str, str], **render: Any) -> None:
    for result in results:
        write(result, outputs, **render)
