"""An experiment: the composition of the design layer's objects for one validated config."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from ddrs.analysis.log_record import LogRecord
from ddrs.analysis.table_settings import TableStatistics
from ddrs.pipeline.catalogue import CATALOGUE
from ddrs.pipeline.figure_records import FigureRecords
from ddrs.pipeline.grid import RunGrid
from ddrs.pipeline.layout import Layout, Run
from ddrs.pipeline.published_logs import PublishedLogs
from ddrs.pipeline.records import Records
from ddrs.pipeline.target import Target
from ddrs.pipeline.training_plan import TrainingPlan
from ddrs.pipeline.validation import check_references


class Experiment:
    """The experiment of one validated config: its run grid, training plan, records, table
    statistics and the catalogue's targets."""

    def __init__(self, config: Mapping[str, Any]):
        check_references(config)
        self.config = config
        self.grid = RunGrid(config)
        self.layout: Layout = self.grid.layout
        self.training = TrainingPlan(self.grid)
        self.records = Records(self.grid, self.training)
        self.figure_records = FigureRecords(self.grid, self.records)
        self.statistics = TableStatistics.from_config(config)
        #: the published logs it fetches and tabulates (``published_logs``; None when the config has none)
        published = config.get("published_logs")
        self.published = None if published is None else PublishedLogs(published, self.layout)

    def targets(self) -> list[tuple[Target, dict[str, str], str]]:
        """Every instance of every catalogue entry on this config: (entry, wildcards, output name)."""
        return [
            (target, wildcards, target.pattern.format(**wildcards))
            for target in CATALOGUE.values()
            for wildcards in target.instances(self, target)
        ]

    def runs(self) -> list[Run]:
        """Every base classifier the grid trains or imports: the DDRS grid's and the studies' (matched
        variants included), and those a table reads directly (Sun et al.'s gradient norms), in order
        of first use."""
        return list(self._runs)

    @functools.cached_property
    def _runs(self) -> tuple[Run, ...]:
        """:meth:`runs`, gathered once from every target's query (the workflow asks at start-up and per job)."""
        runs = dict.fromkeys(self.records.runs())
        for target, wildcards, _ in self.targets():
            for r in target.query(self, wildcards):
                if not self.grid.is_logs(r.dataset):
                    runs[Run(r.dataset, r.method, r.train_mode, r.sigma0, r.replicate)] = None
            runs.update(dict.fromkeys(target.models(self, target, **wildcards)))
        return tuple(runs)

    @functools.cached_property
    def _runs_by_wildcards(self) -> dict[tuple[str, ...], Run]:
        return {run.wildcards: run for run in self._runs}

    def run_at(self, dataset: str, method: str, mode: str, sigma: str, replicate: str = "") -> Run:
        """The run whose directory a job's wildcards name (:meth:`Layout.run_dir`), looked up among
        :meth:`runs`: σ is the config's own number, never one parsed back from a path; a path of no
        run is refused, naming it."""
        try:
            return self._runs_by_wildcards[(dataset, method, mode, sigma, replicate)]
        except KeyError:
            path = self.layout.run_dir(dataset, method, mode, sigma, replicate)
            raise ValueError(f"{path} is no run of this config: its tables ask for no such model") from None

    def _outputs(self, kind: str) -> list[str]:
        return [t.paths(self.layout, name)[kind] for t, _, name in self.targets() if kind in t.outputs]

    def tables(self) -> list[str]:
        """Every table target (its CSV)."""
        return self._outputs("csv")

    def figures(self) -> list[str]:
        """Every figure target (its PNG)."""
        return self._outputs("png")

    def target_records(self, name: str) -> list[LogRecord]:
        """The records of the table or figure called ``name`` (e.g. ``consistency_mnist5k``)."""
        for target, wildcards, output in self.targets():
            if output == name:
                return target.query(self, wildcards)
        raise ValueError(f"{name!r} is not a table or figure of this experiment")
