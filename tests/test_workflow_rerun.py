"""What a config edit re-runs, from dry runs against a finished results tree (docs/architecture.md,
"What re-runs"): a job runs again exactly when a setting that decides its output's rows changes,
and then every job after it; a setting that changes only speed re-runs nothing."""

from __future__ import annotations

import itertools

import pytest
from workflow_helpers import finished_tree, load_config, scheduled, write_config

_OVERLAYS = itertools.count()


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A finished tree of config/digits.yaml, and that config."""
    workdir = tmp_path_factory.mktemp("finished")
    config = write_config(workdir, load_config())
    finished_tree(workdir, config)
    return workdir, config


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


def test_training_options_retrain_every_model_and_what_follows_from_it(tree):
    jobs = rerun(tree, {"train": {"epochs": 3, "lr": 0.5}})
    models = {job.output for job in jobs if job.rule == "train"}
    assert len(models) == 21  # every trained model of digits.yaml
    assert sources(jobs) == {("train", model) for model in models}
    assert {job.output for job in jobs} == forced(tree, *models)


def test_a_sigmas_training_options_retrain_only_the_models_of_that_sigma(tree):
    jobs = rerun(tree, {"datasets": {"digits": {"train_by_sigma": {"0.25": {"epochs": 3}}}}})
    models = {output for rule, output in sources(jobs)}
    assert {rule for rule, _ in sources(jobs)} == {"train"}
    assert models and all("/sigma0.25/" in model for model in models)
    assert len(models) == 7  # cohen, smoothadv, macer fs and ds; uniform fs
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
        {"optimize_sigma": {"batch": 8}},
        {"threads_per_job": 2},
        {"train": {"num_workers": 2, "activation_checkpoints": 1}},
    ],
    ids=["certify.batch", "certify machine", "optimize_sigma.batch", "threads_per_job", "train speed"],
)
def test_a_setting_that_changes_only_speed_reruns_nothing(tree, overlay):
    assert rerun(tree, overlay) == []


def test_a_sequential_setting_reruns_only_the_sequential_jobs_and_their_tables(tmp_path_factory):
    """With the sequential comparison on (config.yaml's default), a change of the stopping rule
    re-runs the sequential logs and what reads them; every fixed-n, σ-search and training job keeps."""
    workdir = tmp_path_factory.mktemp("sequential")
    config = load_config()
    config["certify"]["sequential"] = {"compare": True}
    path = write_config(workdir, config)
    finished_tree(workdir, path)
    jobs = scheduled(
        workdir, path, write_config(workdir, {"certify": {"sequential": {"sequence": "union_cp"}}}, "o.yaml")
    )
    assert {rule for rule, _ in sources(jobs)} == {"certify_sequential"}
    assert len(sources(jobs)) == 3  # cohen's fixed-σ models at three σ
    assert {job.output for job in jobs} == {
        job.output for job in scheduled(workdir, path, args=("--forcerun", "certify_sequential"))
    }
    assert not {job.rule for job in jobs} & {"train", "certify_fixed", "certify_grid_search"}


def test_the_radii_rerun_only_tables_and_figures(tree):
    jobs = rerun(tree, {"datasets": {"digits": {"radii": [0.0, 0.5, 1.0]}}})
    assert jobs and {job.rule for job in jobs}.isdisjoint({"prepare_data", "train"})
    assert not any(job.rule.startswith("certify") for job in jobs)
