"""The run grid of a validated config (no torch): which base classifiers exist, their σ₀ and K
grids, their smoothing scales and where their files live.

Rows follow the paper: Method (fixed σ₀ for training and certification), Method-DS (fixed-σ
training, Algorithm 1 + memory certification at every K) and Method-DS² (Algorithm 2 training,
Algorithm 1 + memory certification), per training method of :mod:`ddrs.methods`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddrs.core.settings import noise_sigma
from ddrs.methods import TRAIN_MODES, get_method
from ddrs.pipeline.layout import KGridGroup, Layout, Run, scale_label

#: where each noise's σ grid and radius grid live in a dataset's config
SIGMA_KEY = {"gaussian": "sigmas", "uniform": "uniform_sigmas"}
RADII_KEY = {2: "radii", 1: "l1_radii"}
#: where a dataset's models come from: trained here, imported from published checkpoints (fixed-σ
#: models; DDRS §4, ImageNet), or none at all: its certification logs are given
SOURCES = ("train", "published", "logs")


class RunGrid:
    """The base classifiers of one validated config (``config/schema/config.schema.yaml``)."""

    def __init__(self, config: Mapping[str, Any]):
        self.config = config
        self.layout = Layout(config["results"])
        excluded = set(config.get("exclude_datasets", []))
        # a config of published logs only (``published_logs``) trains and certifies nothing: no datasets
        configured = config.get("datasets") or {}
        self.datasets: Mapping[str, Mapping[str, Any]] = {
            name: spec for name, spec in configured.items() if name not in excluded
        }
        if configured and not self.datasets:
            raise ValueError(f"exclude_datasets {sorted(excluded)} leaves none of the configured datasets")
        self.methods: list[str] = list(config.get("methods") or [])
        #: Appendix B's settings; a logs-only config may leave them out (no grid search)
        self.grid_search = config.get("grid_search", {"enabled": False})

    def is_published(self, dataset: str) -> bool:
        """Fixed-σ models are imported from published checkpoints (DDRS §4: ImageNet)."""
        return self.datasets[dataset]["source"] == "published"

    def is_logs(self, dataset: str) -> bool:
        """The dataset's certification logs are given (e.g. published ones), not computed."""
        return self.datasets[dataset]["source"] == "logs"

    def k_grid(self, dataset: str, method: str, mode: str) -> list[int]:
        """Algorithm 1's snapshot steps K of one (dataset, method, training mode): the dataset's
        grid, or its ``k_by_method`` entry (Appendix H: Cohen-DS² on CIFAR-10 runs to K = 1500)."""
        grid: Any = self.config
        for part in self.k_grid_key(dataset, method, mode):
            grid = grid.get(part, {})
        return sorted(grid or [])

    def k_grid_key(self, dataset: str, method: str, mode: str) -> tuple[str, ...]:
        """The config key whose K grid :meth:`k_grid` reads: the dataset's ``k_by_method`` entry,
        else its ``k``, else ``optimize_sigma.k``."""
        spec = self.datasets[dataset]
        if spec.get("k_by_method", {}).get(method, {}).get(mode):
            return ("datasets", dataset, "k_by_method", method, mode)
        return ("datasets", dataset, "k") if "k" in spec else ("optimize_sigma", "k")

    def _default_k(self) -> list[int]:
        """``optimize_sigma.k``; a logs-only config without it has only the K grids its datasets give."""
        return self.config.get("optimize_sigma", {}).get("k", [])

    def k_grid_groups(self) -> list[KGridGroup]:
        """One :class:`KGridGroup` per distinct K grid: each dataset's own, and its ``k_by_method`` entries."""
        groups = []
        for dataset, spec in self.datasets.items():
            if self.is_logs(dataset):
                continue
            own = spec.get("k_by_method", {})
            for method, grids in own.items():
                for mode, grid in grids.items():
                    groups.append(KGridGroup(f"{dataset}_{method}_{mode}", tuple(sorted(grid)), dataset, mode, method))
            others = [
                "".join(f"(?<!/{method}/)" for method in own if mode in own[method]) + mode for mode in TRAIN_MODES
            ]
            default = spec.get("k", self._default_k())
            groups.append(KGridGroup(dataset, tuple(sorted(default)), dataset, "|".join(others)))
        return groups

    def algorithm1_n(self, method: str) -> int:
        """Noise draws per Algorithm 1 step for a method's models, in certification and in
        Algorithm 2 training (DDRS §4: n = 1; §4.3: n = 8 for MACER)."""
        options = self.config["optimize_sigma"]
        return options.get("n_by_method", {}).get(method, options["n"])

    def equal_budget_k(self, method: str) -> int:
        """Appendix B: the K at which Algorithm 1 spends the grid search's budget, 2·n·K = budget."""
        n = self.algorithm1_n(method)
        k, rest = divmod(self.grid_search["budget"], 2 * n)
        if rest:
            raise ValueError(f"grid_search.budget {self.grid_search['budget']} is not 2·n·K for Algorithm 1's n = {n}")
        return k

    def sigmas(self, dataset: str, method: str) -> list[float]:
        """The σ₀ grid of a (dataset, method): the grid of the method's noise; for a published
        dataset only the σ₀ it names a checkpoint for."""
        spec = self.datasets[dataset]
        sigmas = list(spec.get(SIGMA_KEY[get_method(method).noise], []))
        if self.is_published(dataset):
            named = spec.get("checkpoints", {}).get(method, {})
            return [s for s in sigmas if scale_label(s) in named]
        return sigmas

    def published_checkpoint(self, run: Run) -> str:
        """The file of the published checkpoint a run of a published dataset imports (its config path
        ``datasets.<d>.checkpoints.<method>."<σ₀>"``, keyed by σ₀ as paths spell it)."""
        return self.datasets[run.dataset]["checkpoints"][run.method][scale_label(run.sigma)]

    def replicates(self, dataset: str, method: str) -> int:
        """Training runs of a (dataset, method)'s models: ``replication.runs`` where ``replication.methods``
        names the method (a variant replicates with its method) and the dataset is trained here, else 1."""
        replication = self.config.get("replication", {})
        if get_method(method).name in replication.get("methods", []) and self.datasets[dataset]["source"] == "train":
            return replication.get("runs", 1)
        return 1

    def datasets_of(self, method: str) -> list[str]:
        """The datasets with a σ grid for the method's noise."""
        key = SIGMA_KEY[get_method(method).noise]
        return [d for d, spec in self.datasets.items() if spec.get(key)]

    def full_methods(self) -> list[str]:
        """Configured methods with all three rows (Method, -DS, -DS²): Appendix H and the figures."""
        return [m for m in self.methods if get_method(m).train_modes == TRAIN_MODES]

    def radii(self, norm: int) -> dict[str, list[float]]:
        """The radius grid of each configured dataset for ℓ2 (``radii``) or ℓ1 (``l1_radii``) tables;
        a dataset that gives none has the paper's grid (:func:`ddrs.analysis.metrics.paper_radii`)."""
        from ddrs.analysis.metrics import paper_radii

        key = RADII_KEY[norm]
        return {d: list(spec.get(key) or paper_radii(d, norm)) for d, spec in self.datasets.items()}

    def uniform_convention(self, dataset: str) -> str:
        """How a dataset's ``uniform_sigmas`` are read: the dataset's own key, else ``uniform.convention``."""
        convention = self.datasets[dataset].get("uniform_convention", self.config.get("uniform", {}).get("convention"))
        if convention is None:
            raise ValueError(
                f"{dataset}: uniform_sigmas need datasets.{dataset}.uniform_convention or uniform.convention"
            )
        return convention

    def noise_sigma(self, dataset: str, method: str, sigma: float | str) -> float:
        """The σ handed to the library (:func:`ddrs.core.settings.noise_sigma`): σ for Gaussian
        noise, the half-width λ for uniform noise (λ = σ√3 under Yang et al.'s ``yang_std``
        convention, DDRS Table 4)."""
        noise = get_method(method).noise
        convention = self.uniform_convention(dataset) if noise == "uniform" else "half_width"
        return noise_sigma(noise, sigma, convention)

    def run_dir(self, run: Run) -> str:
        """Where a base classifier's files are: the results tree, or the given logs' directory."""
        if self.is_logs(run.dataset):
            _, method, mode, sigma, replicate = run.wildcards
            return f"{self.datasets[run.dataset]['logs']}/{method}/{mode}/sigma{sigma}{replicate}"
        return self.layout.run_dir(*run.wildcards)
