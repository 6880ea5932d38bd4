"""What a config edit re-runs, from dry runs against a finished results tree (docs/architecture.md,
"What re-runs"): a job runs again exactly when a setting that decides its output's rows changes,
and then every job after it; a setting that changes only speed re-runs nothing."""

from __future__ import annotations

import dataclasses
import itertools
import shutil

import pytest
import yaml
from reruns import JOB_KINDS, KEYWORD, kind_of_rule, kinds_of, schema_classes
from workflow_helpers import REPO, finished_tree, load_config, refusal, scheduled, snakemake, write_config

from ddrs.training.config import SPEED_FIELDS, TrainConfig

SCHEMA = REPO / "config" / "schema" / "config.schema.yaml"

_OVERLAYS = itertools.count()


#: the finished trees of config/digits.yaml, by ``certify.mode``: (workdir, config path)
_TREES: dict[str, tuple] = {}


def finished_digits(tmp_path_factory, mode: str) -> tuple:
    """A finished tree of config/digits.yaml under ``certify.mode`` ``mode``, made once per module."""
    if mode not in _TREES:
        workdir = tmp_path_factory.mktemp(f"finished_{mode}")
        config = load_config()
        config["certify"]["mode"] = mode
        path = write_config(workdir, config)
        finished_tree(workdir, path)
        _TREES[mode] = workdir, path
    return _TREES[mode]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A finished tree of config/digits.yaml (``certify.mode: fixed``, its own), and that config."""
    return finished_digits(tmp_path_factory, "fixed")


@pytest.fixture(scope="module", params=["fixed", "sequential"])
def mode_tree(request, tmp_path_factory):
    """A finished tree of config/digits.yaml under each ``certify.mode``, that config and the mode."""
    return *finished_digits(tmp_path_factory, request.param), request.param


def rerun(tree, overlay: dict, *args: str):
    """The jobs a dry run schedules with ``overlay`` merged over the tree's config."""
    workdir, config = tree
    return scheduled(workdir, config, write_config(workdir, overlay, name=f"overlay{next(_OVERLAYS)}.yaml"), args=args)


def forced(tree, *outputs: str):
    """The jobs that re-making ``outputs`` re-runs under the tree's own config: them and every job after them."""
    workdir, config = tree
    return {job.output for job in scheduled(workdir, config, args=("--forcerun", *outputs))}


def sources(jobs):
    """The jobs scheduled for a reason of their own (not only a job before them)."""
    return {(job.rule, job.output) for job in jobs if job.source}


def test_a_finished_tree_under_its_own_config_schedules_nothing(tree):
    workdir, config = tree
    assert scheduled(workdir, config) == []


@pytest.mark.parametrize("suffix", [".csv", ".png", ".tsv"])
def test_an_output_of_a_finished_tree_after_configfile_is_refused_in_one_line(tree, suffix):
    """Once the run has made a target, Snakemake would read it as one more config file ("keys at top
    level", or a table parsed as YAML): it is refused before that, naming both fixes."""
    workdir, config = tree
    target = str(next((workdir / "results").rglob(f"*{suffix}")).relative_to(workdir))
    (line,) = refusal(snakemake(workdir, "-n", "--configfile", str(config), target))
    assert line.startswith(f"--configfile {target}: a file under results/ (a workflow output), read as a config"), line
    assert f"(snakemake {target} --configfile config.yaml)" in line
    assert f"(snakemake --configfile config.yaml -- {target})" in line


def test_training_options_retrain_every_model_and_what_follows_from_it(tree):
    jobs = rerun(tree, {"train": {"epochs": 3, "lr": 0.5}})
    models = {job.output for job in jobs if job.rule == "train"}
    assert len(models) == 21 + 12  # every trained model of digits.yaml: 21, and Cohen's runs 1 and 2
    assert sources(jobs) == {("train", model) for model in models}
    assert {job.output for job in jobs} == forced(tree, *models)


def test_a_sigmas_training_options_retrain_only_the_models_of_that_sigma(tree):
    jobs = rerun(tree, {"datasets": {"digits": {"train_by_sigma": {"0.25": {"epochs": 3}}}}})
    models = {output for rule, output in sources(jobs)}
    assert {rule for rule, _ in sources(jobs)} == {"train"}
    assert models and all("/sigma0.25/" in model or "/sigma0.25_r" in model for model in models)
    assert len(models) == 7 + 4  # cohen, smoothadv, macer fs and ds; uniform fs; Cohen's fs and ds of runs 1, 2
    assert {job.output for job in jobs} == forced(tree, *models)


def test_an_algorithm2_setting_retrains_only_the_ds_models(tree):
    workdir, _ = tree
    jobs = rerun(tree, {"train": {"k": 2, "sigma_lr": 0.001, "warmup_epochs": 2}})
    models = {output for _, output in sources(jobs)}
    assert {rule for rule, _ in sources(jobs)} == {"train"}
    assert models == {str(path.relative_to(workdir)) for path in workdir.glob("results/*/*/ds/*/model.pt")}
    assert {job.output for job in jobs} == forced(tree, *models)


def test_a_methods_hyper_parameter_retrains_only_that_methods_models(tree):
    jobs = rerun(tree, {"train": {"macer": {"lam": 6.0}}})
    assert {rule for rule, _ in sources(jobs)} == {"train"}
    assert {output.split("/")[2] for _, output in sources(jobs)} == {"macer"}
    assert len(sources(jobs)) == 6  # fs and ds at three σ


@pytest.mark.parametrize(
    "overlay",
    [
        {"certify": {"batch": 64}},
        {"certify": {"batch": "auto", "memory_format": "channels_last", "compile": True}},
        {"train": {"num_workers": 2, "activation_checkpoints": 1}},
    ],
    ids=["certify.batch", "certify machine", "train speed"],
)
def test_a_setting_that_changes_only_speed_reruns_nothing(tree, overlay):
    assert rerun(tree, overlay) == []


#: a workflow of one rule with the two kinds of param the rules use: one of the wildcards alone (the
#: documents and training options), one that also reads the job's threads or resources (the speed)
PARAMS_WORKFLOW = """
def speed(wildcards, threads):
    return config["speed"]


def speed_of_resources(wildcards, resources):
    return config["speed"]


rule made:
    output:
        "made.txt",
    threads: 1
    params:
        compared=lambda wildcards: config["compared"],
        speed=speed,
        speed_of_resources=speed_of_resources,
    shell:
        "echo {params.compared} > {output}"
"""


def test_the_installed_snakemake_compares_a_param_of_the_wildcards_and_not_one_of_threads_or_resources(tmp_path):
    """The workflow leaves speed out of what Snakemake compares by handing it in a param function that
    reads the job's threads or resources, which Snakemake counts as derived; no public option says
    so, so this pins the installed Snakemake's behaviour (an upgrade that changes it fails here)."""
    (tmp_path / "Snakefile").write_text(PARAMS_WORKFLOW)

    def run(*args: str, compared: int = 1, speed: int = 1):
        config = write_config(tmp_path, {"compared": compared, "speed": speed}, name=f"c{compared}{speed}.yaml")
        return snakemake(tmp_path, *args, config=config, snakefile=tmp_path / "Snakefile")

    assert run("--cores", "1").returncode == 0
    assert "Nothing to be done" in run("-n", speed=2).stdout + run("-n", speed=2).stderr
    changed = run("-n", compared=2)
    assert "rule made:" in changed.stdout and "Params have changed since last execution" in changed.stdout


def test_a_sequential_setting_reruns_only_the_sequential_jobs_and_their_tables(tmp_path_factory):
    """With the sequential comparison on (config.yaml's default), a change of the stopping rule
    re-runs the sequential logs and what reads them; every fixed-n, σ-search and training job keeps."""
    workdir = tmp_path_factory.mktemp("sequential")
    config = load_config()
    config["certify"]["sequential"] = {"compare": True}
    path = write_config(workdir, config)
    finished_tree(workdir, path)
    jobs = scheduled(
        workdir, path, write_config(workdir, {"certify": {"sequential": {"sequence": "betting_cp"}}}, "o.yaml")
    )
    assert {rule for rule, _ in sources(jobs)} == {"certify_sequential"}
    assert len(sources(jobs)) == 3  # cohen's fixed-σ models at three σ
    assert {job.output for job in jobs} == {
        job.output for job in scheduled(workdir, path, args=("--forcerun", "certify_sequential"))
    }
    assert not {job.rule for job in jobs} & {"train", "certify_fixed", "certify_grid_search"}


def test_the_radii_rerun_only_tables_and_figures(tree):
    """Under fixed mode (and without the sequential comparison) no certification reads the radii."""
    jobs = rerun(tree, {"datasets": {"digits": {"radii": [0.0, 0.5, 1.0]}}})
    assert jobs and {job.rule for job in jobs}.isdisjoint({"prepare_data", "train"})
    assert not any(job.rule.startswith("certify") for job in jobs)


@pytest.mark.parametrize("leaf", ["certify.sequential.growth", "datasets.*.radii"])
def test_under_sequential_mode_the_stopping_rule_and_the_radii_recertify(mode_tree, leaf):
    """Each certification's document holds the stopping rule and the radius grid it stops on, so
    under ``certify.mode: sequential`` these keys re-run every certification that reads them, and
    under fixed mode none (the digits tree has no sequential comparison)."""
    workdir, config, mode = mode_tree
    overlay = {"certify.sequential.growth": {"certify": {"sequential": {"growth": 1.2}}}}.get(
        leaf, {"datasets": {"digits": {"radii": [0.0, 0.5, 1.0]}}}
    )
    jobs = scheduled(workdir, config, write_config(workdir, overlay, name=f"overlay{next(_OVERLAYS)}.yaml"))
    found = {kind_of_rule(rule) for rule, _ in sources(jobs)}
    # digits.yaml: no sequential comparison; its Monte Carlo re-certifications certify as the mode says
    certifies = {"fixed", "data_dependent", "grid_search", "monte_carlo"}
    assert found - {"tables"} == (certifies if mode == "sequential" else set())
    assert found <= kinds_of(leaf, mode)


# --- the classification of every config key (the schema's x-reruns, tests/reruns.py) ---

#: one edit per config leaf that the digits tree can show (leaf, overlay, whether nothing need run:
#: the edit only removes outputs, or the tree holds no job of the key's class, as the stopping rule's
#: keys without sequential jobs, tested on a tree with them above); the published_logs keys need a
#: published tree, and sun2024.gradient_norm_skip a tree with gradient norms, so they are classified
#: but not edited here
EDITS = [
    ("results", {"results": "elsewhere"}, False),
    ("data_root", {"data_root": "data2"}, False),
    ("seed", {"seed": 1}, False),
    ("device", {"device": "cpu"}, False),
    ("precision", {"precision": "bf16"}, False),
    ("gpus_per_job", {"gpus_per_job": 1}, False),
    ("max_job_minutes", {"max_job_minutes": 20}, False),
    ("threads_per_job", {"threads_per_job": 2}, False),
    ("compare_with_paper", {"compare_with_paper": True}, False),
    ("replication.runs", {"replication": {"runs": 4}}, False),
    ("replication.methods", {"replication": {"methods": ["cohen", "macer"]}}, False),
    ("replication.monte_carlo", {"replication": {"monte_carlo": 2}}, False),
    ("replication.effect_acr", {"replication": {"effect_acr": 0.05}}, False),
    ("replication.effect_accuracy", {"replication": {"effect_accuracy": 5.0}}, False),
    ("statistics.alpha", {"statistics": {"alpha": 0.1}}, False),
    ("statistics.n_boot", {"statistics": {"n_boot": 100}}, False),
    ("statistics.selection", {"statistics": {"selection": ["test"]}}, True),
    ("sun2024.gradient_norm_sigma", {"sun2024": {"gradient_norm_sigma": 0.25}}, False),
    ("methods", {"methods": ["cohen", "smoothadv", "macer", "uniform", "consistency"]}, False),
    ("uniform.convention", {"uniform": {"convention": "half_width"}}, False),
    ("datasets.*.common_inputs", {"datasets": {"digits": {"common_inputs": True}}}, False),
    ("datasets.*.arch", {"datasets": {"digits": {"arch": "mlp256"}}}, False),
    ("datasets.*.sigmas", {"datasets": {"digits": {"sigmas": [0.12, 0.25, 0.5, 1.0]}}}, False),
    ("datasets.*.uniform_sigmas", {"datasets": {"digits": {"uniform_sigmas": [0.25, 0.5, 1.0, 2.0]}}}, False),
    ("datasets.*.test_skip", {"datasets": {"digits": {"test_skip": 4}}}, False),
    ("datasets.*.test_max", {"datasets": {"digits": {"test_max": 100}}}, False),
    ("datasets.*.radii", {"datasets": {"digits": {"radii": [0.0, 0.5, 1.0]}}}, False),
    ("datasets.*.l1_radii", {"datasets": {"digits": {"l1_radii": [0.0, 1.0]}}}, False),
    ("datasets.*.k", {"datasets": {"digits": {"k": [50, 100]}}}, False),
    ("datasets.*.k_by_method.*.*", {"datasets": {"digits": {"k_by_method": {"cohen": {"ds": [50, 300]}}}}}, False),
    ("datasets.*.uniform_convention", {"datasets": {"digits": {"uniform_convention": "half_width"}}}, False),
    ("train.epochs", {"train": {"epochs": 3}}, False),
    ("train.macer.lam", {"train": {"macer": {"lam": 6.0}}}, False),
    ("train.num_workers", {"train": {"num_workers": 2}}, False),
    ("train.pin_memory", {"train": {"pin_memory": True}}, False),
    ("train.activation_checkpoints", {"train": {"activation_checkpoints": 1}}, False),
    ("datasets.*.train.lr", {"datasets": {"digits": {"train": {"lr": 0.1}}}}, False),
    (
        "datasets.*.train_by_method.*.epochs",
        {"datasets": {"digits": {"train_by_method": {"cohen": {"epochs": 3}}}}},
        False,
    ),
    ("datasets.*.train_by_sigma.*.epochs", {"datasets": {"digits": {"train_by_sigma": {"0.5": {"epochs": 3}}}}}, False),
    ("datasets.*.ds_fine_tune.*.epochs", {"datasets": {"digits": {"ds_fine_tune": {"cohen": {"epochs": 3}}}}}, False),
    ("certify.n0", {"certify": {"n0": 50}}, False),
    ("certify.n", {"certify": {"n": 5000}}, False),
    ("certify.alpha", {"certify": {"alpha": 0.01}}, False),
    ("certify.batch", {"certify": {"batch": 64}}, False),
    ("certify.memory_format", {"certify": {"memory_format": "channels_last"}}, False),
    ("certify.compile", {"certify": {"compile": True}}, False),
    ("certify.mode", {"certify": {"mode": "sequential"}}, False),
    ("certify.sequential.sequence", {"certify": {"sequential": {"sequence": "betting_cp"}}}, True),
    ("certify.sequential.checks", {"certify": {"sequential": {"checks": "look"}}}, True),
    ("certify.sequential.futility", {"certify": {"sequential": {"futility": 0.01}}}, True),
    ("certify.sequential.first_look", {"certify": {"sequential": {"first_look": 16}}}, True),
    ("certify.sequential.growth", {"certify": {"sequential": {"growth": 1.2}}}, True),
    ("certify.sequential.acr_fraction", {"certify": {"sequential": {"acr_fraction": 0.1}}}, True),
    ("certify.sequential.compare", {"certify": {"sequential": {"compare": True}}}, False),
    ("optimize_sigma.k", {"optimize_sigma": {"k": [50, 100, 300]}}, False),
    ("optimize_sigma.objective", {"optimize_sigma": {"objective": "fixed_class"}}, False),
    ("optimize_sigma.clamp", {"optimize_sigma": {"clamp": 0.05}}, False),
    ("optimize_sigma.n", {"optimize_sigma": {"n": 2}}, False),
    ("optimize_sigma.n_by_method.*", {"optimize_sigma": {"n_by_method": {"macer": 4}}}, False),
    ("optimize_sigma.lr", {"optimize_sigma": {"lr": 0.001}}, False),
    ("optimize_sigma.n0", {"optimize_sigma": {"n0": 50}}, False),
    ("optimize_sigma.min_sigma", {"optimize_sigma": {"min_sigma": 0.02}}, False),
    ("optimize_sigma.batch", {"optimize_sigma": {"batch": 8}}, False),
    ("audit.enabled", {"audit": {"enabled": False}}, True),
    ("audit.steps", {"audit": {"steps": 3}}, False),
    ("audit.orders", {"audit": {"orders": 3}}, False),
    ("grid_search.enabled", {"grid_search": {"enabled": False}}, True),
    ("grid_search.method", {"grid_search": {"method": "cohen"}}, False),
    ("grid_search.n", {"grid_search": {"n": [1, 2, 4, 10, 20]}}, False),
    ("grid_search.budget", {"grid_search": {"budget": 100}}, False),
    ("grid_search.low", {"grid_search": {"low": 0.2}}, False),
    ("grid_search.high", {"grid_search": {"high": 0.9}}, False),
    ("semi_elastic.rate", {"semi_elastic": {"rate": 0.2}}, False),
]


def test_every_config_key_has_a_class():
    """A key added to the schema without an x-reruns of its own or around it fails here, naming it."""
    classes = schema_classes(SCHEMA)
    assert [leaf for leaf, by_mode in classes.items() if by_mode is None] == []
    assert len(classes) > 400  # every leaf: the train sections' fields and method options included


#: where a ``train`` section ($defs/train) sits in the config
TRAIN_SECTIONS = (
    "train",
    "datasets.*.train",
    "datasets.*.ds_fine_tune.*",
    "datasets.*.train_by_method.*",
    "datasets.*.train_by_sigma.*",
)


def test_a_train_sections_keys_decide_training_but_the_speed_fields():
    """A train section's keys are TrainConfig fields, which decide what a model learns but for
    training.config.SPEED_FIELDS (handed apart, `ddrs train --speed`), and one section per method,
    whose hyper-parameters all do: the schema's x-reruns and the code say the same, in every section."""
    schema = yaml.safe_load(SCHEMA.read_text())
    fields = {field.name for field in dataclasses.fields(TrainConfig)} & set(schema["$defs"]["train"]["properties"])
    assert SPEED_FIELDS <= fields
    leaves = schema_classes(SCHEMA)
    for section in TRAIN_SECTIONS:
        for field in fields:
            assert kinds_of(f"{section}.{field}") == (frozenset() if field in SPEED_FIELDS else {"train"}), field
        depth = section.count(".") + 1
        hyper_parameters = [leaf for leaf in leaves if leaf.startswith(f"{section}.") and leaf.count(".") > depth]
        assert hyper_parameters and all(kinds_of(leaf) == {"train"} for leaf in hyper_parameters)


def test_a_class_of_no_job_kind_is_refused_naming_the_key(tmp_path):
    shutil.copy(SCHEMA.parent / "registries.schema.json", tmp_path)
    text = SCHEMA.read_text()
    assert "low: {x-reruns: [grid_search]," in text
    (tmp_path / SCHEMA.name).write_text(text.replace("low: {x-reruns: [grid_search],", "low: {x-reruns: [grid_serch],"))
    with pytest.raises(ValueError, match=rf"grid_search\.low's {KEYWORD} \['grid_serch'\]: give a list of \['data'"):
        schema_classes(tmp_path / SCHEMA.name)


def test_every_class_of_key_is_edited_by_the_dry_run_test():
    """The dry-run test edits at least one key of every class the digits tree can show."""
    leaves = schema_classes(SCHEMA)
    edited = {kinds_of(leaf) for leaf, _, _ in EDITS}
    shown = {kinds_of(leaf) for leaf in leaves} - {
        kinds_of(leaf) for leaf in leaves if leaf.startswith(("published_logs.", "sun2024.gradient"))
    }
    assert shown <= edited | {frozenset(JOB_KINDS)} and frozenset(JOB_KINDS) in edited


@pytest.mark.parametrize(("leaf", "overlay", "quiet"), EDITS, ids=[leaf for leaf, _, _ in EDITS])
def test_a_config_edit_reruns_only_jobs_of_its_keys_class(mode_tree, leaf, overlay, quiet):
    """Under each ``certify.mode``, every job an edit schedules for a reason of its own is of the
    key's kinds in that mode (the rest follow from them), and an edit that adds or changes outputs
    is noticed; a speed key schedules nothing. A job after one that re-runs shows only that reason
    (Snakemake's), so a kind of the class may appear as a follower alone. The stopping rule's keys
    are quiet on the digits tree under fixed mode only (no sequential comparison there)."""
    workdir, config, mode = mode_tree
    quiet = quiet and not (mode == "sequential" and leaf.startswith("certify.sequential."))
    if leaf == "certify.mode":  # the other mode than the tree's
        overlay = {"certify": {"mode": {"fixed": "sequential", "sequential": "fixed"}[mode]}}
    jobs = scheduled(workdir, config, write_config(workdir, overlay, name=f"overlay{next(_OVERLAYS)}.yaml"))
    found = {kind_of_rule(rule) for rule, _ in sources(jobs)}
    kinds = kinds_of(leaf, mode)
    assert found <= kinds, f"{leaf} re-runs {sorted(found - kinds)} jobs, not of its class {sorted(kinds)}"
    if not kinds:
        assert jobs == []
    elif not quiet:
        assert found, f"{leaf} (class {sorted(kinds)}) changed and nothing re-runs"
