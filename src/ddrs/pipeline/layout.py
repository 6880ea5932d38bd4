"""Names of things in the results tree: a model's wildcards, every path, the K-grid rule groups."""

from __future__ import annotations

from dataclasses import dataclass

#: every file of a base classifier's directory, by what it holds (``{k}``: Algorithm 1's steps K;
#: ``{n}``: the grid search's draws per σ; ``{draw}``: a Monte Carlo re-certification with other noise)
RUN_FILES = {
    "model": "model.pt",
    "train_log": "train.csv",
    "train_sigmas": "train_sigmas.tsv",
    "certify_fixed": "certify_fixed.tsv",
    "certify_sequential": "certify_sequential.tsv",
    "certify_monte_carlo": "certify_fixed_mc{draw}.tsv",
    "sigma_log": "sigma_opt.tsv",
    "certify_k": "certify_K{k}.tsv",
    "memory_k": "memory_K{k}.tsv",
    "grid_sigma_log": "sigma_grid_n{n}.tsv",
    "certify_grid": "certify_grid_n{n}.tsv",
    "memory_grid": "memory_grid_n{n}.tsv",
    "semi_elastic_sigma_log": "sigma_semi_elastic.tsv",
    "certify_semi_elastic": "certify_semi_elastic.tsv",
    "semi_elastic": "semi_elastic.tsv",
    "gradient_norms": "gradient_norms.tsv",
}


def run_file(run_dir: str, name: str, **fields: str | int) -> str:
    """The file ``name`` (a :data:`RUN_FILES` key) of the run directory ``run_dir``; unfilled
    ``fields`` stay wildcards (``run_file(RUN, "memory_k", k="{k}")``)."""
    return f"{run_dir}/{RUN_FILES[name].format(**fields)}"


def scale_label(value: float | str) -> str:
    """How a scale is spelled in paths and wildcards: 0.12, 0.25, 1."""
    return f"{float(value):g}"


#: what the workflow's ``{sigma}`` wildcard matches: a :func:`scale_label` in plain decimals
SCALE_PATTERN = r"[0-9.]+"


def replicate_label(replicate: int) -> str:
    """How a training run is spelled after its σ in paths and wildcards: nothing for replicate 0 (the
    single run of earlier versions keeps its paths), ``_r<r>`` for the others."""
    return f"_r{replicate}" if replicate else ""


#: the ``{replicate}`` wildcard's values (:func:`replicate_label`), as a regex
REPLICATE_PATTERN = r"(?:_r[1-9][0-9]*)?"


@dataclass(frozen=True)
class Layout:
    """Every path of the results tree, spelled once.

    Each method takes its fields as strings, so passing Snakemake wildcards (``"{dataset}"``)
    gives the rules' path patterns and passing values gives the files.
    """

    results: str

    def run_dir(self, dataset: str, method: str, mode: str, sigma: str, replicate: str = "") -> str:
        """One base classifier's directory: model, training log, σ logs, certification logs
        (``replicate``: :func:`replicate_label`)."""
        return f"{self.results}/{dataset}/{method}/{mode}/sigma{sigma}{replicate}"

    def model(self, dataset: str, method: str, mode: str, sigma: str, replicate: str = "") -> str:
        """The base classifier's checkpoint."""
        return run_file(self.run_dir(dataset, method, mode, sigma, replicate), "model")

    @staticmethod
    def job(dataset: str, method: str, mode: str, sigma: str, replicate: str = "") -> str:
        """One base classifier's name in log and benchmark file names."""
        return f"{dataset}_{method}_{mode}_sigma{sigma}{replicate}"

    def audit(self, dataset: str, method: str, mode: str, sigma: str, replicate: str, log: str) -> str:
        """The certificate audit of a run's certification log ``log`` (``fixed``, or ``K<k>`` for Algorithm 1's
        K; :mod:`ddrs.jobs.audit`), in a tree of its own beside the run directories."""
        return f"{self.results}/audit/{dataset}/{method}/{mode}/sigma{sigma}{replicate}/audit_{log}.tsv"

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

    def published_manifest(self, repository: str) -> str:
        """Where the fetch job of a published repository (``owner+name``) lists its logs' local files."""
        return f"{self.results}/published/manifests/{repository}.csv"

    def published_entries(self, dataset: str) -> str:
        """A dataset's published logs read once, for its leaderboard's jobs (``ddrs.published.leaderboard``)."""
        return f"{self.results}/published/logs/{dataset}.npz"

    def data_marker(self, dataset: str) -> str:
        """Written by ``prepare_data`` once the dataset is downloaded and verified."""
        return f"{self.results}/data/{dataset}.json"


@dataclass(frozen=True)
class Run:
    """One base classifier: dataset, training method, training mode (fs / ds), σ₀ and training run
    (``replicate``: every training seed of run r, the same r across methods; 0 is the single run of
    earlier versions)."""

    dataset: str
    method: str
    mode: str
    sigma: float
    replicate: int = 0

    @property
    def wildcards(self) -> tuple[str, str, str, str, str]:
        return self.dataset, self.method, self.mode, scale_label(self.sigma), replicate_label(self.replicate)


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
            layout.run_dir(
                f"(?:{self.dataset})", f"(?:{self.method or '[^/]+'})", f"(?:{self.mode})", "[0-9.]+", REPLICATE_PATTERN
            )
            + "/"
            + RUN_FILES["certify_k"].replace(".", "\\.").format(k="[0-9]+")
        )
