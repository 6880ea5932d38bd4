"""The experiment design as a pure function of the validated config (no torch, no Snakemake).

Which base classifiers are trained, which certification and memory logs exist, where every file
lives, and which logs make up each table and figure of the DDRS paper (§4, Appendices B, F, H).
The workflow (``rules/*.smk``) asks an :class:`Experiment` for its targets and inputs and only
turns them into command-line flags; the table and figure scripts receive its
:class:`~ddrs.analysis.records.LogRecord` lists. Unit tests pin the design here
(``tests/test_experiments.py``); the DAG tests only check the wiring.

Rows follow the paper: Method (fixed σ₀ for training and certification), Method-DS (fixed-σ
training, Algorithm 1 + memory certification at every K) and Method-DS² (Algorithm 2 training,
Algorithm 1 + memory certification), per training method of :mod:`ddrs.methods`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ddrs.analysis.records import LogRecord, display_name
from ddrs.analysis.reference import PAPER_TABLES
from ddrs.methods import METHODS, TRAIN_MODES, get_method, variant_params
from ddrs.settings import uniform_half_width

#: where each noise's σ grid and radius grid live in a dataset's config
SIGMA_KEY = {"gaussian": "sigmas", "uniform": "uniform_sigmas"}
RADII_KEY = {2: "radii", 1: "l1_radii"}


#: Jeong & Shin (2020), Table 2: per σ, Gaussian, + Consistency, SmoothAdv, + Consistency,
#: Stability training and MACER (the configured ones)
CONSISTENCY_STUDY = ("cohen", "consistency", "smoothadv", "smoothadv_consistency", "stability", "macer")
#: the training methods of the DDRS paper (§4.1–4.4); the studies below add the others
DDRS_METHODS = ("cohen", "smoothadv", "macer", "uniform")
#: Sun et al. (2024), Tables 1 and 2: Gaussian, MACER, SmoothAdv, Consistency and ACR-focused training
ACR_STUDY = ("cohen", "macer", "smoothadv", "consistency", "easy_focus")


def scale_label(value: float | str) -> str:
    """How a scale is spelled in paths and wildcards: 0.12, 0.25, 1."""
    return f"{float(value):g}"


def merge_train(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """A ``train`` section with ``override``'s keys over ``base``'s; method sections merge field by field."""
    merged = dict(base)
    for key, value in override.items():
        merged[key] = {**merged.get(key, {}), **value} if key in METHODS else value
    return merged


@dataclass(frozen=True)
class Layout:
    """Every path of the results tree, spelled once.

    Each method takes its fields as strings, so passing Snakemake wildcards (``"{dataset}"``)
    gives the rules' path patterns and passing values gives the files.
    """

    results: str

    def run_dir(self, dataset: str, method: str, mode: str, sigma: str) -> str:
        """One base classifier's directory: model, training log, σ logs, certification logs."""
        return f"{self.results}/{dataset}/{method}/{mode}/sigma{sigma}"

    def model(self, dataset: str, method: str, mode: str, sigma: str) -> str:
        """The base classifier's checkpoint."""
        return f"{self.run_dir(dataset, method, mode, sigma)}/model.pt"

    @staticmethod
    def job(dataset: str, method: str, mode: str, sigma: str) -> str:
        """One base classifier's name in log and benchmark file names."""
        return f"{dataset}_{method}_{mode}_sigma{sigma}"

    def benchmark(self, stage: str, name: str) -> str:
        """Snakemake's ``benchmark:`` file of a job."""
        return f"{self.results}/benchmarks/{stage}/{name}.tsv"

    def log(self, stage: str, name: str) -> str:
        """A job's standard error."""
        return f"{self.results}/logs/{stage}/{name}.log"

    def table(self, name: str, ext: str = "csv") -> str:
        """A table (CSV, with ``md`` and ``tex`` renderings beside it)."""
        return f"{self.results}/tables/{name}.{ext}"

    def figure(self, name: str, ext: str = "png") -> str:
        """A figure (PNG, with a ``pdf`` beside it)."""
        return f"{self.results}/figures/{name}.{ext}"

    def data_marker(self, dataset: str) -> str:
        """Written by ``prepare_data`` once the dataset is downloaded and verified."""
        return f"{self.results}/data/{dataset}.json"


@dataclass(frozen=True)
class Run:
    """One base classifier: dataset, training method, training mode (fs / ds) and σ₀."""

    dataset: str
    method: str
    mode: str
    sigma: float

    @property
    def wildcards(self) -> tuple[str, str, str, str]:
        return self.dataset, self.method, self.mode, scale_label(self.sigma)


@dataclass(frozen=True)
class KGridGroup:
    """The models that share one K grid, as wildcard constraints: one data-dependent certification
    rule each, since a Snakemake rule's outputs (one log per K) are fixed for the rule.

    ``mode`` excludes the methods that have a grid of their own with fixed-width lookbehinds on the
    path (``fs|(?<!/cohen/)ds``: any fs model, and ds models except Cohen's), so every model
    matches exactly one group.
    """

    name: str
    ks: tuple[int, ...]
    dataset: str
    mode: str
    method: str | None = None

    def pattern(self, layout: Layout) -> str:
        """The regex of these models' directories under ``layout`` (what Snakemake matches)."""
        return (
            layout.run_dir(f"(?:{self.dataset})", f"(?:{self.method or '[^/]+'})", f"(?:{self.mode})", "[0-9.]+")
            + "/certify_K[0-9]+\\.tsv"
        )


class Experiment:
    """The experiment grid of one validated config (``config/schema/config.schema.yaml``)."""

    def __init__(self, config: Mapping[str, Any]):
        self.config = config
        self.layout = Layout(config["results"])
        self.datasets: Mapping[str, Mapping[str, Any]] = config["datasets"]
        self.methods: list[str] = list(config["methods"])
        self.grid = config["grid_search"]

    # --- grids -------------------------------------------------------------------------------

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
        return sorted(grid or spec.get("k", self.config["optimize_sigma"]["k"]))

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
            default = spec.get("k", self.config["optimize_sigma"]["k"])
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

    def radii(self, norm: int) -> dict[str, list[float]]:
        """The radius grid of each configured dataset for ℓ2 (``radii``) or ℓ1 (``l1_radii``) tables."""
        key = RADII_KEY[norm]
        return {d: spec[key] for d, spec in self.datasets.items() if key in spec}

    def uniform_convention(self, dataset: str) -> str:
        """How a dataset's ``uniform_sigmas`` are read: the dataset's own key, else ``uniform.convention``."""
        return self.datasets[dataset].get("uniform_convention", self.config["uniform"]["convention"])

    def smoothing_scale(self, dataset: str, method: str, sigma: float | str) -> float:
        """The scale handed to the library: σ for Gaussian noise, the half-width λ for uniform
        noise (λ = σ√3 under Yang et al.'s ``yang_std`` convention, DDRS Table 4)."""
        if get_method(method).noise == "uniform":
            return uniform_half_width(sigma, self.uniform_convention(dataset))
        return float(sigma)

    # --- certification logs ------------------------------------------------------------------

    def run_dir(self, run: Run) -> str:
        """Where a base classifier's files are: the results tree, or the given logs' directory."""
        if self.is_logs(run.dataset):
            _, method, mode, sigma = run.wildcards
            return f"{self.datasets[run.dataset]['logs']}/{method}/{mode}/sigma{sigma}"
        return self.layout.run_dir(*run.wildcards)

    def _exists(self, record: LogRecord) -> bool:
        """A computed log always will; a given log only if its file is there."""
        return not self.is_logs(record.dataset) or Path(record.log).is_file()

    def fixed_records(self, dataset: str, method: str) -> list[LogRecord]:
        """Fixed-σ certification of fixed-σ-trained models: the Method rows."""
        records = [
            LogRecord(
                log=f"{self.run_dir(Run(dataset, method, 'fs', s))}/certify_fixed.tsv",
                dataset=dataset,
                method=method,
                train_mode="fs",
                certify_mode="fs",
                sigma0=s,
            )
            for s in self.sigmas(dataset, method)
        ]
        return [r for r in records if self._exists(r)]

    def ds_records(self, dataset: str, method: str, mode: str) -> list[LogRecord]:
        """Memory-certified data-dependent logs: Method-DS (mode fs) and Method-DS² (mode ds)."""
        records = []
        for s in self.sigmas(dataset, method):
            run = Run(dataset, method, mode, s)
            job = self.layout.job(*run.wildcards)
            for k in self.k_grid(dataset, method, mode):
                records.append(
                    LogRecord(
                        log=f"{self.run_dir(run)}/memory_K{k}.tsv",
                        dataset=dataset,
                        method=method,
                        train_mode=mode,
                        certify_mode="ds",
                        sigma0=s,
                        K=k,
                        benchmarks=(self.layout.benchmark("optimize_sigma", job),),
                    )
                )
        return [r for r in records if self._exists(r)]

    def grid_records(self, dataset: str, method: str) -> list[LogRecord]:
        """Appendix B: the grid-search baseline at Algorithm 1's evaluation budget."""
        records = [
            LogRecord(
                log=f"{self.run_dir(Run(dataset, method, 'fs', s))}/memory_grid_n{n}.tsv",
                dataset=dataset,
                method=method,
                train_mode="fs",
                certify_mode="gds",
                sigma0=s,
                samples=n,
            )
            for s in self.sigmas(dataset, method)
            for n in self.grid["n"]
        ]
        return [r for r in records if self._exists(r)]

    def method_records(self, method: str) -> list[LogRecord]:
        """Everything a method's table (or its Appendix H) reads, over all configured datasets:
        Method, then Method-DS and Method-DS² for each training mode the method has."""
        records = []
        for dataset in self.datasets_of(method):
            records += self.fixed_records(dataset, method)
            for mode in get_method(method).train_modes:
                records += self.ds_records(dataset, method, mode)
        return records

    def grid_datasets(self) -> list[str]:
        """The datasets of the Appendix-B comparison (every computed ℓ2 dataset unless the config names some)."""
        if not self.grid["enabled"]:
            return []
        chosen = self.grid.get("datasets")
        return [
            d for d in self.datasets_of(self.grid["method"]) if not self.is_logs(d) and (chosen is None or d in chosen)
        ]

    def appendix_b_records(self) -> list[LogRecord]:
        """Appendix B: fixed σ, the grid search at every n, and Algorithm 1 (Method-DS) at the same
        budget of base-classifier evaluations (2·n·K = budget, not the best K)."""
        method = self.grid["method"]
        k = self.equal_budget_k(method)
        records = []
        for dataset in self.grid_datasets():
            records += self.fixed_records(dataset, method)
            records += self.grid_records(dataset, method)
            records += [r for r in self.ds_records(dataset, method, "fs") if r.K == k]
        return records

    def all_records(self) -> list[LogRecord]:
        """Every certification log of the configured experiment grid."""
        records = [record for method in self.methods for record in self.method_records(method)]
        return records + [r for d in self.grid_datasets() for r in self.grid_records(d, self.grid["method"])]

    def runs(self) -> list[Run]:
        """Every base classifier the grid trains or imports, in order of first use."""
        studies = [r for d in self.datasets for r in self.ablation_records(d)]
        runs = {
            Run(r.dataset, r.method, r.train_mode, r.sigma0): None
            for r in self.all_records() + self.appendix_b_records() + studies
            if not self.is_logs(r.dataset)
        }
        return list(runs)

    # --- tables ------------------------------------------------------------------------------

    def full_methods(self) -> list[str]:
        """Configured methods with all three rows (Method, -DS, -DS²): Appendix H and the figures."""
        return [m for m in self.methods if get_method(m).train_modes == TRAIN_MODES]

    def table_methods(self, table: str) -> list[str]:
        """The configured methods whose rows feed a DDRS-style table (Tables 1–4, …)."""
        methods = [m for m in self.methods if get_method(m).table == table]
        if not methods:
            raise ValueError(f"no configured method feeds table {table!r}")
        return methods

    def table_records(self, table: str) -> list[LogRecord]:
        return [r for m in self.table_methods(table) for r in self.method_records(m)]

    def best_tables(self) -> list[str]:
        """The DDRS-style tables of the configured methods that have at least one log."""
        return list(dict.fromkeys(get_method(m).table for m in self.methods if self.method_records(m)))

    def appendix_h_tables(self) -> list[str]:
        return [f"appendix_h_{m}" for m in self.full_methods() if self.method_records(m)]

    def computed_records(self) -> list[LogRecord]:
        """The logs this run computes (Appendix F and the memory summary describe these)."""
        return [r for r in self.all_records() if not self.is_logs(r.dataset)]

    def tables(self) -> list[str]:
        """Every table target."""
        names = self.best_tables() + self.appendix_h_tables()
        if self.grid_datasets():
            names.append("appendix_b")
        names += self.study_tables()
        if self.computed_records():
            names += ["appendix_f", "memory_summary"]
        if self.config.get("compare_with_paper"):
            names.append("paper_comparison")
        return [self.layout.table(name) for name in names]

    def comparison_tables(self) -> list[str]:
        """Our tables the DDRS paper also prints (:mod:`ddrs.analysis.reference`): its comparison's inputs."""
        return [name for name in self.best_tables() + self.appendix_h_tables() if name in PAPER_TABLES]

    # --- the seed papers' studies: Jeong & Shin (2020), Sun et al. (2024) ----------------------

    def study_methods(self, study: tuple[str, ...]) -> list[str]:
        """The configured methods of a study, in its table's order."""
        return [m for m in study if m in self.methods]

    def consistency_records(self, dataset: str) -> list[LogRecord]:
        """Jeong & Shin (2020), Table 2: fixed-σ certification of each method's model, per σ."""
        return [r for m in self.study_methods(CONSISTENCY_STUDY) for r in self.fixed_records(dataset, m)]

    def acr_study_records(self, dataset: str) -> list[LogRecord]:
        """Sun et al. (2024), Table 2: fixed-σ certification of each method's model, per σ."""
        return [r for m in self.study_methods(ACR_STUDY) for r in self.fixed_records(dataset, m)]

    def ablation_records(self, dataset: str) -> list[LogRecord]:
        """Sun et al. (2024), Table 3: every ablation variant of each configured method that has
        one (:attr:`ddrs.methods.Method.ablation`), at the config's ``sun2024.ablation_sigmas``.

        The variant that trains exactly as its method does (all components on, unless the config
        switches one off) is the method's own model: its row is the method's log under the
        variant's name, so the model is not trained twice.
        """
        sigmas = self.config.get("sun2024", {}).get("ablation_sigmas", [])
        records = []
        for method in self.methods:
            own = {r.sigma0: r for r in self.fixed_records(dataset, method)}
            for variant in get_method(method).variants():
                for record in self.fixed_records(dataset, variant):
                    if record.sigma0 not in sigmas:
                        continue
                    same_model = record.sigma0 in own and self.trains_alike(
                        Run(dataset, variant, "fs", record.sigma0), Run(dataset, method, "fs", record.sigma0)
                    )
                    records.append(replace(own[record.sigma0], variant=display_name(variant)) if same_model else record)
        return records

    def gradient_norm_runs(self, dataset: str) -> list[Run]:
        """Sun et al. (2024), Table 1: each method's fixed-σ model at ``sun2024.gradient_norm_sigma``."""
        sigma = self.config.get("sun2024", {}).get("gradient_norm_sigma")
        return [Run(dataset, m, "fs", sigma) for m in self.study_methods(ACR_STUDY) if sigma in self.sigmas(dataset, m)]

    def study_tables(self) -> list[str]:
        """The studies' tables on every dataset that has their models (ablation and gradient
        norms need the models themselves, so not on a dataset of given logs)."""
        names = []
        for dataset in self.datasets:
            wanted = {
                f"consistency_{dataset}": any(m in self.methods for m in CONSISTENCY_STUDY if m not in DDRS_METHODS),
                f"methods_{dataset}": "easy_focus" in self.methods,
                f"easy_focus_ablation_{dataset}": not self.is_logs(dataset) and bool(self.ablation_records(dataset)),
                f"gradient_norms_{dataset}": not self.is_logs(dataset) and bool(self.gradient_norm_runs(dataset)),
            }
            names += [name for name, build in wanted.items() if build]
        return names

    def study_records(self, table: str) -> list[LogRecord]:
        """The logs of one of :meth:`study_tables`' per-σ tables."""
        for dataset in self.datasets:
            for prefix, records in (
                ("consistency", self.consistency_records),
                ("methods", self.acr_study_records),
                ("easy_focus_ablation", self.ablation_records),
            ):
                if table == f"{prefix}_{dataset}":
                    return records(dataset)
        raise ValueError(f"{table!r} is not a per-σ study table")

    # --- figures -----------------------------------------------------------------------------

    def figure_datasets(self) -> list[str]:
        """Computed datasets with a full method: the figures need their σ logs and test images."""
        return [d for d in self.datasets if not self.is_logs(d) and any(self.sigmas(d, m) for m in self.full_methods())]

    def showcase(self, dataset: str) -> Run:
        """The model the single-setting figures show: the first full method's fixed-σ model at the
        middle σ₀ (its largest K gives σ*ₓ)."""
        method = next(m for m in self.full_methods() if self.sigmas(dataset, m))
        sigmas = self.sigmas(dataset, method)
        return Run(dataset, method, "fs", sigmas[len(sigmas) // 2])

    def showcase_records(self, dataset: str) -> list[LogRecord]:
        """Method, Method-DS and Method-DS² of every full method at the showcase σ₀ and largest K."""
        showcase = self.showcase(dataset)
        sigma, k = showcase.sigma, self.k_grid(dataset, showcase.method, "fs")[-1]
        return [
            r
            for m in self.full_methods()
            for r in self.method_records(m)
            if r.dataset == dataset and r.sigma0 == sigma and (r.K is None or r.K == k)
        ]

    def method_dataset_records(self, method: str, dataset: str) -> list[LogRecord]:
        """Figures 3–5: one method's rows on one dataset."""
        return [r for r in self.method_records(method) if r.dataset == dataset]

    def k_sweep_records(self, method: str, dataset: str) -> list[LogRecord]:
        """Figure 7: Method-DS² at the smallest σ₀, one line per K (the paper's CIFAR-10 panel)."""
        sigma = self.sigmas(dataset, method)[0]
        return [r for r in self.ds_records(dataset, method, "ds") if r.sigma0 == sigma]

    def figures(self) -> list[str]:
        """Every figure target."""
        names = []
        for dataset in self.figure_datasets():
            for method in (m for m in self.full_methods() if self.sigmas(dataset, m)):
                names += [f"certified_{method}_{dataset}", f"ksweep_{method}_{dataset}"]
            names += [f"{kind}_{dataset}" for kind in ("sigma_examples", "sigma_histogram", "pa_ecdf", "easy_hard")]
            if f"methods_{dataset}" in self.study_tables():
                names.append(f"pa_ecdf_methods_{dataset}")
        if self.config.get("compare_with_paper"):
            names.append("paper_comparison")
        return [self.layout.figure(name) for name in names]

    # --- training ----------------------------------------------------------------------------

    def trains_alike(self, a: Run, b: Run) -> bool:
        """Whether two runs train the same model: equal options, method hyper-parameters resolved."""

        def resolved(run: Run) -> dict[str, Any]:
            options = self.train_options(run)
            method = get_method(run.method)
            return {**options, method.name: method.make_params(options.get(method.name))}

        return resolved(a) == resolved(b)

    def train_options(self, run: Run) -> dict[str, Any]:
        """The ``ddrs train --config`` mapping of one base classifier (keys: ``TrainConfig`` fields).

        The config's ``train`` section, overridden by the dataset's own ``train`` section and its
        ``train_by_sigma`` entry for the run's σ₀ (method sections merged field by field), with
        the run's data, model, method, mode and scale; of the method sections only the run's own.
        Algorithm 2 runs Algorithm 1 as certification does: ``optimize_sigma``'s objective, clamp
        and, where ``n_by_method`` names the method, its n.
        """
        spec = self.datasets[run.dataset]
        train = merge_train(self.config["train"], spec.get("train", {}))
        train = merge_train(train, spec.get("train_by_sigma", {}).get(scale_label(run.sigma), {}))
        options = {key: value for key, value in train.items() if key not in METHODS}
        method = get_method(run.method).name
        switches = variant_params(run.method)
        if method in self.config["optimize_sigma"].get("n_by_method", {}):
            options["n"] = self.algorithm1_n(method)
        if method in train or switches:
            options[method] = {**train.get(method, {}), **switches}
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
        return options
