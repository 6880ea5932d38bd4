"""The logs and models the figures show (no torch): Figures 3–7 and the σ*ₓ and p̲A figures."""

from __future__ import annotations

from ddrs.analysis.log_record import LogRecord
from ddrs.pipeline.grid import RunGrid
from ddrs.pipeline.layout import Run
from ddrs.pipeline.records import Records


class FigureRecords:
    """Which datasets, models and logs the figures of a run grid show."""

    def __init__(self, grid: RunGrid, records: Records):
        self.grid = grid
        self.records = records

    def datasets(self) -> list[str]:
        """Computed datasets with a full method: the figures need their σ logs and test images."""
        return [
            d
            for d in self.grid.datasets
            if not self.grid.is_logs(d) and any(self.grid.sigmas(d, m) for m in self.grid.full_methods())
        ]

    def showcase(self, dataset: str) -> Run:
        """The model the single-setting figures show: the first full method's fixed-σ model at the
        middle σ₀ (its largest K gives σ*ₓ)."""
        method = next(m for m in self.grid.full_methods() if self.grid.sigmas(dataset, m))
        sigmas = self.grid.sigmas(dataset, method)
        return Run(dataset, method, "fs", sigmas[len(sigmas) // 2])

    def showcase_k(self, dataset: str) -> int:
        """The showcase model's largest K: the σ*ₓ the single-setting figures show."""
        showcase = self.showcase(dataset)
        return self.grid.k_grid(dataset, showcase.method, showcase.mode)[-1]

    def showcase_records(self, dataset: str) -> list[LogRecord]:
        """Method, Method-DS and Method-DS² of every full method at the showcase σ₀ and largest K."""
        sigma, k = self.showcase(dataset).sigma, self.showcase_k(dataset)
        return [
            r
            for m in self.grid.full_methods()
            for r in self.records.method_records(m)
            if r.dataset == dataset and r.sigma0 == sigma and (r.K is None or r.K == k)
        ]

    def method_dataset_records(self, method: str, dataset: str) -> list[LogRecord]:
        """Figures 3–5: one method's rows on one dataset."""
        return [r for r in self.records.method_records(method) if r.dataset == dataset]

    def k_sweep_records(self, method: str, dataset: str) -> list[LogRecord]:
        """Figure 7: Method-DS² at the smallest σ₀, one line per K (the paper's CIFAR-10 panel)."""
        sigma = self.grid.sigmas(dataset, method)[0]
        return [r for r in self.records.ds_records(dataset, method, "ds") if r.sigma0 == sigma]
