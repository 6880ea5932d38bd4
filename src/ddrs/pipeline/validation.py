"""The config's checks before any job runs (``rules/config.smk``, ``rules/common.smk``), each problem
named on one line by its config path, after the config file that set the key
(:class:`ConfigSources`; :class:`ConfigError` carries the key of a refusal raised in code).

:func:`schema_problems` reads the JSON schema (``config/schema/config.schema.yaml`` with its
generated registry part, :mod:`ddrs.pipeline.schema`) before Snakemake's ``validate`` fills its
defaults: one line per problem, never the schema itself. It also refuses a float where the schema
types an integer (``n: 2000.0``): JSON has one number type, so JSON Schema counts 2000.0 as an
integer, while the job's settings would refuse it. Two kinds of mistakes pass the schema and
would otherwise surface only inside a job, after others have run, or never:

- a key or value that must name something the config defines elsewhere (a σ₀ of the dataset's
  grid, a configured dataset): a typo there is silently ignored (:func:`check_references`);
- values a job's own settings refuse together (a σ floor above a σ₀): the training and Algorithm 1
  settings of every run are built here, so their checks name the run before any job.

What Snakemake must read before any of this, the config files themselves, is checked by
:mod:`ddrs.pipeline.config_files`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any

import yaml
from jsonschema import validators
from jsonschema.exceptions import ValidationError, best_match

from ddrs.methods import get_method
from ddrs.pipeline.config_files import shown
from ddrs.pipeline.grid import SIGMA_KEY
from ddrs.pipeline.layout import SCALE_PATTERN, scale_label


def _is_int(_checker, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: the most characters of a value a problem's line quotes
_QUOTED = 60


def _quoted(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _QUOTED else f"{text[: _QUOTED - 4]} …{text[-1]}"


#: JSON Schema's bounds, in words
_BOUNDS = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤", "exclusiveMaximum": "<"}


class ConfigError(ValueError):
    """A config the library refuses, raised with the config path of the key at fault (``("certify",
    "n0")``), so that the message can name the file that set it (:meth:`ConfigSources.refusal`).
    Where keys disagree, ``others`` holds the message that leads with each other key: the one shown
    is that of the key the last source sets, the one a user edited."""

    def __init__(self, key: Sequence[str], message: str, others: Mapping[tuple[str, ...], str] | None = None) -> None:
        super().__init__(message)
        self.key = tuple(key)
        self.messages = {self.key: message, **{tuple(other): line for other, line in (others or {}).items()}}


@dataclass(frozen=True)
class ConfigSources:
    """What set the config's keys, in Snakemake's merge order: the config files (the embedded
    default, or every ``--configfile``, each merged recursively over the ones before it), then the
    command line's ``--config`` values. ``layers`` is (name, mapping) per source."""

    layers: tuple[tuple[str, Mapping[str, Any]], ...]

    @classmethod
    def read(cls, configfiles: Sequence[str | Path], overrides: Mapping[str, Any] | None = None) -> ConfigSources:
        """The sources of a run given ``configfiles`` (already read once by Snakemake) and ``--config``'s values."""
        layers = [(shown(path), yaml.safe_load(Path(path).read_text()) or {}) for path in configfiles]
        return cls(tuple(layers + ([("--config", dict(overrides))] if overrides else [])))

    def holding(self, key: Sequence[str | int]) -> str:
        """The source whose value of ``key`` the config holds (the last that sets it; a list comes whole
        from one source), or every source's name for the config itself or a key none sets."""
        keys = list(itertools.takewhile(lambda part: isinstance(part, str), key))
        setting = [name for name, mapping in self.layers if keys and _sets(mapping, keys)]
        return setting[-1] if setting else ", ".join(name for name, _ in self.layers)

    def named(self, key: Sequence[str | int], line: str) -> str:
        """``line`` after the name of the source that set ``key``."""
        return f"{self.holding(key)}: {line}"

    def refusal(self, error: ConfigError) -> str:
        """``error``'s message that leads with the key the latest source sets (the first key where no
        source sets one later), after that source's name."""
        latest = {
            key: max((i for i, (_, mapping) in enumerate(self.layers) if _sets(mapping, key)), default=-1)
            for key in error.messages
        }
        key = max(latest, key=latest.get)
        return self.named(key, error.messages[key])


def _sets(mapping: Mapping[str, Any], keys: Sequence[str]) -> bool:
    """Whether ``mapping`` (one config file) gives a value at the nested ``keys``."""
    value: Any = mapping
    for part in keys:
        if not isinstance(value, Mapping) or part not in value:
            return False
        value = value[part]
    return True


def _config_path(parts) -> str:
    """A config path as a user writes it: keys joined by dots, list positions in brackets
    (``datasets.digits.sigmas[0]``)."""
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path


def _allowed_keys(schema: Mapping[str, Any], resolver) -> list[str]:
    """The keys a mapping under ``schema`` may hold: its ``properties`` and those of the schemas it
    draws in by ``$ref`` (``train``: TrainConfig's fields and one section per method)."""
    keys = list(schema.get("properties", {}))
    if "$ref" in schema:
        keys += _allowed_keys(resolver.lookup(schema["$ref"]).contents, resolver)
    return list(dict.fromkeys(keys))


def _unknown_keys(error: ValidationError, path: str, resolver) -> list[tuple[tuple, str]]:
    """One line per key the schema does not know, with the closest allowed key and every allowed one,
    each after the key's config path."""
    allowed = _allowed_keys(error.schema, resolver)
    where, prefix = path or "the config", f"{path}." if path else ""
    lines = []
    for key in (key for key in error.instance if key not in allowed):
        close = get_close_matches(str(key), allowed, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        line = f"config key {prefix}{key}: unknown key{hint}; {where} allows: {', '.join(allowed) or 'none'}"
        lines.append(((*error.absolute_path, key), line))
    return lines


def _in_words(error: ValidationError, path: str) -> str | None:
    """A violated bound or size as a sentence naming the value, or None for other errors:
    ``σ must be > 0, got -0.25 at datasets.digits.sigmas[0]`` (the name is the schema's ``title``,
    else the key)."""
    keys = [part for part in error.absolute_path if isinstance(part, str)]
    name = error.schema.get("title") or (keys[-1] if keys else "the config")
    if error.validator in _BOUNDS:
        bound = f"{_BOUNDS[error.validator]} {error.validator_value}"
        return f"{name} must be {bound}, got {_quoted(error.instance)} at {path}"
    if error.validator in ("minItems", "minProperties", "minLength") and not error.instance:
        return f"{path} must not be empty"
    return None


def _problem(error: ValidationError, stale_schema: str | None, resolver) -> list[tuple[tuple, str]]:
    """One line per problem of one schema error: the config path, what is wrong, what is allowed;
    each after the config path of its key."""
    if error.validator in ("additionalProperties", "unevaluatedProperties"):
        return _unknown_keys(error, _config_path(error.absolute_path), resolver)
    return [(tuple(error.absolute_path), _problem_line(error, stale_schema))]


def _problem_line(error: ValidationError, stale_schema: str | None) -> str:
    """The line of a schema error at one key: its config path, what is wrong, what is allowed."""
    path = _config_path(error.absolute_path)
    where = f"config key {path}" if path else "the config"
    words = _in_words(error, path)
    if words:
        return words
    if error.validator == "enum":
        names = [str(value) for value in error.validator_value]
        close = get_close_matches(str(error.instance), names, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        hint += f" ({stale_schema})" if stale_schema else ""
        return f"{where}: {_quoted(error.instance)} is not one of: {', '.join(names)}{hint}"
    if error.validator == "pattern" and "x-allowed" in error.schema:  # what it allows, not its regular expression
        *others, last = error.schema["x-allowed"]
        allowed = " or ".join(filter(None, [", ".join(others), last]))
        return f"{where}: {_quoted(error.instance)} is not allowed; it takes {allowed}"
    if error.validator == "type":
        expected = error.validator_value
        decimal = expected == "integer" and isinstance(error.instance, float)
        hint = " (write integers without a decimal point)" if decimal else ""
        return f"{where}: {_quoted(error.instance)} is not of type {expected!r}{hint}"
    message = error.message
    if len(message) > 2 * _QUOTED:
        message = f"{_quoted(error.instance)} fails {error.validator}: {error.validator_value!r}"
    return f"{where}: {message}"


def schema_problems(
    config: Mapping[str, Any], schema_path: str | Path, sources: ConfigSources | None = None
) -> list[str]:
    """Every way ``config`` breaks the schema, one line each (config path, what is wrong, what is
    allowed); empty when it fits. An unknown key, at any depth, lists the keys allowed there, and a
    name that is not one of a list's (``methods: [cohn]``) the closest allowed one; a violated bound
    reads as a sentence (``σ must be > 0, got -0.25 at datasets.digits.sigmas[0]``). Given the
    config's ``sources``, each line starts with the file that set the key.

    The schema's relative ``$ref``s into the generated ``registries.schema.yaml`` resolve as
    Snakemake's ``validate`` resolves them (:func:`ddrs.pipeline.schema.load_schema`); an integer
    written with a decimal point is refused (JSON Schema counts 2000.0 as an integer, argparse and
    the settings do not). A name refused while the generated part lags the registries (a method
    added without regenerating it) names the command that regenerates it.
    """
    # not at import: `python -m ddrs.pipeline.schema` imports this package
    from ddrs.pipeline.schema import REGISTRIES, load_schema, stale

    schema, registry = load_schema(schema_path)
    base = validators.validator_for(schema)
    strict = validators.extend(base, type_checker=base.TYPE_CHECKER.redefine("integer", _is_int))
    errors = [best_match([error]) for error in strict(schema, registry=registry).iter_errors(config)]
    if not errors:
        return []
    names_refused = any(error.validator == "enum" for error in errors)
    stale_schema = stale(Path(schema_path).parent / REGISTRIES.name) if names_refused else None
    resolver = registry.resolver(base_uri=schema["$id"])
    lines = [
        line if sources is None else sources.named(key, line)
        for error in errors
        for key, line in _problem(error, stale_schema, resolver)
    ]
    return list(dict.fromkeys(lines))


def _require_in(given, allowed: list, key: tuple[str, ...]) -> None:
    """Raise :class:`ConfigError` naming ``key`` and the allowed values unless every item of ``given``
    (a list, or a mapping's keys) is one of ``allowed``."""
    unknown = [item for item in given if item not in allowed]
    if unknown:
        close = [match for item in unknown for match in get_close_matches(str(item), map(str, allowed), n=1)]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ConfigError(
            key,
            f"{'.'.join(key)}: {unknown} not among the config's {allowed}{hint}; a value elsewhere would be ignored",
        )


def check_references(config: Mapping[str, Any]) -> None:
    """Refuse a key or value that must name what the config defines elsewhere, which the schema
    cannot check and a lookup would silently miss (:mod:`ddrs.pipeline.validation`): a method of
    ``methods`` whose noise's σ grid no dataset gives (``uniform`` without ``uniform_sigmas``), a σ₀ that
    its path spelling (:func:`scale_label`, read back by the workflow's wildcards) would change, σ₀ keys
    of ``train_by_sigma`` and ``checkpoints`` outside the dataset's grid (or spelled otherwise
    than :func:`scale_label`), ``train_by_method`` keys of methods the config does not run,
    ``grid_search.datasets`` not configured, ``sun2024`` σ₀ in no dataset's grid, ablation rows no
    configured method has (or without its full variant), an empty grid-search interval, a
    grid-search n that does not divide its budget, and more of CERTIFY's selection draws than
    estimation draws (``certify.n0 > certify.n``). Each refusal is a :class:`ConfigError` naming its
    key."""
    methods, datasets = list(config.get("methods") or []), config.get("datasets") or {}
    for method in methods:
        key = SIGMA_KEY[get_method(method).noise]
        if datasets and not any(spec.get(key) for spec in datasets.values()):
            raise ConfigError(
                ("methods",),
                f"methods: {method} runs on no dataset, since none gives {key}; add datasets.<dataset>.{key} "
                f"(e.g. [0.25, 0.5, 1.0]) or leave {method} out of methods",
            )
    for dataset, spec in datasets.items():
        _check_sigma_spellings(dataset, spec)
        _check_dataset_keys(dataset, spec, methods)
    _check_grid_search(config.get("grid_search", {"enabled": False}), list(datasets))
    certify = config.get("certify") or {}
    if "n0" in certify and "n" in certify and certify["n0"] > certify["n"]:
        raise ConfigError(
            ("certify",),
            f"certify.n0 = {certify['n0']} is more than certify.n = {certify['n']}: CERTIFY's selection draws (n0) "
            "would outnumber the estimation draws its certificate rests on (n); lower certify.n0 or raise certify.n",
        )
    studies = config.get("sun2024", {})
    sigmas = {s for spec in datasets.values() for s in spec.get("sigmas", [])}
    for key in ("ablation_sigmas", "gradient_norm_sigma"):
        given = studies.get(key, [])
        _require_in(given if isinstance(given, list) else [given], sorted(sigmas), ("sun2024", key))
    if "ablation_variants" in studies:
        _check_ablation_variants(studies["ablation_variants"], methods)


def _check_ablation_variants(variants: list[str], methods: list[str]) -> None:
    """Refuse an ablation row that is no variant of a configured method's ablation, or rows that leave
    out a method's full variant (all components on: the baseline of the ablation's comparisons)."""
    key = ("sun2024", "ablation_variants")
    ablated = [get_method(method) for method in methods if get_method(method).ablation]
    _require_in(variants, [variant for method in ablated for variant in method.variants()], key)
    for method in ablated:
        full = method.variants()[-1]
        if any(get_method(variant) is method for variant in variants) and full not in variants:
            raise ConfigError(
                key,
                f"sun2024.ablation_variants: {full}, {method.name} with every component on, is the baseline its "
                "other rows are compared with; add it to the list",
            )


def _check_sigma_spellings(dataset: str, spec: Mapping[str, Any]) -> None:
    """Refuse a σ of the dataset's grids that its path spelling (:func:`scale_label`) would change or
    that the workflow's ``{sigma}`` wildcard would miss."""
    for key in SIGMA_KEY.values():
        for sigma in spec.get(key, []):
            shown = f"datasets.{dataset}.{key}: σ {sigma!r} is spelled sigma{scale_label(sigma)} in paths"
            if float(scale_label(sigma)) != sigma:
                raise ConfigError(
                    ("datasets", dataset, key),
                    f"{shown}, which reads back as {float(scale_label(sigma))!r}: give it with at most 6 significant "
                    "digits",
                )
            if not re.fullmatch(SCALE_PATTERN, scale_label(sigma)):
                raise ConfigError(
                    ("datasets", dataset, key),
                    f"{shown}, which the workflow's {{sigma}} wildcard ({SCALE_PATTERN}) misses: give σ from 0.0001 "
                    "to 999999",
                )


def _check_dataset_keys(dataset: str, spec: Mapping[str, Any], methods: list[str]) -> None:
    """Refuse ``train_by_sigma`` and ``checkpoints`` keys outside the dataset's σ grids and
    ``train_by_method`` keys of methods the config does not run."""
    labels = {noise: [scale_label(s) for s in spec.get(key, [])] for noise, key in SIGMA_KEY.items()}
    every = list(dict.fromkeys(sum(labels.values(), [])))
    _require_in(spec.get("train_by_sigma", {}), every, ("datasets", dataset, "train_by_sigma"))
    _require_in(spec.get("train_by_method", {}), methods, ("datasets", dataset, "train_by_method"))
    for method, paths in spec.get("checkpoints", {}).items():
        _require_in(paths, labels[get_method(method).noise], ("datasets", dataset, "checkpoints", method))


def _check_grid_search(grid: Mapping[str, Any], datasets: list[str]) -> None:
    """Refuse ``grid_search.datasets`` not configured and, when the grid search runs, an empty
    interval or an n that does not divide the budget."""
    _require_in(grid.get("datasets") or [], datasets, ("grid_search", "datasets"))
    if not grid["enabled"]:
        return
    if not grid["low"] < grid["high"]:
        raise ConfigError(("grid_search",), f"grid_search: low {grid['low']} must be below high {grid['high']}")
    budget = grid["budget"]
    for n in grid["n"]:
        if budget % n:
            raise ConfigError(
                ("grid_search",),
                f"grid_search: n = {n} does not divide the budget {budget}: its grid would spend "
                f"{budget // n * n} evaluations, not Algorithm 1's (Appendix B compares at equal budget)",
            )


def check_training_options(exp) -> None:
    """Build the ``TrainConfig`` of every model ``exp`` (an :class:`~ddrs.pipeline.Experiment`)
    trains, so that an option only training would refuse (``min_sigma`` not below σ₀, a batch size
    the method's m does not divide) stops the DAG before any job, naming the run."""
    from ddrs.training.config import TrainConfig

    for run in exp.runs():
        if exp.grid.is_published(run.dataset) and run.mode == "fs":  # imported, not trained
            continue
        try:
            TrainConfig.from_mapping(exp.training.options(run))
        except ValueError as error:
            raise ValueError(f"the training options of {exp.grid.run_dir(run)}: {error}") from None


def check_algorithm1_options(exp) -> None:
    """Build Algorithm 1's settings at the σ₀ of every model ``exp`` trains or imports, so that an
    ``optimize_sigma.min_sigma`` above a σ₀ stops the DAG before any job, naming the model."""
    from ddrs.core.settings import Algorithm1Settings

    for run in exp.runs():
        try:
            sigma0 = exp.grid.noise_sigma(run.dataset, run.method, run.sigma)
            Algorithm1Settings(sigma0=sigma0, min_sigma=exp.config["optimize_sigma"]["min_sigma"])
        except ValueError as error:
            raise ValueError(f"optimize_sigma for {exp.grid.run_dir(run)}: {error}") from None


def methods_left_out(grid) -> list[str]:
    """One warning line per method of ``methods`` that no dataset of ``grid`` (a
    :class:`~ddrs.pipeline.grid.RunGrid`) runs, naming why each dataset leaves it out: published
    without a checkpoint for it, or left out by ``exclude_datasets``. (A method no configured dataset
    gives a σ grid for is refused by :func:`check_references`.)"""
    excluded = [d for d in grid.config.get("datasets") or {} if d not in grid.datasets]
    lines = []
    for method in grid.methods:
        if any(grid.sigmas(dataset, method) for dataset in grid.datasets):
            continue
        key = SIGMA_KEY[get_method(method).noise]
        reasons = [
            f"datasets.{d}: published, no checkpoints.{method}"
            if grid.is_published(d) and spec.get(key)
            else f"datasets.{d}: no {key}"
            for d, spec in grid.datasets.items()
        ] + [f"exclude_datasets: {d}" for d in excluded]
        lines.append(f"methods: {method} runs on no dataset here, so its rows are left out ({'; '.join(reasons)})")
    return lines
