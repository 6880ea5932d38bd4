"""The config schema (ddrs.pipeline.schema): its registry part is rendered from the registries and
committed current, every name a registry defines is allowed where the config names it and nothing
else, and the defaults fill a config that states only its datasets and methods."""

from __future__ import annotations

import copy
import dataclasses
import re

import pytest
import yaml
from miniature import MINIATURES, config_files, merged
from snakemake.exceptions import WorkflowError
from snakemake.utils import update_config, validate
from workflow_helpers import REPO, load_config

from ddrs.analysis.evidence import SELECTIONS
from ddrs.core.settings import MEMORY_FORMATS, PRECISIONS, SIGMA_OBJECTIVES, UNIFORM_CONVENTIONS
from ddrs.data import DATASETS
from ddrs.methods import METHODS, TRAIN_MODES
from ddrs.models import ARCHS
from ddrs.pipeline.grid import SOURCES
from ddrs.pipeline.schema import COMMAND, REGISTRIES, SCHEMA, load_schema, main, render, stale
from ddrs.pipeline.validation import schema_problems
from ddrs.training.config import C_A_RULES, FEEDS, NOISE_BATCHINGS, SIGMA_MODEL_MODES, TrainConfig

SCHEMA_PATH = REPO / SCHEMA
#: TrainConfig fields the experiment design sets per model (TrainingPlan.train_options), never the config
PER_RUN_FIELDS = {
    "dataset",
    "arch",
    "method",
    "train_mode",
    "sigma",
    "seed",
    "device",
    "data_root",
    "params",
    "init",
    "replicate",
}
#: TrainConfig fields set from optimize_sigma: Algorithm 2 runs Algorithm 1 as certification does
FROM_OPTIMIZE_SIGMA = {"sigma_objective", "sigma_clamp"}
#: TrainConfig fields that only make sense outside the workflow (the workflow converts σ itself)
NOT_IN_WORKFLOW = {"uniform_convention"}


def validated(config: dict) -> dict:
    """``config`` after Snakemake's validation (defaults filled) and the strict-integer check."""
    assert schema_problems(config, SCHEMA_PATH) == []
    validate(config, str(SCHEMA_PATH), set_default=True)
    return config


def refused(config: dict) -> str:
    """Snakemake's message refusing ``config``."""
    with pytest.raises(WorkflowError) as error:
        validate(config, str(SCHEMA_PATH), set_default=True)
    return str(error.value)


# --- the rendered part is current --------------------------------------------------------------


def test_the_committed_registry_schema_is_the_registries_rendered():
    assert stale(REPO / REGISTRIES) is None, stale(REPO / REGISTRIES)


def test_a_stale_registry_schema_names_the_command_that_renders_it(tmp_path, capsys):
    path = tmp_path / "registries.schema.json"
    path.write_text(render().replace("resnet50", "resnet49"))
    assert main(["--check", "--path", str(path)]) == 1
    assert COMMAND in capsys.readouterr().err
    assert main(["--write", "--path", str(path)]) == 0 and path.read_text() == render()
    assert main(["--check", "--path", str(path)]) == 0
    assert COMMAND in stale(tmp_path / "absent.yaml")


def test_the_hand_written_schema_restates_no_list_of_names():
    """Every allowed-name list is a $ref into the rendered file, so none can drift from its registry."""
    text = SCHEMA_PATH.read_text()
    assert "enum:" not in text
    assert "registries.schema.json#/$defs/" in text


# --- every registry name is allowed where the config names it, and nothing else ------------------


def _set(config: dict, path: str, value) -> None:
    """Put ``value`` at ``path`` (keys joined by ``/``)."""
    *parents, last = path.split("/")
    node = config
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value


def _listed(name):
    return [name]


def _keyed(value):
    return lambda name: {name: value}


DIGITS = "datasets/digits"
GAUSSIAN = [n for n, m in METHODS.items() if m.noise == "gaussian"]
PUBLISHED = [n for n, m in METHODS.items() if m.published_format]
WITH_DS = [n for n, m in METHODS.items() if "ds" in m.train_modes]
#: (where in a config, its registry's names, the key Snakemake's message names, how a name is put
#: there, names of a wider registry refused there)
PLACES = [
    ("methods", list(METHODS), "['methods'][0]", _listed, []),
    ("exclude_datasets", list(DATASETS), "['exclude_datasets'][0]", _listed, []),
    ("grid_search/datasets", list(DATASETS), "['grid_search']['datasets'][0]", _listed, []),
    ("grid_search/method", GAUSSIAN, "['grid_search']['method']", str, set(METHODS) - set(GAUSSIAN)),
    (f"{DIGITS}/arch", list(ARCHS), "['datasets']['digits']['arch']", str, []),
    (f"{DIGITS}/checkpoints", PUBLISHED, "['checkpoints']", _keyed({}), set(METHODS) - set(PUBLISHED)),
    (f"{DIGITS}/k_by_method", list(METHODS), "['k_by_method']", _keyed({}), []),
    (f"{DIGITS}/k_by_method/cohen", list(TRAIN_MODES), "['k_by_method']['cohen']", _keyed([50]), []),
    (f"{DIGITS}/train_by_method", list(METHODS), "['train_by_method']", _keyed({}), []),
    (f"{DIGITS}/ds_fine_tune", WITH_DS, "['ds_fine_tune']", _keyed({}), set(METHODS) - set(WITH_DS)),
    (f"{DIGITS}/uniform_convention", list(UNIFORM_CONVENTIONS), "['digits']['uniform_convention']", str, []),
    ("optimize_sigma/n_by_method", list(METHODS), "['n_by_method']", _keyed(8), []),
    ("uniform/convention", list(UNIFORM_CONVENTIONS), "['uniform']['convention']", str, []),
    ("optimize_sigma/objective", list(SIGMA_OBJECTIVES), "['optimize_sigma']['objective']", str, []),
    ("precision", list(PRECISIONS), "['precision']", str, []),
    ("certify/memory_format", list(MEMORY_FORMATS), "['certify']['memory_format']", str, []),
    ("statistics/selection", list(SELECTIONS), "['statistics']['selection'][0]", _listed, []),
    ("train/precision", list(PRECISIONS), "['train']['precision']", str, []),
    ("train/memory_format", list(MEMORY_FORMATS), "['train']['memory_format']", str, []),
    ("train/c_a", list(C_A_RULES), "['train']['c_a']", str, []),
    ("train/noise_batching", list(NOISE_BATCHINGS), "['train']['noise_batching']", str, []),
    ("train/feed", list(FEEDS), "['train']['feed']", str, []),
    ("train/sigma_model_mode", list(SIGMA_MODEL_MODES), "['train']['sigma_model_mode']", str, []),
] + [
    (
        f"{DIGITS}/train_by_sigma/0.25/{name}/{field.name}",
        list(field.metadata["choices"]),
        f"['train_by_sigma']['0.25']['{name}']['{field.name}']",
        str,
        [],
    )
    for name, method in METHODS.items()
    for field in dataclasses.fields(method.params)
    if "choices" in field.metadata
]


@pytest.mark.parametrize("place,names,key,put,outside", PLACES, ids=[place[0] for place in PLACES])
def test_every_name_of_its_registry_is_allowed_and_another_is_refused_naming_the_key(place, names, key, put, outside):
    for name in names:
        config = load_config()
        _set(config, place, put(name))
        validated(config)
    for name in ["not_a_registry_name", *sorted(outside)]:
        config = load_config()
        _set(config, place, put(name))
        message = refused(config)
        assert f"'{name}'" in message and key in message, message


def test_a_dataset_of_every_source_and_name_is_allowed():
    spec = load_config()["datasets"]["digits"]
    extra = {"train": {}, "published": {"checkpoints": {}}, "logs": {"logs": "given"}}
    for source in SOURCES:
        for name in DATASETS:
            validated({"datasets": {name: {**spec, "source": source, **extra[source]}}, "methods": ["cohen"]})
    assert "'svhn'" in refused({"datasets": {"svhn": spec}, "methods": ["cohen"]})
    assert "'tape'" in refused({"datasets": {"digits": {**spec, "source": "tape"}}, "methods": ["cohen"]})


def test_the_train_section_holds_the_train_config_fields_and_every_methods_hyper_parameters():
    schema, _ = load_schema(SCHEMA_PATH)
    own = set(schema["$defs"]["train"]["properties"])
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    assert own == fields - PER_RUN_FIELDS - FROM_OPTIMIZE_SIGMA - NOT_IN_WORKFLOW
    for name, method in METHODS.items():
        config = load_config()
        config["train"][name] = dataclasses.asdict(method.params())  # every field at its default
        validated(config)
        config["train"][name]["not_an_option"] = 1
        message = refused(config)
        assert "'not_an_option' was unexpected" in message and f"['train']['{name}']" in message, message
    config = load_config()
    config["train"]["not_an_option"] = 1
    assert "'not_an_option' was unexpected" in refused(config)


@pytest.mark.parametrize(
    "edit,key",
    [
        (lambda c: c["train"].update(macer={"m": 16.0}), "train.macer.m"),
        (lambda c: c["train"].update(epochs=3.0), "train.epochs"),
        (lambda c: c["datasets"]["digits"].update(train_by_sigma={"0.25": {"cohen": {"m": 2.0}}}), "cohen.m"),
    ],
)
def test_a_float_where_a_rendered_section_types_an_integer_is_refused_naming_the_key(edit, key):
    config = load_config()
    edit(config)
    validate(config, str(SCHEMA_PATH))  # JSON Schema counts 16.0 as an integer
    (problem,) = schema_problems(config, SCHEMA_PATH)
    assert re.fullmatch(f"config key [a-z_.0-9]*{key}: .* is not of type 'integer' .*decimal point.*", problem)


@pytest.mark.parametrize(
    "edit,line",
    [
        (
            lambda c: c["certify"].update(n00=100),
            "config key certify.n00: unknown key (did you mean n0?); certify allows: n0, n, alpha, batch",
        ),
        (lambda c: c["datasets"]["digits"].pop("arch"), "config key datasets.digits: 'arch' is a required property"),
        (lambda c: c["methods"].append("gauss2"), "config key methods[4]: 'gauss2' is not one of: cohen, "),
    ],
    ids=["unknown-key", "missing-key", "unknown-name"],
)
def test_each_problem_is_one_line_naming_its_config_path_and_what_is_allowed(edit, line):
    config = load_config()
    edit(config)
    (problem,) = schema_problems(config, SCHEMA_PATH)
    assert problem.startswith(line) and len(problem) < 300, problem


#: a place a config writes keys (its path, a mapping of the config there), and a key it allows
UNKNOWN_KEY_PLACES = {
    "": ("seed", lambda c: c),
    "certify": ("n0", lambda c: c["certify"]),
    "certify.sequential": ("first_look", lambda c: c["certify"].setdefault("sequential", {})),
    "train": ("epochs", lambda c: c["train"]),
    "train.macer": ("lam", lambda c: c["train"]["macer"]),
    "datasets.digits": ("sigmas", lambda c: c["datasets"]["digits"]),
    "datasets.digits.train": ("epochs", lambda c: c["datasets"]["digits"].setdefault("train", {})),
    "datasets.digits.train_by_sigma.0.25": (
        "lr",
        lambda c: c["datasets"]["digits"].setdefault("train_by_sigma", {}).setdefault("0.25", {}),
    ),
    "datasets.digits.train_by_method.cohen.cohen": (
        "m",
        lambda c: (
            c["datasets"]["digits"].setdefault("train_by_method", {}).setdefault("cohen", {}).setdefault("cohen", {})
        ),
    ),
    "statistics": ("n_boot", lambda c: c.setdefault("statistics", {})),
    "published_logs.own.mine": (
        "path",
        lambda c: (
            c.setdefault("published_logs", {})
            .setdefault("own", {})
            .setdefault("mine", {"dataset": "cifar10", "sigma": 0.5, "path": "mine.tsv"})
        ),
    ),
}


@pytest.mark.parametrize("path", list(UNKNOWN_KEY_PLACES), ids=lambda path: path or "top")
def test_an_unknown_key_at_any_depth_names_its_path_and_lists_the_keys_allowed_there(path):
    """``train`` draws its method sections in by ``$ref`` (unevaluatedProperties, whose raw message
    names no allowed key); every other section is closed by additionalProperties: each reads alike."""
    allowed, place = UNKNOWN_KEY_PLACES[path]
    config = load_config()
    place(config)[f"{allowed}x"] = 1
    (problem,) = schema_problems(config, SCHEMA_PATH)
    key = f"{path}.{allowed}x" if path else f"{allowed}x"
    where, listed = problem.split("; ", 1)[0], problem.split(" allows: ", 1)[1].split(", ")
    assert where == f"config key {key}: unknown key (did you mean {allowed}?)", problem
    assert problem.startswith(f"{where}; {path or 'the config'} allows: ") and allowed in listed, problem


def test_the_train_section_lists_its_fields_and_every_method_section():
    config = load_config()
    config["train"]["epoch"] = 3
    (problem,) = schema_problems(config, SCHEMA_PATH)
    listed = problem.split(" allows: ", 1)[1].split(", ")
    assert set(listed) == set(
        TrainConfig.__dataclass_fields__
    ) - PER_RUN_FIELDS - FROM_OPTIMIZE_SIGMA - NOT_IN_WORKFLOW | set(METHODS)


@pytest.mark.parametrize(
    "edit,line",
    [
        (
            lambda c: c["datasets"]["digits"]["sigmas"].__setitem__(0, -0.25),
            "σ must be > 0, got -0.25 at datasets.digits.sigmas[0]",
        ),
        (
            lambda c: c["datasets"]["digits"].update(uniform_sigmas=[0.5, 0]),
            "σ must be > 0, got 0 at datasets.digits.uniform_sigmas[1]",
        ),
        (lambda c: c["certify"].update(alpha=1.5), "alpha must be < 1, got 1.5 at certify.alpha"),
        (lambda c: c["certify"].update(n=0), "n must be ≥ 1, got 0 at certify.n"),
        (lambda c: c["certify"].update(batch=0), "batch must be ≥ 1, got 0 at certify.batch"),
        (lambda c: c.update(seed=2**32), "seed must be ≤ 4294967295, got 4294967296 at seed"),
        (
            lambda c: c["datasets"]["digits"].update(radii=[0.0, -1.0]),
            "radius must be ≥ 0, got -1.0 at datasets.digits.radii[1]",
        ),
        (lambda c: c["datasets"]["digits"].update(sigmas=[]), "datasets.digits.sigmas must not be empty"),
    ],
    ids=["sigma", "uniform-sigma", "alpha", "n", "batch-of-any-of", "seed", "radius", "empty-list"],
)
def test_a_violated_bound_reads_as_a_sentence_naming_the_value_and_its_path(edit, line):
    config = load_config()
    edit(config)
    assert schema_problems(config, SCHEMA_PATH) == [line]


def test_a_name_refused_by_a_schema_older_than_the_registries_names_the_command_that_renders_it(tmp_path):
    """A method added without regenerating the schema: the refusal says how to regenerate it."""
    for path in (REPO / SCHEMA).parent.iterdir():
        (tmp_path / path.name).write_text(path.read_text().replace('"macer", ', ""))
    config = load_config()
    (problem,) = schema_problems(config, tmp_path / SCHEMA.name)
    assert problem.startswith("config key methods[2]: 'macer' is not one of:") and COMMAND in problem, problem
    assert schema_problems(config, SCHEMA_PATH) == []


def test_the_relative_refs_resolve_beside_the_schema_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    validated(load_config())
    config = load_config()
    config["datasets"]["digits"]["arch"] = "resnet9"
    assert "'resnet9' is not one of" in refused(config)


def test_every_divergence_the_schema_allows_is_a_consistency_term():
    """The consistency regularizer's divergences (Jeong & Shin 2020, Table 4): each computed, others refused."""
    import torch

    from ddrs.methods import DIVERGENCES
    from ddrs.training.consistency import consistency_term

    registries = yaml.safe_load((REPO / REGISTRIES).read_text())["$defs"]["method_options"]["properties"]
    assert registries["consistency"]["properties"]["divergence"]["enum"] == list(DIVERGENCES)
    logits = torch.zeros(2, 3, 4)
    for value in DIVERGENCES:
        consistency_term(logits, value)
    with pytest.raises(ValueError, match="unknown divergence"):
        consistency_term(logits, "js")


# --- defaults ----------------------------------------------------------------------------------

#: config/config.yaml's settings the schema gives no default, and why
NO_DEFAULT = {
    "train": "left out, a training option takes TrainConfig's default (the papers'), not the embedded 10 epochs",
    "certify.batch": "left out, it is sized from the GPU's free memory (auto)",
    "sun2024.ablation_sigmas": "a σ₀ of the dataset's grid; left out, the study is not run",
    "sun2024.gradient_norm_sigma": "a σ₀ of the dataset's grid; left out, the study is not run",
}
#: defaults that differ from config/config.yaml's value, and why
OTHER_DEFAULT = {
    "sun2024.gradient_norm_skip": "config.yaml measures every 4th mnist5k input; Sun et al. all of them",
    "certify.sequential.compare": "config.yaml compares sequential with fixed-n certification; the paper ran fixed n",
    "audit.enabled": "config.yaml and digits.yaml audit table 1's certificates; the paper configs only when asked",
    "semi_elastic.enabled": "config.yaml builds table1's soundly certified data-dependent row; the paper has none",
}


def _defaults(schema: dict, prefix: str = "") -> dict:
    """Dotted key → default of every property with a ``default`` (sections' own ``{}`` left out)."""
    found = {}
    for key, sub in schema.get("properties", {}).items():
        if "default" in sub and sub["default"] != {}:
            found[prefix + key] = sub["default"]
        found |= _defaults(sub, f"{prefix}{key}.")
    return found


def _leaves(config: dict, prefix: str = "") -> dict:
    found = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            found |= _leaves(value, f"{prefix}{key}.")
        else:
            found[prefix + key] = value
    return found


def test_the_schemas_defaults_are_the_embedded_configs_values():
    embedded = load_config("config.yaml")
    schema, _ = load_schema(SCHEMA_PATH)
    defaults = _defaults(schema)
    settings = {
        key: value
        for key, value in _leaves({k: v for k, v in embedded.items() if k not in ("datasets", "methods")}).items()
        if key.split(".")[0] not in NO_DEFAULT and key not in NO_DEFAULT
    }
    assert {key: defaults.get(key) for key in settings if key not in OTHER_DEFAULT} == {
        key: value for key, value in settings.items() if key not in OTHER_DEFAULT
    }
    assert all(key in defaults and defaults[key] != settings[key] for key in OTHER_DEFAULT)
    assert not set(NO_DEFAULT) & set(defaults)
    registries = yaml.safe_load((REPO / REGISTRIES).read_text())
    for section in (schema["$defs"]["train"], registries):  # overrides reuse both: a default would reset what
        assert not _keys_named("default", section)  # they leave out to the default, not the top-level value


def _keys_named(name: str, node) -> list:
    if isinstance(node, dict):
        return [k for k in node if k == name] + [f for v in node.values() for f in _keys_named(name, v)]
    if isinstance(node, list):
        return [f for v in node for f in _keys_named(name, v)]
    return []


def test_a_config_of_datasets_and_methods_takes_every_other_setting_from_the_defaults():
    embedded = load_config("config.yaml")
    config = validated({"datasets": copy.deepcopy(embedded["datasets"]), "methods": ["cohen"]})
    assert config["train"] == {}  # TrainConfig's defaults
    for key in ("results", "data_root", "seed", "device", "precision", "gpus_per_job", "threads_per_job"):
        assert config[key] == embedded[key], key
    for section in ("uniform", "optimize_sigma", "grid_search", "statistics"):
        assert config[section] == embedded[section], section
    certify = {k: v for k, v in embedded["certify"].items() if k != "batch"}
    certify["sequential"] = {**certify["sequential"], "compare": False}  # OTHER_DEFAULT
    assert config["certify"] == certify
    assert config["max_job_minutes"] == 1440 and config["compare_with_paper"] is False


def test_the_overrides_of_the_train_section_get_no_defaults():
    """Each merges over the top-level train section field by field (TrainingPlan): a default filled
    in would silently reset the top-level value it leaves out."""
    config = load_config()
    overrides = {
        "train": {"lr": 0.5},
        "train_by_method": {"cohen": {"epochs": 3}},
        "train_by_sigma": {"0.25": {"macer": {"lam": 1.0}}},
        "ds_fine_tune": {"cohen": {"warmup_epochs": 0}},
    }
    config["datasets"]["digits"].update(copy.deepcopy(overrides))
    given = copy.deepcopy(config["train"])
    validated(config)
    assert {key: config["datasets"]["digits"][key] for key in overrides} == overrides
    assert config["train"] == given


#: the workflow's configs under config/
SHIPPED = ("config.yaml", "digits.yaml", "paper.yaml", "seed_papers.yaml", "published_logs.yaml")
#: the overlays under config/, each with the config it is given after (``--configfile A B``)
SHIPPED_OVERLAYS = {"paper_baselines_optimiser.yaml": "paper.yaml"}


def test_every_shipped_config_validates_and_a_logs_only_one_needs_no_computing_section():
    for name in SHIPPED:
        validated(load_config(name))
    for overlay, base in SHIPPED_OVERLAYS.items():
        config = load_config(base)
        update_config(config, yaml.safe_load((REPO / "config" / overlay).read_text()))
        validated(config)
    on_miniatures = {config_files(name)[-1].name: name for name in MINIATURES}
    for path in sorted((REPO / "tests" / "configs").glob("*.yaml")):
        if path.name in on_miniatures:  # an overlay on its paper configuration
            validated(merged(config_files(on_miniatures[path.name])))
            continue
        config = load_config()
        update_config(config, yaml.safe_load(path.read_text()))  # an overlay, merged as --configfile merges it
        validated(config)
    logs_only = load_config("published_logs.yaml")
    assert set(logs_only) == {"results", "seed", "datasets", "methods"}
    validated(logs_only)


def test_the_schema_read_fast_is_the_schema_snakemake_reads():
    """load_schema reads with libyaml's parser where PyYAML has one: the document is the one PyYAML's
    pure-Python parser gives, which Snakemake's ``validate`` reads."""
    schema, _ = load_schema(SCHEMA_PATH)
    assert schema == {**yaml.safe_load(SCHEMA_PATH.read_text()), "$id": SCHEMA_PATH.resolve().as_uri()}
