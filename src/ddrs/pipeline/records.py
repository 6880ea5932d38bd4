"""The records of a run grid (no torch): which certification logs exist and which of them each
paper table or figure reads (:class:`~ddrs.analysis.log_record.LogRecord` lists).

The queries here are the vocabulary of the target catalogue (:mod:`ddrs.pipeline.catalogue`): each catalogue
entry picks its logs with one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ddrs.analysis.log_record import LogRecord, display_name
from ddrs.methods import get_method
from ddrs.pipeline.grid import RunGrid
from ddrs.pipeline.layout import Run, run_file
from ddrs.pipeline.training_plan import TrainingPlan
from ddrs.pipeline.validation import ConfigError


class Records:
    """The certification logs of a run grid, and the queries that pick a table's or figure's."""

    def __init__(self, grid: RunGrid, training: TrainingPlan):
        self.grid = grid
        self.training = training

    def _records(
        self, runs: Sequence[Run], file: str, sigma_file: str | None = None, fields=None, **setting
    ) -> list[LogRecord]:
        """The run file ``file`` (a :data:`~ddrs.pipeline.layout.RUN_FILES` key) of each run as a
        record (a given log only if its file is there), with the σ log ``sigma_file`` of the run that
        chose its scales; both names are filled in with ``fields``."""
        fields = fields or {}
        records = [
            LogRecord(
                log=run_file(self.grid.run_dir(run), file, **fields),
                sigma_log=None if sigma_file is None else run_file(self.grid.run_dir(run), sigma_file, **fields),
                dataset=run.dataset,
                method=run.method,
                train_mode=run.mode,
                sigma0=run.sigma,
                common_inputs=self.grid.datasets[run.dataset].get("common_inputs", False),
                replicate=run.replicate,
                **setting,
            )
            for run in runs
        ]
        return [r for r in records if not self.grid.is_logs(r.dataset) or Path(r.log).is_file()]

    def _runs(self, dataset: str, method: str, mode: str, replicate: int = 0) -> list[Run]:
        return [Run(dataset, method, mode, s, replicate) for s in self.grid.sigmas(dataset, method)]

    def fixed_records(self, dataset: str, method: str, replicate: int = 0) -> list[LogRecord]:
        """Fixed-σ certification of fixed-σ-trained models: the Method rows (of training run ``replicate``)."""
        return self._records(self._runs(dataset, method, "fs", replicate), "certify_fixed", certify_mode="fs")

    def ds_records(self, dataset: str, method: str, mode: str, replicate: int = 0) -> list[LogRecord]:
        """Memory-certified data-dependent logs: Method-DS (mode fs) and Method-DS² (mode ds)."""
        return [
            record
            for run in self._runs(dataset, method, mode, replicate)
            for k in self.grid.k_grid(dataset, method, mode)
            for record in self._records([run], "memory_k", "sigma_log", {"k": k}, certify_mode="ds", K=k)
        ]

    def grid_records(self, dataset: str, method: str) -> list[LogRecord]:
        """Appendix B: the grid-search baseline at Algorithm 1's evaluation budget."""
        return [
            record
            for run in self._runs(dataset, method, "fs")
            for n in self.grid.grid_search["n"]
            for record in self._records([run], "memory_grid", "grid_sigma_log", {"n": n}, certify_mode="gds", samples=n)
        ]

    def semi_elastic_records(self, dataset: str, method: str, replicate: int = 0) -> list[LogRecord]:
        """Method-IDRS: the fixed-σ models certified with Súkeník et al.'s semi-elastic σ(x) (config
        ``semi_elastic``; docs/protocol.md, "A soundly certified data-dependent row")."""
        options = self.grid.config.get("semi_elastic", {})
        if not options.get("enabled") or method not in options.get("methods", []) or self.grid.is_logs(dataset):
            return []
        runs = self._runs(dataset, method, "fs", replicate)
        return self._records(runs, "semi_elastic", "semi_elastic_sigma_log", certify_mode="idrs")

    def method_records(self, method: str, replicate: int = 0) -> list[LogRecord]:
        """Everything a method's table (or its Appendix H) reads, over all configured datasets:
        Method, then Method-DS and Method-DS² for each training mode the method has."""
        records = []
        for dataset in self.grid.datasets_of(method):
            if replicate >= self.grid.replicates(dataset, method):
                continue
            records += self.fixed_records(dataset, method, replicate)
            for mode in get_method(method).train_modes:
                records += self.ds_records(dataset, method, mode, replicate)
        return records

    def grid_datasets(self) -> list[str]:
        """The datasets of the Appendix-B comparison (every computed ℓ2 dataset unless the config names some)."""
        if not self.grid.grid_search["enabled"]:
            return []
        chosen = self.grid.grid_search.get("datasets")
        return [
            d
            for d in self.grid.datasets_of(self.grid.grid_search["method"])
            if not self.grid.is_logs(d) and (chosen is None or d in chosen)
        ]

    def appendix_b_records(self) -> list[LogRecord]:
        """Appendix B: fixed σ, the grid search at every n, and Algorithm 1 (Method-DS) at the same
        budget of base-classifier evaluations (2·n·K = budget, not the best K)."""
        datasets = self.grid_datasets()
        if not datasets:
            return []
        method = self.grid.grid_search["method"]
        k = self.grid.equal_budget_k(method)
        records = []
        for dataset in datasets:
            if k not in (grid := self.grid.k_grid(dataset, method, "fs")):
                raise self._budget_off_the_k_grid(dataset, method, k, grid)
            records += self.fixed_records(dataset, method)
            records += self.grid_records(dataset, method)
            records += [r for r in self.ds_records(dataset, method, "fs") if r.K == k]
        return records

    def _budget_off_the_k_grid(self, dataset: str, method: str, k: int, grid: list[int]) -> ConfigError:
        """Appendix B's refusal of a budget Algorithm 1 spends at a K the K grid lacks, leading with
        whichever of the two keys the user set last (:meth:`~ddrs.pipeline.validation.ConfigSources.refusal`)."""
        budget, key = self.grid.grid_search["budget"], self.grid.k_grid_key(dataset, method, "fs")
        grid_key, row = ".".join(key), f"Appendix B would have no {method}-DS row on {dataset}"
        return ConfigError(
            ("grid_search", "budget"),
            f"grid_search.budget {budget}: Algorithm 1 spends it at K = {k} (2·n·K = budget), which {grid_key} "
            f"{grid} lacks: {row}; change grid_search.budget or add {k} to {grid_key}",
            others={
                key: f"{grid_key} {grid}: lacks K = {k}, where Algorithm 1 spends grid_search.budget {budget} "
                f"(2·n·K = budget): {row}; add {k} to {grid_key} or change grid_search.budget"
            },
        )

    def all_records(self) -> list[LogRecord]:
        """Every certification log of the configured experiment grid."""
        records = [record for method in self.grid.methods for record in self.method_records(method)]
        return records + [
            r for d in self.grid_datasets() for r in self.grid_records(d, self.grid.grid_search["method"])
        ]

    def computed_records(self) -> list[LogRecord]:
        """The logs this run computes (Appendix F and the memory summary describe these)."""
        return [r for r in self.all_records() if not self.grid.is_logs(r.dataset)]

    def runs(self) -> list[Run]:
        """Every base classifier the grid trains or imports, in order of first use."""
        studies = [r for d in self.grid.datasets for r in self.ablation_records(d)]
        runs = {
            Run(r.dataset, r.method, r.train_mode, r.sigma0, r.replicate): None
            for r in self.all_records() + self.appendix_b_records() + studies
            if not self.grid.is_logs(r.dataset)
        }
        return list(runs)

    def table_methods(self, table: str) -> list[str]:
        """The configured methods whose rows feed a DDRS-style table (Tables 1–4, …)."""
        methods = [m for m in self.grid.methods if get_method(m).table == table]
        if not methods:
            raise ValueError(f"no configured method feeds table {table!r}")
        return methods

    def table_records(self, table: str, replicate: int = 0) -> list[LogRecord]:
        """A DDRS-style table's logs: its methods' rows and, where configured, their Method-IDRS rows."""
        return [
            record
            for m in self.table_methods(table)
            for record in self.method_records(m, replicate) + self._semi_elastic_rows(m, replicate)
        ]

    def _semi_elastic_rows(self, method: str, replicate: int) -> list[LogRecord]:
        datasets = [d for d in self.grid.datasets_of(method) if replicate < self.grid.replicates(d, method)]
        return [record for d in datasets for record in self.semi_elastic_records(d, method, replicate)]

    def replicated_table_records(self, table: str) -> list[LogRecord]:
        """A DDRS-style table's records over every training run of its models (:meth:`replicated`)."""
        return self.replicated(lambda replicate: self.table_records(table, replicate))

    def replicated_study_records(self, methods: Sequence[str], dataset: str) -> list[LogRecord]:
        """A seed paper's study over every training run of each row's models (:meth:`replicated`)."""
        return self.replicated(lambda replicate: self.study_records(methods, dataset, replicate))

    def replicated(self, records_of) -> list[LogRecord]:
        """``records_of(r)`` for r = 0, 1, … up to the config's largest ``replication.runs``: a row
        whose method is not replicated (:meth:`RunGrid.replicates`) keeps its one run."""
        runs = self.grid.config.get("replication", {}).get("runs", 1)
        return [record for replicate in range(runs) for record in records_of(replicate)]

    def study_records(self, methods: Sequence[str], dataset: str, replicate: int = 0) -> list[LogRecord]:
        """A seed paper's per-σ comparison: fixed-σ certification of each of ``methods`` whose
        method is configured, in that order (Jeong & Shin 2020, Table 2; Sun et al. 2024, Table 2).

        A matched variant (``smoothadv@smoothadv_consistency``: ``ddrs.methods.Method.matches``)
        is the baseline trained with the hyper-parameters the study shares with the other method;
        where it trains exactly as its plain method, its row is the plain model's log under the
        variant's name (:meth:`alike_records`)."""
        return [
            r
            for m in methods
            if get_method(m).name in self.grid.methods and replicate < self.grid.replicates(dataset, m)
            for r in self.alike_records(dataset, m, replicate)
        ]

    def alike_records(self, dataset: str, variant: str, replicate: int = 0) -> list[LogRecord]:
        """Fixed-σ records of a method or variant; at a σ₀ where a variant trains exactly as its
        method (:meth:`~ddrs.pipeline.training_plan.TrainingPlan.trains_alike`), the method's own log under
        the variant's name, so the model is trained once."""
        method = get_method(variant).name
        own = {r.sigma0: r for r in self.fixed_records(dataset, method, replicate)} if variant != method else {}
        return [
            replace(own[record.sigma0], variant=display_name(variant))
            if record.sigma0 in own
            and self.training.trains_alike(
                Run(dataset, variant, "fs", record.sigma0, replicate),
                Run(dataset, method, "fs", record.sigma0, replicate),
            )
            else record
            for record in self.fixed_records(dataset, variant, replicate)
        ]

    def ablation_records(self, dataset: str) -> list[LogRecord]:
        """Sun et al. (2024), Table 3: every ablation variant of each configured method that has
        one (:attr:`ddrs.methods.Method.ablation`), at the config's ``sun2024.ablation_sigmas``; only
        those of ``sun2024.ablation_variants`` where it is given (a cheaper run's rows).

        The variant that trains exactly as its method does (all components on, unless the config
        switches one off) is the method's own model (:meth:`alike_records`).
        """
        study = self.grid.config.get("sun2024", {})
        sigmas, rows = study.get("ablation_sigmas", []), study.get("ablation_variants")
        return [
            record
            for method in self.grid.methods
            for variant in get_method(method).variants()
            if rows is None or variant in rows
            for record in self.alike_records(dataset, variant)
            if record.sigma0 in sigmas
        ]

    def gradient_norm_runs(self, methods: Sequence[str], dataset: str) -> list[Run]:
        """Sun et al. (2024), Table 1: the fixed-σ model at ``sun2024.gradient_norm_sigma`` of each
        of ``methods`` whose method is configured (a matched variant's own model unless it trains
        exactly as its method: the model of :meth:`study_records`' row)."""
        sigma = self.grid.config.get("sun2024", {}).get("gradient_norm_sigma")
        return [
            Run(r.dataset, r.method, "fs", r.sigma0) for r in self.study_records(methods, dataset) if r.sigma0 == sigma
        ]
