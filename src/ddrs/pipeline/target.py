"""The mechanism of the catalogue (no torch): a :class:`Target` is one table or figure family, and
turns an experiment into its instances, output paths, input files, builder arguments and wildcard
constraints. The entries themselves are data in :mod:`ddrs.pipeline.catalogue`."""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ddrs.analysis.log_record import LogRecord
from ddrs.analysis.table_settings import TableStatistics
from ddrs.pipeline.figure_records import FigureRecords
from ddrs.pipeline.grid import RunGrid
from ddrs.pipeline.layout import Layout, Run
from ddrs.pipeline.records import Records
from ddrs.pipeline.training_plan import TrainingPlan


class Experiment(Protocol):
    """What a catalogue entry asks of an experiment (:class:`ddrs.pipeline.experiment.Experiment`)."""

    config: Mapping[str, Any]
    layout: Layout
    grid: RunGrid
    training: TrainingPlan
    records: Records
    figure_records: FigureRecords
    statistics: TableStatistics


Wildcards = dict[str, str]
#: output kinds: a table (CSV with Markdown and LaTeX beside it), its winners, a figure (PNG + PDF)
TABLE = ("csv", "md", "tex")
FIGURE = ("png", "pdf")
#: the output of each kind that the Snakemake report shows, and its category
REPORTED = {"csv": "Tables", "png": "Figures"}


def _flat(files: str | Mapping[str, str] | list[str]) -> list[str]:
    """A path, a mapping of paths or a list of them, as a list."""
    if isinstance(files, str):
        return [files]
    return list(files.values() if isinstance(files, Mapping) else files)


def _once(exp: Experiment, target: Target) -> list[Wildcards]:
    return [{}]


def _nothing(exp: Experiment, target: Target, **wildcards: str) -> dict[str, Any]:
    return {}


def _no_models(exp: Experiment, target: Target, **wildcards: str) -> list[Run]:
    return []


@dataclass(frozen=True)
class Target:
    """One paper table or figure family; its fields are the callables ``(exp, target, **wildcards)``."""

    #: the rule's name
    name: str
    #: the output's name under ``tables/`` or ``figures/``, with ``{wildcards}``
    pattern: str
    #: ``module:function`` called with ``records=`` (when the entry has a query), the named files
    #: and the parameters; returns a DataFrame, a BestTable, a Figure or a tuple of them
    builder: str
    #: ``report/<caption>.rst``, and the report's subcategory
    caption: str
    subcategory: str
    outputs: tuple[str, ...] = TABLE
    #: the wildcard values it is built for on this experiment (``[{}]``: once; ``[]``: not at all)
    instances: Callable[[Experiment, Target], list[Wildcards]] = _once
    #: the query that picks its certification logs (their files become the rule's inputs)
    records: Callable[..., list[LogRecord]] | None = None
    #: further input files, by the builder's keyword (a path, a list or a mapping of paths)
    files: Callable[..., dict[str, Any]] = _nothing
    #: the models whose own files it reads (beyond its records' logs): runs of the grid even where
    #: no certification asks for them (:meth:`ddrs.pipeline.experiment.Experiment.runs`)
    models: Callable[..., list[Run]] = _no_models
    #: the builder's other keywords
    params: Callable[..., dict[str, Any]] = _nothing
    #: the Markdown/LaTeX caption, from the experiment and the records
    caption_of: Callable[[Experiment, list[LogRecord]], str] | None = None
    #: the records' σ logs are inputs too (Appendix F's cost of choosing σ)
    sigma_logs: bool = False
    #: the job reads the dataset itself (waits for ``prepare_data``)
    needs_data: bool = False
    #: the methods a study compares, in its table's order; ``requires``: any of them makes the study
    methods: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    #: Markdown/LaTeX rendering: decimals of percentages and of the ``measured`` columns (the CSV
    #: keeps full precision), best per column in bold
    decimals: int = 1
    bold: bool = True
    measured: tuple[str, ...] = ()

    @property
    def wildcard_names(self) -> list[str]:
        return [field for _, field, _, _ in string.Formatter().parse(self.pattern) if field]

    def paths(self, layout, name: str) -> dict[str, str]:
        """The output files of one instance named ``name`` (or of the pattern), by kind."""
        where = {
            "csv": layout.table(name),
            "md": layout.table(name, "md"),
            "tex": layout.table(name, "tex"),
            "winners": layout.table(f"{name}_winners"),
            "png": layout.figure(name),
            "pdf": layout.figure(name, "pdf"),
        }
        return {kind: where[kind] for kind in self.outputs}

    def query(self, exp: Experiment, wildcards: Mapping[str, str]) -> list[LogRecord]:
        return [] if self.records is None else self.records(exp, self, **wildcards)

    def inputs(self, exp: Experiment, wildcards: Mapping[str, str]) -> list[str]:
        """Every file the job reads: its records' logs (and σ logs), its files, the data marker."""
        records = self.query(exp, wildcards)
        paths = [record.log for record in records]
        if self.sigma_logs:
            paths += sorted({record.sigma_log for record in records if record.sigma_log is not None})
        for value in self.files(exp, self, **wildcards).values():
            paths += _flat(value)
        if self.needs_data:
            paths.append(exp.layout.data_marker(wildcards["dataset"]))
        return paths

    def arguments(self, exp: Experiment, wildcards: Mapping[str, str]) -> dict[str, dict[str, Any]]:
        """What the job's builder is called with, and how its tables are rendered."""
        builder = {**self.files(exp, self, **wildcards), **self.params(exp, self, **wildcards)}
        render: dict[str, Any] = {"decimals": self.decimals, "bold": self.bold}
        if self.measured:
            render["measured"] = self.measured
        if self.records is not None:
            builder["records"] = self.query(exp, wildcards)
            if self.caption_of is not None:
                render["caption"] = self.caption_of(exp, builder["records"])
        elif self.caption_of is not None:
            render["caption"] = self.caption_of(exp, [])
        return {"builder": builder, "render": render}

    def constraints(self, exp: Experiment) -> dict[str, str]:
        """Each wildcard matches the values it takes on this experiment, and nothing else."""
        instances = self.instances(exp, self)
        return {
            name: "|".join(dict.fromkeys(re.escape(i[name]) for i in instances)) or "(?!)"
            for name in self.wildcard_names
        }
