"""The run grid of a validated config (no torch): which base classifiers exist, their σ₀ and K
grids, where their files live, what each trains with and what each job asks of the machine.

Rows follow the paper: Method (fixed σ₀ for training and certification), Method-DS (fixed-σ
training, Algorithm 1 + memory certification at every K) and Method-DS² (Algorithm 2 training,
Algorithm 1 + memory certification), per training method of :mod:`ddrs.methods`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ddrs.core.settings import uniform_half_width
from ddrs.data import DATASETS
from ddrs.data.subsample import subsample_indices
from ddrs.methods import METHODS, TRAIN_MODES, get_method, variant_options
from ddrs.pipeline.layout import KGridGroup, Layout, Run, scale_label

#: where each noise's σ grid and radius grid live in a dataset's config
SIGMA_KEY = {"gaussian": "sigmas", "uniform": "uniform_sigmas"}
RADII_KEY = {2: "radii", 1: "l1_radii"}
#: where a dataset's models come from: trained here, imported from published checkpoints (fixed-σ
#: models; DDRS §4, ImageNet), or none at all: its certification logs are given
SOURCES = ("train", "published", "logs")
#: the longest a job asks for unless the config's ``max_job_minutes`` says otherwise: a common limit
#: of SLURM clusters' GPU partitions
MAX_JOB_MINUTES = 24 * 60


def merge_train(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """A ``train`` section with ``override``'s keys over ``base``'s; method sections merge field by field."""
    merged = dict(base)
    for key, value in override.items():
        merged[key] = {**merged.get(key, {}), **value} if key in METHODS else value
    return merged


def _require_in(given, allowed: list, where: str) -> None:
    """Raise ``ValueError`` naming ``where`` and the allowed values unless every item of ``given``
    (a list, or a mapping's keys) is one of ``allowed``."""
    unknown = [item for item in given if item not in allowed]
    if unknown:
        raise ValueError(f"{where}: {unknown} not among the config's {allowed}; a value elsewhere would be ignored")


class RunGrid:
    """The base classifiers of one validated config (``config/schema/config.schema.yaml``)."""

    def __init__(self, config: Mapping[str, Any]):
        self.config = config
        self.layout = Layout(config["results"])
        excluded = set(config.get("exclude_datasets", []))
        self.datasets: Mapping[str, Mapping[str, Any]] = {
            name: spec for name, spec in config["datasets"].items() if name not in excluded
        }
        if not self.datasets:
            raise ValueError(f"exclude_datasets {sorted(excluded)} leaves none of the configured datasets")
        self.methods: list[str] = list(config["methods"])
        #: Appendix B's settings; a logs-only config may leave them out (no grid search)
        self.grid = config.get("grid_search", {"enabled": False})
        self.check_references()

    def check_references(self) -> None:
        """Refuse a key or value that must name what the config defines elsewhere, which the schema
        cannot check and a lookup would silently miss (:mod:`ddrs.pipeline.validation`): σ₀ keys
        of ``train_by_sigma`` and ``checkpoints`` outside the dataset's grid (or spelled otherwise
        than :func:`scale_label`), ``train_by_method`` keys of methods the config does not run,
        ``grid_search.datasets`` not configured, ``sun2024`` σ₀ in no dataset's grid, an empty
        grid-search interval and a grid-search n that does not divide its budget."""
        for dataset, spec in self.config["datasets"].items():
            labels = {noise: [scale_label(s) for s in spec.get(key, [])] for noise, key in SIGMA_KEY.items()}
            every = list(dict.fromkeys(sum(labels.values(), [])))
            _require_in(spec.get("train_by_sigma", {}), every, f"datasets.{dataset}.train_by_sigma")
            _require_in(spec.get("train_by_method", {}), self.methods, f"datasets.{dataset}.train_by_method")
            for method, paths in spec.get("checkpoints", {}).items():
                noise = get_method(method).noise
                _require_in(paths, labels[noise], f"datasets.{dataset}.checkpoints.{method}")
        _require_in(self.grid.get("datasets") or [], list(self.config["datasets"]), "grid_search.datasets")
        if self.grid["enabled"]:
            if not self.grid["low"] < self.grid["high"]:
                raise ValueError(f"grid_search: low {self.grid['low']} must be below high {self.grid['high']}")
            budget = self.grid["budget"]
            for n in self.grid["n"]:
                if budget % n:
                    raise ValueError(
                        f"grid_search: n = {n} does not divide the budget {budget}: its grid would spend "
                        f"{budget // n * n} evaluations, not Algorithm 1's (Appendix B compares at equal budget)"
                    )
        studies = self.config.get("sun2024", {})
        sigmas = {s for spec in self.config["datasets"].values() for s in spec.get("sigmas", [])}
        for key in ("ablation_sigmas", "gradient_norm_sigma"):
            given = studies.get(key, [])
            _require_in(given if isinstance(given, list) else [given], sorted(sigmas), f"sun2024.{key}")

    def is_published(self, dataset: str) -> bool:
        """Fixed-σ models are imported from published checkpoints (DDRS §4: ImageNet)."""
        return self.datasets[dataset]["source"] == "published"

    def is_logs(self, dataset: str) -> bool:
        """The dataset's certification logs are given (e.g. published ones), not computed."""
        return self.datasets[dataset]["source"] == "logs"

    def k_grid(self, dataset: str, method: str, mode: str) -> list[int]:
        """Algorithm 1's snapshot steps K of one (dataset, method, training mode): the dataset's
        grid, or its ``k_by_method`` entry (Appendix H: Cohen-DS² on CIFAR-10 runs to K = 1500)."""
        spec = self.datasets[dataset]
        grid = spec.get("k_by_method", {}).get(method, {}).get(mode)
        return sorted(grid or spec.get("k", self._default_k()))

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
        k, rest = divmod(self.grid["budget"], 2 * n)
        if rest:
            raise ValueError(f"grid_search.budget {self.grid['budget']} is not 2·n·K for Algorithm 1's n = {n}")
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

    def datasets_of(self, method: str) -> list[str]:
        """The datasets with a σ grid for the method's noise."""
        key = SIGMA_KEY[get_method(method).noise]
        return [d for d, spec in self.datasets.items() if spec.get(key)]

    def full_methods(self) -> list[str]:
        """Configured methods with all three rows (Method, -DS, -DS²): Appendix H and the figures."""
        return [m for m in self.methods if get_method(m).train_modes == TRAIN_MODES]

    def radii(self, norm: int) -> dict[str, list[float]]:
        """The radius grid of each configured dataset for ℓ2 (``radii``) or ℓ1 (``l1_radii``) tables."""
        key = RADII_KEY[norm]
        return {d: spec[key] for d, spec in self.datasets.items() if key in spec}

    def uniform_convention(self, dataset: str) -> str:
        """How a dataset's ``uniform_sigmas`` are read: the dataset's own key, else ``uniform.convention``."""
        convention = self.datasets[dataset].get("uniform_convention", self.config.get("uniform", {}).get("convention"))
        if convention is None:
            raise ValueError(
                f"{dataset}: uniform_sigmas need datasets.{dataset}.uniform_convention or uniform.convention"
            )
        return convention

    def smoothing_scale(self, dataset: str, method: str, sigma: float | str) -> float:
        """The scale handed to the library: σ for Gaussian noise, the half-width λ for uniform
        noise (λ = σ√3 under Yang et al.'s ``yang_std`` convention, DDRS Table 4)."""
        if get_method(method).noise == "uniform":
            return uniform_half_width(sigma, self.uniform_convention(dataset))
        return float(sigma)

    def run_dir(self, run: Run) -> str:
        """Where a base classifier's files are: the results tree, or the given logs' directory."""
        if self.is_logs(run.dataset):
            _, method, mode, sigma = run.wildcards
            return f"{self.datasets[run.dataset]['logs']}/{method}/{mode}/sigma{sigma}"
        return self.layout.run_dir(*run.wildcards)

    def runtime(self, stage: str, dataset: str, passes: int = 1) -> int:
        """Minutes a job of ``stage`` asks for on ``dataset`` (the SLURM profile's ``--time``), at
        most ``max_job_minutes``: a longer job resumes from its partial files over the profile's
        retries.

        ``train``: the dataset registry's ``train_minutes``. ``certify``: ``passes`` passes of
        CERTIFY over the test subset at n0 + n draws per input, at twice the registry's
        ``certify_seconds`` (the DDRS paper's GPU, Appendix F) and at least an hour.
        """
        info = DATASETS[dataset]
        if stage == "train":
            minutes = info.train_minutes
        else:
            spec = self.datasets[dataset]
            inputs = len(subsample_indices(info.test_size, spec.get("test_skip", 1), spec.get("test_max")))
            draws = self.config["certify"]["n0"] + self.config["certify"]["n"]
            minutes = max(60, math.ceil(passes * 2 * inputs * draws / 100_000 * info.certify_seconds / 60))
        return min(minutes, self.config.get("max_job_minutes", MAX_JOB_MINUTES))

    def trains_alike(self, a: Run, b: Run) -> bool:
        """Whether two runs train the same model: equal options, method hyper-parameters resolved."""

        def resolved(run: Run) -> dict[str, Any]:
            options = self.train_options(run)
            method = get_method(run.method)
            return {**options, method.name: method.make_params(options.get(method.name))}

        return resolved(a) == resolved(b)

    def init_run(self, run: Run) -> Run | None:
        """The model a run fine-tunes (``ddrs train --init``), or None when it trains from scratch.

        DS² fine-tunes the fixed-σ model of its method at the same σ₀ on a published dataset (DDRS
        §4.1, §4.2: the published ImageNet models) and where the dataset's ``ds_fine_tune`` names the
        method (§4.2: "We fine tune the SMOOTHADV trained models (either the retrained CIFAR10 models
        …) using Algorithm 2").
        """
        if run.mode != "ds":
            return None
        method = get_method(run.method).name
        if self.is_published(run.dataset) or method in self.datasets[run.dataset].get("ds_fine_tune", {}):
            return Run(run.dataset, run.method, "fs", run.sigma)
        return None

    def train_options(self, run: Run) -> dict[str, Any]:
        """The ``ddrs train --config`` mapping of one base classifier (keys: ``TrainConfig`` fields).

        The config's ``train`` section, overridden by the dataset's own ``train`` section, its
        ``train_by_method`` entry for the run's method (e.g. MACER's own schedule beside the seed
        papers' common one), its ``train_by_sigma`` entry for the run's σ₀ and, for DS², its
        ``ds_fine_tune`` entry for the run's method (the fine-tuning of :meth:`init_run`; method
        sections merged field by field), with the run's data, model, method, mode and scale (λ for
        uniform noise, converted here once: :meth:`smoothing_scale`); of the method sections only
        the run's own, a variant's resolved by
        :func:`ddrs.methods.variant_options` (an ablation's switches; a matched variant's fields
        shared with the other method, e.g. ``smoothadv@smoothadv_consistency``'s attack). Algorithm 2 runs
        Algorithm 1 as certification does: ``optimize_sigma``'s objective, clamp and, where
        ``n_by_method`` names the method, its n. A GPU job (``gpus_per_job`` > 0, device not the
        CPU) loads with ``threads_per_job`` − 1 DataLoader workers unless ``num_workers`` is given.
        """
        spec = self.datasets[run.dataset]
        method = get_method(run.method).name
        train = merge_train(self.config["train"], spec.get("train", {}))
        train = merge_train(train, spec.get("train_by_method", {}).get(method, {}))
        train = merge_train(train, spec.get("train_by_sigma", {}).get(scale_label(run.sigma), {}))
        if run.mode == "ds":
            train = merge_train(train, spec.get("ds_fine_tune", {}).get(method, {}))
        options = {key: value for key, value in train.items() if key not in METHODS}
        if method in self.config["optimize_sigma"].get("n_by_method", {}):
            options["n"] = self.algorithm1_n(method)
        own = variant_options(run.method, train)
        if own:
            options[method] = own
        options.update(
            dataset=run.dataset,
            arch=self.datasets[run.dataset]["arch"],
            method=method,
            train_mode=run.mode,
            sigma=self.smoothing_scale(run.dataset, run.method, run.sigma),
            seed=self.config["seed"],
            device=self.config["device"],
            data_root=self.config["data_root"],
            sigma_objective=self.config["optimize_sigma"]["objective"],
        )
        if "clamp" in self.config["optimize_sigma"]:
            options["sigma_clamp"] = self.config["optimize_sigma"]["clamp"]
        if "num_workers" not in options and self.config["gpus_per_job"] > 0 and self.config["device"] != "cpu":
            # a GPU job: the job's other threads load and augment batches so the GPU never waits
            options["num_workers"] = max(0, self.config["threads_per_job"] - 1)
        return options
