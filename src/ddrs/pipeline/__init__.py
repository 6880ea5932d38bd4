"""The experiment design as a pure function of the validated config (no torch, no Snakemake).

Three layers, each a class of its own: :class:`~ddrs.pipeline.grid.RunGrid` (which base
classifiers exist, their σ₀ and K grids, training options and job resources),
:class:`~ddrs.pipeline.records.Records` (which certification logs exist and the queries that
pick them) and :class:`Experiment` (the paper's tables and figures, one per instance of a
:mod:`ddrs.pipeline.catalogue` catalogue entry). The workflow (``rules/*.smk``) asks an :class:`Experiment`
for its targets and inputs and only turns them into rules and flags. Unit tests pin the design
here (``tests/test_experiments.py``); the DAG tests only check the wiring.
"""

from __future__ import annotations

from functools import cached_property

from ddrs.analysis.records import LogRecord
from ddrs.analysis.table_settings import TableStatistics
from ddrs.pipeline.catalogue import CATALOGUE, Target
from ddrs.pipeline.grid import RunGrid, merge_train
from ddrs.pipeline.layout import KGridGroup, Layout, Run, scale_label
from ddrs.pipeline.records import Records

__all__ = ["Experiment", "KGridGroup", "Layout", "Records", "Run", "RunGrid", "merge_train", "scale_label"]


class Experiment(Records):
    """The experiment of one validated config: its run grid, its records and the catalogue's targets."""

    @cached_property
    def statistics(self) -> TableStatistics:
        """The tables' interval level, bootstrap size, seed and selections (``statistics`` section)."""
        return TableStatistics.from_config(self.config)

    def targets(self) -> list[tuple[Target, dict[str, str], str]]:
        """Every instance of every catalogue entry on this config: (entry, wildcards, output name)."""
        return [
            (target, wildcards, target.pattern.format(**wildcards))
            for target in CATALOGUE.values()
            for wildcards in target.instances(self, target)
        ]

    def runs(self) -> list[Run]:
        """Every base classifier the grid trains or imports: the DDRS grid's and the studies' (matched
        variants included), in order of first use."""
        runs = dict.fromkeys(super().runs())
        for target, wildcards, _ in self.targets():
            for r in target.query(self, wildcards):
                if not self.is_logs(r.dataset):
                    runs[Run(r.dataset, r.method, r.train_mode, r.sigma0)] = None
        return list(runs)

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
