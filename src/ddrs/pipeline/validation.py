"""What the config schema cannot say, checked before any job runs (``rules/common.smk``).

The JSON schema (``config/schema/config.schema.yaml``, applied by Snakemake's ``validate``) checks
every key, type and range on its own. Three kinds of mistakes pass it and would otherwise surface
only inside a job, after others have run, or never:

- a float where the schema types an integer (``n: 2000.0``): JSON has one number type, so JSON
  Schema counts 2000.0 as an integer, while the job's flag ``--n 2000.0`` is refused by argparse;
- a key or value that must name something the config defines elsewhere (a σ₀ of the dataset's
  grid, a configured dataset): a typo there is silently ignored (:meth:`RunGrid.check_references`);
- values a job's own settings refuse together (a σ floor above a σ₀): the training and Algorithm 1
  settings of every run are built here, so their checks name the run before any job.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from jsonschema import validators
from jsonschema.exceptions import best_match


def _is_int(_checker, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_integers(config: Mapping[str, Any], schema_path: str | Path) -> None:
    """Raise ``ValueError`` naming the first key whose value is a float where the schema says integer."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    base = validators.validator_for(schema)
    strict = validators.extend(base, type_checker=base.TYPE_CHECKER.redefine("integer", _is_int))
    error = best_match(strict(schema).iter_errors(config))
    if error is not None:
        key = ".".join(map(str, error.absolute_path)) or "the config"
        raise ValueError(f"config key {key}: {error.message} (write integers without a decimal point)")


def check_training_options(exp) -> None:
    """Build the ``TrainConfig`` of every model ``exp`` (an :class:`~ddrs.pipeline.Experiment`)
    trains, so that an option only training would refuse (``min_sigma`` not below σ₀, a batch size
    the method's m does not divide) stops the DAG before any job, naming the run."""
    from ddrs.training.config import TrainConfig

    for run in exp.runs():
        if exp.is_published(run.dataset) and run.mode == "fs":  # imported, not trained
            continue
        try:
            TrainConfig.from_mapping(exp.train_options(run))
        except ValueError as error:
            raise ValueError(f"the training options of {exp.run_dir(run)}: {error}") from None


def check_algorithm1_options(exp) -> None:
    """Build Algorithm 1's settings at the σ₀ of every model ``exp`` trains or imports, so that an
    ``optimize_sigma.min_sigma`` above a σ₀ stops the DAG before any job, naming the model."""
    from ddrs.core.settings import Algorithm1Settings

    for run in exp.runs():
        try:
            sigma0 = exp.smoothing_scale(run.dataset, run.method, run.sigma)
            Algorithm1Settings(sigma0=sigma0, min_scale=exp.config["optimize_sigma"]["min_sigma"])
        except ValueError as error:
            raise ValueError(f"optimize_sigma for {exp.run_dir(run)}: {error}") from None
