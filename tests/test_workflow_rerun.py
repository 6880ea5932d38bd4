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
