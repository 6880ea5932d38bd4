"""The config schema's registry part, rendered from the registries, and the schema loaded with it.

``config/schema/config.schema.yaml`` is written by hand. Every list of names it allows (methods,
datasets, architectures, the settings' choices) and every method's ``train.<method>`` section is a
relative ``$ref`` into ``config/schema/registries.schema.json``, which this module renders from
:data:`ddrs.methods.METHODS` and its hyper-parameter dataclasses (field names, JSON types from the
annotations, enums from a field's ``choices`` metadata), :data:`ddrs.data.DATASETS`,
:data:`ddrs.models.ARCHS` and the settings' choice constants. No registry is restated by hand:
after changing one, regenerate the file from the repository root::

    python -m ddrs.pipeline.schema --write

(``--check`` exits 1 when the committed file is stale, as ``tests/test_schema.py`` fails).
:func:`load_schema` gives the hand-written schema with a registry that resolves its relative refs
from local files, as Snakemake's ``validate`` does.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

#: the hand-written schema (Snakefile ``SCHEMA``), relative to the repository root
SCHEMA = Path("config/schema/config.schema.yaml")
#: the rendered one, JSON rather than YAML: Snakemake's ``validate`` reads it once per ``$ref`` into
#: it, and parses JSON in a millisecond where its YAML loader takes a tenth of a second
REGISTRIES = Path("config/schema/registries.schema.json")
#: the command that rewrites :data:`REGISTRIES`
COMMAND = "python -m ddrs.pipeline.schema --write"
_COMMENT = f"GENERATED from the registries by `{COMMAND}` (ddrs.pipeline.schema): do not edit"

#: JSON types of the annotations a hyper-parameter field may have
_JSON_TYPES = {int: "integer", float: "number", bool: "boolean", str: "string", type(None): "null"}


def _enum(values, source: str) -> dict[str, Any]:
    return {"enum": list(values), "description": f"one of {source}"}


def name_lists() -> dict[str, dict[str, Any]]:
    """Each list of names the config may use, as an ``enum`` definition naming its registry."""
    from ddrs.analysis.evidence import SELECTIONS
    from ddrs.core.settings import (
        CERTIFY_MODES,
        CHECKS,
        MEMORY_FORMATS,
        PRECISIONS,
        SEQUENCES,
        SIGMA_OBJECTIVES,
        UNIFORM_CONVENTIONS,
    )
    from ddrs.data import DATASETS
    from ddrs.methods import METHODS, TRAIN_MODES
    from ddrs.models import ARCHS
    from ddrs.pipeline.grid import SOURCES
    from ddrs.training.config import C_A_RULES, FEEDS, LR_DROP_DELAYS, NOISE_BATCHINGS, SIGMA_MODEL_MODES

    def methods(keep) -> list[str]:
        return [name for name, method in METHODS.items() if keep(method)]

    return {
        "method": _enum(METHODS, "ddrs.methods.METHODS"),
        "gaussian_method": _enum(methods(lambda m: m.noise == "gaussian"), "the methods of Gaussian noise"),
        "published_method": _enum(
            methods(lambda m: m.published_format is not None), "the methods with published checkpoints"
        ),
        "ds_method": _enum(methods(lambda m: "ds" in m.train_modes), "the methods with a ds training mode"),
        "train_mode": _enum(TRAIN_MODES, "ddrs.methods.TRAIN_MODES"),
        "dataset": _enum(DATASETS, "ddrs.data.DATASETS"),
        "arch": _enum(ARCHS, "ddrs.models.ARCHS"),
        "source": _enum(SOURCES, "ddrs.pipeline.grid.SOURCES"),
        "uniform_convention": _enum(UNIFORM_CONVENTIONS, "ddrs.core.settings.UNIFORM_CONVENTIONS"),
        "sigma_objective": _enum(SIGMA_OBJECTIVES, "ddrs.core.settings.SIGMA_OBJECTIVES"),
        "precision": _enum(PRECISIONS, "ddrs.core.settings.PRECISIONS"),
        "memory_format": _enum(MEMORY_FORMATS, "ddrs.core.settings.MEMORY_FORMATS"),
        "certify_mode": _enum(CERTIFY_MODES, "ddrs.core.settings.CERTIFY_MODES"),
        "confidence_sequence": _enum(SEQUENCES, "ddrs.core.settings.SEQUENCES"),
        "sequential_checks": _enum(CHECKS, "ddrs.core.settings.CHECKS"),
        "c_a": _enum(C_A_RULES, "ddrs.training.config.C_A_RULES"),
        "noise_batching": _enum(NOISE_BATCHINGS, "ddrs.training.config.NOISE_BATCHINGS"),
        "feed": _enum(FEEDS, "ddrs.training.config.FEEDS"),
        "sigma_model_mode": _enum(SIGMA_MODEL_MODES, "ddrs.training.config.SIGMA_MODEL_MODES"),
        "lr_drop": _enum(LR_DROP_DELAYS, "ddrs.training.config.LR_DROP_DELAYS"),
        "selection": _enum(SELECTIONS, "ddrs.analysis.evidence.SELECTIONS"),
    }


def _json_type(annotation: Any, where: str) -> dict[str, Any]:
    """The JSON schema of a field's annotation: a scalar, an optional scalar or a list of scalars."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType) and all(arg in _JSON_TYPES for arg in args):
        return {"type": [_JSON_TYPES[arg] for arg in args]}
    if origin is list and len(args) == 1 and args[0] in _JSON_TYPES:
        return {"type": "array", "items": {"type": _JSON_TYPES[args[0]]}}
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}
    raise TypeError(f"{where}: no JSON type for the annotation {annotation!r}; annotate it int, float, bool or str")


def options_schema(params: type) -> dict[str, Any]:
    """The ``train.<method>`` section of a hyper-parameter dataclass: its fields, typed by their
    annotations, with the field's ``choices`` as an enum. The values' ranges are the dataclass's
    own checks, and its defaults apply to a field left out (no schema default: Snakemake would fill
    it into every override section too)."""
    hints = typing.get_type_hints(params)
    properties = {}
    for field in dataclasses.fields(params):
        where = f"{params.__name__}.{field.name}"
        schema = _json_type(hints[field.name], where)
        if "choices" in field.metadata:
            schema = {"enum": list(field.metadata["choices"])}
        description = field.metadata.get("help", "")
        if field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING:
            default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
            description = f"{description} (default: {json.dumps(default, ensure_ascii=False)})".lstrip()
        schema["description"] = description
        properties[field.name] = schema
    summary = " ".join((params.__doc__ or params.__name__).strip().split("\n\n")[0].split())
    return {"type": "object", "additionalProperties": False, "description": summary, "properties": properties}


def method_options() -> dict[str, Any]:
    """The method sections of ``train``: one per :data:`ddrs.methods.METHODS` entry."""
    from ddrs.methods import METHODS

    return {
        "description": "one section per method (ddrs.methods.METHODS) holding its hyper-parameters",
        "properties": {name: options_schema(method.params) for name, method in METHODS.items()},
    }


def render() -> str:
    """The text of :data:`REGISTRIES`, from the registries as imported now."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": _COMMENT,
        "title": "DDRS pipeline configuration: what the registries define (config.schema.yaml refers to it)",
        "$defs": {**name_lists(), "method_options": method_options()},
    }
    return _json(schema) + "\n"


def _json(node: Any, indent: str = "") -> str:
    """``node`` as indented JSON with each list on one line (the name lists read as the enums they are)."""
    if not isinstance(node, dict) or not node:
        return json.dumps(node, ensure_ascii=False)
    inner = indent + "  "
    items = [f"{inner}{json.dumps(key)}: {_json(value, inner)}" for key, value in node.items()]
    return "{\n" + ",\n".join(items) + f"\n{indent}}}"


def stale(path: str | Path = REGISTRIES) -> str | None:
    """``None`` when ``path`` holds :func:`render`'s text, else what is wrong and the command to run."""
    path = Path(path)
    if not path.is_file():
        return f"{path} does not exist: run `{COMMAND}` from the repository root"
    if path.read_text() != render():
        return f"{path} does not match the registries (a method, dataset or option changed): run `{COMMAND}`"
    return None


#: PyYAML's libyaml parser where it has one: the same documents, read about 10× faster (the schema is
#: read by every Snakemake run, hundreds of dry runs in the tests)
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read_yaml(path: Path) -> Any:
    return yaml.load(path.read_text(), Loader=_YAML_LOADER)


def _retrieve(uri: str) -> Resource:
    """A schema a ``$ref`` names, read from its local file (JSON, or YAML)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        raise ValueError(f"config schema $ref {uri!r}: only local files are read")
    path = Path(url2pathname(parsed.path))
    contents = json.loads(path.read_text()) if path.suffix == ".json" else _read_yaml(path)
    return Resource.from_contents(contents, default_specification=DRAFT202012)


def load_schema(path: str | Path = SCHEMA) -> tuple[dict[str, Any], Registry]:
    """The schema at ``path``, with its file URI as ``$id`` so that relative ``$ref``s resolve
    beside it, and a registry reading the files they name."""
    path = Path(path).resolve()
    schema = {**_read_yaml(path), "$id": path.as_uri()}
    return schema, Registry(retrieve=_retrieve)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ddrs.pipeline.schema", description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="rewrite the file from the registries")
    action.add_argument("--check", action="store_true", help="exit 1 when the file does not match the registries")
    parser.add_argument("--path", type=Path, default=REGISTRIES, help=f"the rendered schema (default: {REGISTRIES})")
    args = parser.parse_args(argv)
    if args.write:
        from ddrs.io import atomic_path

        with atomic_path(args.path) as tmp:
            Path(tmp).write_text(render())
        print(f"wrote {args.path}")
        return 0
    problem = stale(args.path)
    if problem:
        print(problem, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
