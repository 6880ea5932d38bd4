"""What re-runs when a config key changes, as the config schema says (the tests' reading of it,
no torch): every leaf of ``config/schema/config.schema.yaml`` carries the kinds of job it decides in its ``x-reruns``
(docs/architecture.md, "What re-runs"; the schema's head says how the keyword is written).

A job's identity, what Snakemake compares to decide a re-run, is exactly what decides its output's
rows: a model's training options (:meth:`~ddrs.pipeline.training_plan.TrainingPlan.train_options`),
a certification's settings, σ, inputs and seed (:mod:`ddrs.pipeline.job_plan`), a table's records
and builder arguments. A key re-runs the jobs of its kinds that it changes, and every job after
them; a key of no kind changes how fast jobs run, or where they run, and re-runs nothing.
``tests/test_workflow_rerun.py`` holds the schema's classes against dry runs, and fails for a
schema leaf without one.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referencing.jsonschema import DRAFT202012

from ddrs.core.settings import CERTIFY_MODES
from ddrs.pipeline.schema import SCHEMA, load_schema

if TYPE_CHECKING:
    from referencing._core import Resolver  # what Registry.resolver gives

#: the kinds of job a config key decides, each the rules that run it
JOB_KINDS = {
    "data": ("prepare_data",),
    "train": ("train", "import_checkpoint"),
    "fixed": ("certify_fixed",),
    "data_dependent": ("certify_data_dependent_*",),
    "grid_search": ("certify_grid_search",),
    "sequential": ("certify_sequential",),
    "monte_carlo": ("certify_monte_carlo",),
    "semi_elastic": ("certify_semi_elastic",),
    "gradient_norms": ("gradient_norms",),
    "audit": ("audit_fixed", "audit_data_dependent"),
    "published": ("fetch_published_logs", "published_dataset_logs"),
    "tables": ("*",),  # every other rule: one per catalogue entry (ddrs.pipeline.catalogue)
}

#: the schema keyword that holds a key's kinds: a list of :data:`JOB_KINDS`, or a mapping of each
#: ``certify.mode`` to one
KEYWORD = "x-reruns"

#: the schema of this checkout
_SCHEMA = Path(__file__).resolve().parents[1] / SCHEMA

#: a key's class: the kinds of job it decides under each ``certify.mode``
Class = Mapping[str, frozenset[str]]


def schema_classes(schema: str | Path = _SCHEMA) -> dict[str, Class | None]:
    """Every leaf of the config schema at ``schema``, dotted with ``*`` for a mapping's keys (a key
    whose value is not a mapping of named keys), and its class (None: the schema gives it none).

    A leaf's ``x-reruns`` is its own, or else the nearest one of the objects around it; at a
    ``$ref`` the site's comes before the definition's. ``$ref``s are followed by the resolver of the
    registry that validates the config (:func:`ddrs.pipeline.schema.load_schema`)."""
    contents, registry = load_schema(schema)
    root = DRAFT202012.create_resource(contents)
    resolver = registry.with_resource(contents["$id"], root).resolver(base_uri=contents["$id"])
    return {leaf: _class(reruns, leaf, schema) for leaf, reruns in _walk(contents, resolver, "", None)}


def _walk(node: Mapping[str, Any], resolver: Resolver, path: str, inherited: Any) -> Iterator[tuple[str, Any]]:
    """The leaves at and under ``node`` (at config path ``path``), each with its ``x-reruns``;
    ``inherited`` is that of the objects around it."""
    own = node.get(KEYWORD)
    while "$ref" in node and "properties" not in node:
        resolved = resolver.lookup(node["$ref"])
        node, resolver = resolved.contents, resolved.resolver
        own = node.get(KEYWORD) if own is None else own
    reruns = inherited if own is None else own
    properties = _properties(node, resolver, reruns)
    extra = node.get("additionalProperties")
    if properties:
        for key, (value, where, around) in properties.items():
            yield from _walk(value, where, f"{path}.{key}" if path else key, around)
    elif isinstance(extra, Mapping) and node.get("type") == "object":
        yield from _walk(extra, resolver, f"{path}.*", reruns)
    else:
        yield path, reruns


def _properties(node: Mapping[str, Any], resolver: Resolver, reruns: Any) -> dict[str, tuple]:
    """The named properties of ``node`` and of the schema it ``$ref``s beside them: each with the
    resolver of its document and the ``x-reruns`` around it."""
    properties = {key: (value, resolver, reruns) for key, value in node.get("properties", {}).items()}
    if "$ref" in node and "properties" in node:
        resolved = resolver.lookup(node["$ref"])
        around = resolved.contents.get(KEYWORD, reruns) if node.get(KEYWORD) is None else reruns
        properties = {**_properties(resolved.contents, resolved.resolver, around), **properties}
    return properties


def _class(reruns: Any, leaf: str, schema: str | Path) -> Class | None:
    """``reruns`` as the kinds under each mode; a ``ValueError`` naming ``leaf`` for a kind or mode
    that does not exist."""
    if reruns is None:
        return None
    by_mode = reruns if isinstance(reruns, Mapping) else dict.fromkeys(CERTIFY_MODES, reruns)
    if set(by_mode) != set(CERTIFY_MODES) or any(set(kinds) - set(JOB_KINDS) for kinds in by_mode.values()):
        raise ValueError(
            f"{schema}: {leaf}'s {KEYWORD} {reruns!r}: give a list of {list(JOB_KINDS)}, or a mapping of each "
            f"certify.mode {list(CERTIFY_MODES)} to one"
        )
    return {mode: frozenset(kinds) for mode, kinds in by_mode.items()}


@cache
def _classes() -> dict[str, Class | None]:
    return schema_classes()


def kinds_of(leaf: str, mode: str | None = None) -> frozenset[str]:
    """The kinds of job the config leaf ``leaf`` (as :func:`schema_classes` spells it) decides
    under ``certify.mode`` ``mode`` (None: under either); a ``KeyError`` naming it when the schema
    gives it no class."""
    by_mode = _classes().get(leaf)
    if by_mode is None:
        raise KeyError(f"config key {leaf} has no {KEYWORD} in {SCHEMA}: say which kinds of job it decides")
    return by_mode[mode] if mode is not None else frozenset().union(*by_mode.values())


def kind_of_rule(rule: str) -> str:
    """The kind of job a workflow rule runs (:data:`JOB_KINDS`)."""
    return next(kind for kind, rules in JOB_KINDS.items() if any(fnmatch.fnmatchcase(rule, r) for r in rules))
