"""What the config schema cannot say, checked before any job runs (``rules/common.smk``).

The JSON schema (``config/schema/config.schema.yaml`` with its generated registry part,
:mod:`ddrs.pipeline.schema`; applied by Snakemake's ``validate``, which also fills its defaults)
checks every key, type and range on its own. Three kinds of mistakes pass it and would otherwise surface
only inside a job, after others have run, or never:

- a float where the schema types an integer (``n: 2000.0``): JSON has one number type, so JSON
  Schema counts 2000.0 as an integer, while the job's flag ``--n 2000.0`` is refused by argparse;
- a key or value that must name something the config defines elsewhere (a σ₀ of the dataset's
  grid, a configured dataset): a typo there is silently ignored (:func:`check_references`);
- values a job's own settings refuse together (a σ floor above a σ₀): the training and Algorithm 1
  settings of every run are built here, so their checks name the run before any job.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jsonschema import validators
from jsonschema.exceptions import best_match

from ddrs.methods import get_method
from ddrs.pipeline.grid import SIGMA_KEY
from ddrs.pipeline.layout import scale_label


def _is_int(_checker, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_integers(config: Mapping[str, Any], schema_path: str | Path) -> None:
    """Raise ``ValueError`` naming the first key whose value is a float where the schema says integer
    (the schema's relative ``$ref``s into the generated ``registries.schema.yaml`` resolved as
    Snakemake's ``validate`` resolves them: :func:`ddrs.pipeline.schema.load_schema`)."""
    from ddrs.pipeline.schema import load_schema  # not at import: `python -m ddrs.pipeline.schema` imports this package

    schema, registry = load_schema(schema_path)
    base = validators.validator_for(schema)
    strict = validators.extend(base, type_checker=base.TYPE_CHECKER.redefine("integer", _is_int))
    error = best_match(strict(schema, registry=registry).iter_errors(config))
    if error is not None:
        key = ".".join(map(str, error.absolute_path)) or "the config"
        raise ValueError(f"config key {key}: {error.message} (write integers without a decimal point)")


def _require_in(given, allowed: list, where: str) -> None:
    """Raise ``ValueError`` naming ``where`` and the allowed values unless every item of ``given``
    (a list, or a mapping's keys) is one of ``allowed``."""
    unknown = [item for item in given if item not in allowed]
    if unknown:
        raise ValueError(f"{where}: {unknown} not among the config's {allowed}; a value elsewhere would be ignored")


def check_references(config: Mapping[str, Any]) -> None:
    """Refuse a key or value that must name what the config defines elsewhere, which the schema
    cannot check and a lookup would silently miss (:mod:`ddrs.pipeline.validation`): σ₀ keys
    of ``train_by_sigma`` and ``checkpoints`` outside the dataset's grid (or spelled otherwise
    than :func:`scale_label`), ``train_by_method`` keys of methods the config does not run,
    ``grid_search.datasets`` not configured, ``sun2024`` σ₀ in no dataset's grid, an empty
    grid-search interval and a grid-search n that does not divide its budget."""
    methods, grid = list(config.get("methods") or []), config.get("grid_search", {"enabled": False})
    datasets = config.get("datasets") or {}
    for dataset, spec in datasets.items():
        labels = {noise: [scale_label(s) for s in spec.get(key, [])] for noise, key in SIGMA_KEY.items()}
        every = list(dict.fromkeys(sum(labels.values(), [])))
        _require_in(spec.get("train_by_sigma", {}), every, f"datasets.{dataset}.train_by_sigma")
        _require_in(spec.get("train_by_method", {}), methods, f"datasets.{dataset}.train_by_method")
        for method, paths in spec.get("checkpoints", {}).items():
            noise = get_method(method).noise
            _require_in(paths, labels[noise], f"datasets.{dataset}.checkpoints.{method}")
    _require_in(grid.get("datasets") or [], list(datasets), "grid_search.datasets")
    if grid["enabled"]:
        if not grid["low"] < grid["high"]:
            raise ValueError(f"grid_search: low {grid['low']} must be below high {grid['high']}")
        budget = grid["budget"]
        for n in grid["n"]:
            if budget % n:
                raise ValueError(
                    f"grid_search: n = {n} does not divide the budget {budget}: its grid would spend "
                    f"{budget // n * n} evaluations, not Algorithm 1's (Appendix B compares at equal budget)"
                )
    studies = config.get("sun2024", {})
    sigmas = {s for spec in datasets.values() for s in spec.get("sigmas", [])}
    for key in ("ablation_sigmas", "gradient_norm_sigma"):
        given = studies.get(key, [])
        _require_in(given if isinstance(given, list) else [given], sorted(sigmas), f"sun2024.{key}")


def check_training_options(exp) -> None:
    """Build the ``TrainConfig`` of every model ``exp`` (an :class:`~ddrs.pipeline.Experiment`)
    trains, so that an option only training would refuse (``min_sigma`` not below σ₀, a batch size
    the method's m does not divide) stops the DAG before any job, naming the run."""
    from ddrs.training.config import TrainConfig

    for run in exp.runs():
        if exp.grid.is_published(run.dataset) and run.mode == "fs":  # imported, not trained
            continue
        try:
            TrainConfig.from_mapping(exp.training.train_options(run))
        except ValueError as error:
            raise ValueError(f"the training options of {exp.grid.run_dir(run)}: {error}") from None


def check_algorithm1_options(exp) -> None:
    """Build Algorithm 1's settings at the σ₀ of every model ``exp`` trains or imports, so that an
    ``optimize_sigma.min_sigma`` above a σ₀ stops the DAG before any job, naming the model."""
    from ddrs.core.settings import Algorithm1Settings

    for run in exp.runs():
        try:
            sigma0 = exp.grid.smoothing_scale(run.dataset, run.method, run.sigma)
            Algorithm1Settings(sigma0=sigma0, min_scale=exp.config["optimize_sigma"]["min_sigma"])
        except ValueError as error:
            raise ValueError(f"optimize_sigma for {exp.grid.run_dir(run)}: {error}") from None
