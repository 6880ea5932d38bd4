"""What re-runs when a config key changes (no torch): every leaf of ``config/schema/config.schema.yaml``
and the kinds of job it decides (docs/architecture.md, "What re-runs").

A job's identity, what Snakemake compares to decide a re-run, is exactly what decides its output's
rows: a model's training options (:meth:`~ddrs.pipeline.training_plan.TrainingPlan.train_options`),
a certification's settings, σ, inputs and seed (:mod:`ddrs.pipeline.job_plan`), a table's records
and builder arguments. A key of :data:`CLASSES` re-runs the jobs of its kinds that it changes, and
every job after them; a key of no kind (:data:`SPEED`) changes how fast jobs run, or where they
run, and re-runs nothing. ``tests/test_workflow_rerun.py`` holds the table against dry runs, and
fails for a schema leaf the table does not name.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from ddrs.methods import METHODS
from ddrs.training.config import SPEED_FIELDS, TrainConfig

#: the kinds of job a config key decides, each the rules that run it
JOB_KINDS = {
    "data": ("prepare_data",),
    "train": ("train", "import_checkpoint"),
    "fixed": ("certify_fixed",),
    "data_dependent": ("certify_data_dependent_*",),
    "grid_search": ("certify_grid_search",),
    "sequential": ("certify_sequential",),
    "monte_carlo": ("certify_monte_carlo",),
    "gradient_norms": ("gradient_norms",),
    "published": ("fetch_published_logs", "published_dataset_logs"),
    "tables": ("*",),  # every other rule: one per catalogue entry (ddrs.pipeline.catalogue)
}

#: no job: a speed-only key
SPEED: frozenset[str] = frozenset()

_CERTIFY = frozenset({"fixed", "data_dependent", "grid_search", "sequential", "monte_carlo"})
_COMPUTE = frozenset({"train", *_CERTIFY, "gradient_norms"})
#: keys that decide which runs exist (σ grids, methods, K grids): they add or remove jobs of these
#: kinds and change the tables that list them; a job that stays keeps its output
_GRID = frozenset({*_COMPUTE, "tables"})
_TRAIN = frozenset({"train"})
#: the uniform-noise models (Table 4): trained and certified at fixed σ and with Algorithm 1, not
#: in the Gaussian-only grid search, sequential comparison or gradient norms
_UNIFORM = frozenset({"train", "fixed", "data_dependent", "tables"})
_TABLES = frozenset({"tables"})

#: every leaf of the config schema outside the ``train`` sections (dotted; ``*`` stands for any key of
#: a mapping, as in :func:`schema_leaves`) → the kinds of job it decides
CLASSES: dict[str, frozenset[str]] = {
    # where results and data live: every output's path, or every job's data
    "results": frozenset(JOB_KINDS),
    "data_root": frozenset({"data", *_COMPUTE}),
    "seed": frozenset({"data", *_COMPUTE, "tables"}),  # the split, every draw, the bootstrap
    "device": _COMPUTE,  # CPU and CUDA draw other noise streams
    "precision": frozenset({*_CERTIFY, "gradient_norms"}),
    "gpus_per_job": SPEED,
    "max_job_minutes": SPEED,
    # torch's intra-op threads order the float sums of training steps and of σ searches
    "threads_per_job": frozenset({"train", "data_dependent", "grid_search"}),
    "compare_with_paper": _TABLES,
    # which training runs exist; the Monte Carlo re-certifications of the variance budget
    "replication.runs": _GRID,
    "replication.methods": _GRID,
    "replication.monte_carlo": frozenset({"monte_carlo", "tables"}),
    "replication.effect_acr": _TABLES,
    "replication.effect_accuracy": _TABLES,
    "statistics.alpha": _TABLES,
    "statistics.n_boot": _TABLES,
    "statistics.selection": _TABLES,
    "sun2024.ablation_sigmas": _GRID,
    "sun2024.gradient_norm_sigma": frozenset({"train", "gradient_norms", "tables"}),
    "sun2024.gradient_norm_skip": frozenset({"gradient_norms"}),
    "exclude_datasets": _TABLES,
    "methods": frozenset({"train", "fixed", "data_dependent", "sequential", "gradient_norms", "tables"}),
    "uniform.convention": _UNIFORM,  # the uniform-noise models' λ
    # a dataset
    "datasets.*.source": frozenset(JOB_KINDS),
    "datasets.*.common_inputs": _TABLES,
    "datasets.*.logs": _TABLES,
    "datasets.*.arch": _TRAIN,
    "datasets.*.sigmas": _GRID,
    "datasets.*.uniform_sigmas": _UNIFORM,
    "datasets.*.test_skip": _CERTIFY,
    "datasets.*.test_max": _CERTIFY,
    "datasets.*.checkpoints.*.*": _TRAIN,
    "datasets.*.k": frozenset({"data_dependent", "tables"}),
    "datasets.*.k_by_method.*.*": frozenset({"data_dependent", "tables"}),
    "datasets.*.uniform_convention": _UNIFORM,
    # certification (its speed settings: the fields of ddrs.core.settings.DeviceSettings)
    "certify.n0": _CERTIFY,
    "certify.n": _CERTIFY,
    "certify.alpha": _CERTIFY,
    "certify.batch": SPEED,
    "certify.memory_format": SPEED,
    "certify.compile": SPEED,
    "certify.mode": frozenset({*_CERTIFY, "tables"}),
    "certify.sequential.compare": frozenset({"sequential", "tables"}),
    # Algorithm 1 (the σ search of certification, and of Algorithm 2 training)
    "optimize_sigma.k": frozenset({"data_dependent", "tables"}),
    "optimize_sigma.objective": frozenset({"train", "data_dependent", "grid_search"}),
    "optimize_sigma.clamp": frozenset({"train", "data_dependent", "grid_search"}),
    "optimize_sigma.n": frozenset({"data_dependent"}),
    "optimize_sigma.n_by_method.*": frozenset({"train", "data_dependent"}),
    "optimize_sigma.lr": frozenset({"data_dependent"}),
    "optimize_sigma.n0": frozenset({"data_dependent", "grid_search"}),
    "optimize_sigma.min_sigma": frozenset({"data_dependent"}),
    "optimize_sigma.batch": frozenset({"data_dependent", "grid_search"}),  # orders the σ search's sums
    # Appendix B
    "grid_search.enabled": frozenset({"train", "grid_search", "tables"}),
    "grid_search.method": frozenset({"train", "grid_search", "tables"}),
    "grid_search.datasets": frozenset({"train", "grid_search", "tables"}),
    "grid_search.n": frozenset({"grid_search", "tables"}),
    "grid_search.budget": frozenset({"grid_search", "tables"}),
    "grid_search.low": frozenset({"grid_search"}),
    "grid_search.high": frozenset({"grid_search"}),
    # published logs: what is fetched (a mirror or server serves the same sha256-checked files), and
    # what is tabulated from them
    "published_logs.registry": frozenset({"published", "tables"}),
    "published_logs.repositories": frozenset({"published", "tables"}),
    "published_logs.cache": frozenset({"published", "tables"}),
    "published_logs.mirrors.*": SPEED,
    "published_logs.offline": SPEED,
    "published_logs.base_url": SPEED,
    "published_logs.audit": _TABLES,
    "published_logs.seed_tables": _TABLES,
    "published_logs.transcription": _TABLES,
    "published_logs.mapping": _TABLES,
    "published_logs.leaderboards.*": _TABLES,
    "published_logs.families": _TABLES,
    "published_logs.own.*.dataset": _TABLES,
    "published_logs.own.*.sigma": _TABLES,
    "published_logs.own.*.path": _TABLES,
    "published_logs.own.*.arch": _TABLES,
    "published_logs.own.*.family": _TABLES,
    "published_logs.own.*.extra_data": _TABLES,
    "published_logs.own.*.n": _TABLES,  # the audit's radius cap
    "published_logs.own.*.alpha": _TABLES,
    "published_logs.own.*.order": _TABLES,  # which published logs it is ranked with
}

#: the keys whose jobs depend on ``certify.mode``: the sequential stopping rule and the radius grids it
#: decides (sequential CERTIFY stops once every radius of the grid is decided) are in the document of
#: every job that certifies sequentially: the sequential comparison's logs under ``fixed``, every
#: certification under ``sequential``; the radii are the tables' too
_STOPPING_RULE = {"fixed": frozenset({"sequential"}), "sequential": _CERTIFY}
_RADII = {mode: frozenset({*kinds, "tables"}) for mode, kinds in _STOPPING_RULE.items()}
BY_MODE: dict[str, dict[str, frozenset[str]]] = {
    "certify.sequential.sequence": _STOPPING_RULE,
    "certify.sequential.first_look": _STOPPING_RULE,
    "certify.sequential.growth": _STOPPING_RULE,
    "certify.sequential.checks": _STOPPING_RULE,
    "certify.sequential.futility": _STOPPING_RULE,
    "certify.sequential.acr_fraction": _STOPPING_RULE,
    "datasets.*.radii": _RADII,
    "datasets.*.l1_radii": _RADII,
}

#: where a ``train`` section sits: its keys are ``TrainConfig`` fields, which decide what a model
#: learns but for :data:`~ddrs.training.config.SPEED_FIELDS`, and one section per method, whose
#: hyper-parameters all do
TRAIN_SECTIONS = (
    "train",
    "datasets.*.train",
    "datasets.*.ds_fine_tune.*",
    "datasets.*.train_by_method.*",
    "datasets.*.train_by_sigma.*",
)


def kinds_of(leaf: str, mode: str | None = None) -> frozenset[str]:
    """The kinds of job the config leaf ``leaf`` (as :func:`schema_leaves` spells it) decides under
    ``certify.mode`` ``mode`` (None: under either, :data:`BY_MODE`); a ``KeyError`` naming it when it
    has no class."""
    if leaf in BY_MODE:
        return BY_MODE[leaf][mode] if mode is not None else frozenset().union(*BY_MODE[leaf].values())
    for section in TRAIN_SECTIONS:
        if leaf.startswith(f"{section}.") and leaf.count(".") in (section.count(".") + 1, section.count(".") + 2):
            key = leaf[len(section) + 1 :]
            if key.split(".")[0] in METHODS:
                return _TRAIN
            if key in {field.name for field in dataclasses.fields(TrainConfig)}:
                return SPEED if key in SPEED_FIELDS else _TRAIN
    if leaf in CLASSES:
        return CLASSES[leaf]
    raise KeyError(f"config key {leaf} has no class in ddrs.pipeline.reruns.CLASSES: say which jobs it decides")


def kind_of_rule(rule: str) -> str:
    """The kind of job a workflow rule runs (:data:`JOB_KINDS`)."""
    return next(kind for kind, rules in JOB_KINDS.items() if any(fnmatch.fnmatchcase(rule, r) for r in rules))


def schema_leaves(schema: str | Path) -> Iterator[str]:
    """Every leaf of the config schema at ``schema``, dotted, with ``*`` for a mapping's keys: a
    key whose value is not a mapping of named keys (``$ref`` resolved, into the generated
    ``registries.schema.json`` too)."""
    schema = Path(schema)
    documents = {"": yaml.safe_load(schema.read_text())}
    documents["registries.schema.json"] = json.loads((schema.parent / "registries.schema.json").read_text())

    def resolve(node: Mapping[str, Any], document: str) -> tuple[Mapping[str, Any], str]:
        while "$ref" in node and "properties" not in node:
            target, _, pointer = node["$ref"].partition("#")
            document = target or document
            node = documents[document]
            for part in pointer.strip("/").split("/"):
                node = node[part]
        return node, document

    def named(node: Mapping[str, Any], document: str) -> dict[str, tuple[Mapping[str, Any], str]]:
        """The named properties of ``node`` and of the schema it ``$ref``s beside them."""
        properties = {key: (value, document) for key, value in node.get("properties", {}).items()}
        if "$ref" in node and "properties" in node:
            target, _ = resolve({"$ref": node["$ref"]}, document)
            properties = {**named(target, node["$ref"].partition("#")[0] or document), **properties}
        return properties

    def walk(node: Mapping[str, Any], document: str, path: str) -> Iterator[str]:
        node, document = resolve(node, document)
        properties = named(node, document)
        extra = node.get("additionalProperties")
        if properties:
            for key, (value, where) in properties.items():
                yield from walk(value, where, f"{path}.{key}" if path else key)
        elif isinstance(extra, Mapping) and node.get("type") == "object":
            yield from walk(extra, document, f"{path}.*")
        else:
            yield path

    yield from walk(documents[""], "", "")
