"""The certificate audit's plan (no torch; issue 69): which certification logs are attacked, the document of
each audit (``ddrs audit --config -``, :mod:`ddrs.jobs.audit`), and what the soundness ledger and the
order-dependence table ask of the experiment (the questions of their catalogue entries).

Audited are table 1's rows on every computed dataset, run 0: Cohen et al.'s fixed-σ certificates (the control)
and Cohen-DS's and Cohen-DS²'s at every σ₀, each data-dependent log at the largest K of its model's grid (σ*ₓ
travels farthest there). An audit's document holds what decides its rows and nothing else: the inputs' dataset
and seed, PREDICT's α (the log's), the classifier (the fixed σ, or the σ search's settings at that K), the
threads its σ searches sum on, and the audit's sizes (``audit``, :class:`~ddrs.core.audit_settings.AuditSettings`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from ddrs.analysis.log_record import LogRecord
from ddrs.core.audit_settings import AuditSettings
from ddrs.core.settings import settings_from
from ddrs.data import get_info
from ddrs.pipeline.job_plan import JobPlan
from ddrs.pipeline.layout import Run, run_file
from ddrs.pipeline.target import Experiment, Target, Wildcards

#: the method whose rows (table 1: Cohen, Cohen-DS, Cohen-DS²) the audit attacks
AUDIT_METHOD = "cohen"


@dataclass(frozen=True)
class AuditedLog:
    """One audited log: the table's record of it, its run, the certification log attacked, its Algorithm 3
    log (data-dependent logs), Algorithm 1's K (None for fixed σ) and where the audit goes."""

    record: LogRecord
    run: Run
    log: str
    memory_log: str | None
    k: int | None
    audit: str


class AuditPlan:
    """The audits of one experiment (:class:`ddrs.pipeline.experiment.Experiment`) and their documents."""

    def __init__(self, exp: Experiment):
        self.exp = exp
        self.section = exp.config.get("audit", {})
        self.jobs = JobPlan(exp.grid)

    def datasets(self) -> list[str]:
        """The computed datasets with Cohen's models, where the config enables the audit."""
        grid = self.exp.grid
        if not self.section.get("enabled", False) or AUDIT_METHOD not in grid.methods:
            return []
        return [d for d in grid.datasets_of(AUDIT_METHOD) if not grid.is_logs(d)]

    def audited(self, dataset: str) -> list[AuditedLog]:
        """Cohen's fixed-σ logs, then Cohen-DS's and Cohen-DS²'s at the largest K, by σ₀."""
        records, grid = self.exp.records, self.exp.grid
        logs = [self._audited(record, None) for record in records.fixed_records(dataset, AUDIT_METHOD)]
        for mode in ("fs", "ds"):
            k = grid.k_grid(dataset, AUDIT_METHOD, mode)[-1]
            ds = [r for r in records.ds_records(dataset, AUDIT_METHOD, mode) if r.K == k]
            logs += [self._audited(record, k) for record in ds]
        return logs

    def _audited(self, record: LogRecord, k: int | None) -> AuditedLog:
        run = Run(record.dataset, record.method, record.train_mode, record.sigma0)
        directory = self.exp.grid.run_dir(run)
        log = run_file(directory, "certify_fixed") if k is None else run_file(directory, "certify_k", k=k)
        memory = None if k is None else run_file(directory, "memory_k", k=k)
        audit = self.exp.layout.audit(*run.wildcards, "fixed" if k is None else f"K{k}")
        return AuditedLog(record=record, run=run, log=log, memory_log=memory, k=k, audit=audit)

    def settings(self) -> AuditSettings:
        """The audit's sizes, the config's ``audit`` section by field name."""
        return settings_from(AuditSettings, self.section)

    def document(self, run: Run, k: int | None = None) -> dict[str, Any]:
        """The document of the audit of ``run``'s fixed-σ log (``k`` None) or of its log at Algorithm 1's ``k``."""
        inputs = self.jobs.inputs(run)
        config = self.exp.config
        document = {
            "inputs": {key: inputs[key] for key in ("dataset", "data_root", "seed", "device")},
            "alpha": config["certify"]["alpha"],
            "precision": config["precision"],
            "threads": config.get("threads_per_job", 1),
            "audit": asdict(self.settings()),
        }
        if k is None:
            return {**document, "sigma": self.jobs.sigma(run)}
        search = replace(self.jobs.algorithm1_settings(run), steps=(int(k),))
        return {**document, "algorithm1": search.resume_settings()}


# --- the catalogue's questions (ddrs.pipeline.catalogue): the soundness ledger and the order dependence ---


def audited_datasets(exp: Experiment, target: Target) -> list[Wildcards]:
    return [{"dataset": d} for d in AuditPlan(exp).datasets()]


def audited_records(exp: Experiment, target: Target, dataset: str) -> list[LogRecord]:
    """The table's records of the audited logs, in the ledger's order."""
    return [audited.record for audited in AuditPlan(exp).audited(dataset)]


def ledger_files(exp: Experiment, target: Target, dataset: str) -> dict[str, Any]:
    """The audit logs, one per record."""
    return {"audits": [audited.audit for audited in AuditPlan(exp).audited(dataset)]}


def ledger_params(exp: Experiment, target: Target, dataset: str) -> dict[str, Any]:
    """The intervals' level, the certification's α (a sound certificate's bound on violations is 2α) and the
    input's dimension (Súkeník et al.'s allowed semi-elasticity depends on it)."""
    dim = math.prod(get_info(dataset).input_shape)
    return {"alpha": exp.statistics.alpha, "certify_alpha": exp.config["certify"]["alpha"], "dim": dim}


def order_records(exp: Experiment, target: Target, dataset: str) -> list[LogRecord]:
    """The audited data-dependent logs (their Algorithm 3 logs)."""
    return [audited.record for audited in AuditPlan(exp).audited(dataset) if audited.k is not None]


def order_files(exp: Experiment, target: Target, dataset: str) -> dict[str, Any]:
    """The certification logs before Algorithm 3, which the orders run through it anew."""
    return {"logs": [audited.log for audited in AuditPlan(exp).audited(dataset) if audited.k is not None]}


def order_params(exp: Experiment, target: Target, dataset: str) -> dict[str, Any]:
    """The test split (dataset, root, seed: the inputs' points) and the seeded orders."""
    config = exp.config
    orders = AuditPlan(exp).section.get("orders", 5)
    return {"dataset": dataset, "data_root": config["data_root"], "seed": config["seed"], "orders": orders}
