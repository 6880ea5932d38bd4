"""config/paper.yaml and config/seed_papers.yaml, executed end to end in miniature: every job of
both DAGs runs to its end on the CPU, with the paper's datasets in their on-disk formats, its
architectures, methods, modes, schedules and overlays, and the published ImageNet checkpoints in
their authors' layouts; only sizes are cut (tests/configs/*_miniature.yaml). The runs take tens of
minutes of CPU (marked slow: ``make test-slow``); the dry runs that hold each overlay to sizes and
each rule to its job count are in ``make test``, whose tests/test_tiny_paper.py and
tests/test_tiny_seed_papers.py run the miniatures' DAGs at the size of a test.

The same runs on CUDA are a step of benchmarks/gpu_check.sh (``miniature``)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml
from miniature import MINIATURES, TEST_CONFIGS, config_files, is_size, leaves, merged, run, snakemake, write
from workflow_helpers import job_counts, published_imagenet_in_place, write_config

from ddrs.pipeline import Experiment


class Miniature(NamedTuple):
    name: str
    workdir: Path
    config: dict  # the paper configuration, as merged from its files (no miniature overlay)
    run: subprocess.CompletedProcess
    env: dict  # the environment its jobs had


#: the seed papers' run (218 jobs, 63 of them ResNet-110 trainings; 31 minutes of 2 CPU cores) is in
#: ``make test-slow`` but not in CI's part of it, which fits CI's time: ``make test-seed-miniature`` runs it alone
RUNS = [pytest.param(name, marks=pytest.mark.seed_miniature) if name == "seed_papers" else name for name in MINIATURES]


@pytest.fixture(scope="module", params=RUNS)
def mini(request, tmp_path_factory) -> Miniature:
    name = request.param
    workdir = tmp_path_factory.mktemp(name)
    result, env = run(name, workdir, "--cores", "2")
    return Miniature(name, workdir, merged(config_files(name, overlay=False)), result, env)


def test_the_size_paths_tell_a_size_from_a_key_of_the_same_name():
    assert is_size(("certify", "n")) and is_size(
        ("datasets", "cifar10", "train_by_sigma", "0.25", "easy_focus", "steps")
    )
    assert not is_size(("grid_search", "n")) and not is_size(("datasets", "cifar10", "k", "extra"))
    assert not is_size(("train", "smoothadv", "epsilon")) and not is_size(("optimize_sigma", "n"))


@pytest.mark.parametrize("name", MINIATURES)
def test_a_miniature_overlay_changes_only_sizes(name):
    overlay = yaml.safe_load((TEST_CONFIGS / MINIATURES[name][1]).read_text())
    assert [".".join(path) for path in leaves(overlay) if not is_size(path)] == []
    # the same tables and figures, in the same files
    full, small = (Experiment(merged(config_files(name, overlay=overlay))) for overlay in (False, True))
    assert [output for *_, output in full.targets()] == [output for *_, output in small.targets()]


@pytest.mark.parametrize("name", MINIATURES)
def test_the_miniature_schedules_each_rule_as_often_as_its_paper_configuration(name, tmp_path):
    """The same jobs at smaller sizes: each rule's job count of the miniature's dry run (its data
    written) equals the full configuration's (its published files and ImageNet folders present)."""
    config = merged(config_files(name, overlay=False))
    (tmp_path / "full").mkdir()
    published_imagenet_in_place(tmp_path / "full", config)
    full = snakemake(tmp_path / "full", config_files(name, overlay=False), "-n")
    assert full.returncode == 0, full.stderr[-5000:]
    (tmp_path / "small").mkdir()
    small = snakemake(tmp_path / "small", config_files(name), "-n", env=write(tmp_path / "small", config))
    assert small.returncode == 0, small.stderr[-5000:]
    asked, scheduled = job_counts(full.stdout + full.stderr), job_counts(small.stdout + small.stderr)
    assert {
        rule: (asked.get(rule), scheduled.get(rule))
        for rule in asked | scheduled
        if asked.get(rule) != scheduled.get(rule)
    } == {}


@pytest.mark.slow
def test_every_job_of_the_miniature_runs_to_its_end(mini):
    assert mini.run.returncode == 0, mini.run.stdout[-5000:] + mini.run.stderr[-8000:]
    again = snakemake(mini.workdir, config_files(mini.name), "-n", env=mini.env)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.slow
def test_the_miniature_runs_every_rule_its_paper_configuration_asks_for(mini, tmp_path):
    """Every rule of the full configuration's DAG (dry-run, the published files and ImageNet folders
    present) ran."""
    published_imagenet_in_place(tmp_path, mini.config)
    full = snakemake(tmp_path, [write_config(tmp_path, mini.config)], "-n")
    assert full.returncode == 0, full.stderr[-5000:]
    asked = job_counts(full.stdout + full.stderr)
    ran = job_counts(mini.run.stdout + mini.run.stderr)
    assert set(asked) - set(ran) == set()
    assert {rule: ran[rule] for rule in ("train", "import_checkpoint") if rule in asked} == {
        rule: asked[rule] for rule in ("train", "import_checkpoint") if rule in asked
    }  # every model of the paper's grid is trained or imported


@pytest.mark.slow
def test_the_miniature_builds_every_table_and_figure_of_the_catalogue_its_configuration_asks_for(mini):
    experiment = Experiment(mini.config)
    entries = experiment.targets()
    files = [path for target, _, name in entries for path in target.paths(experiment.layout, name).values()]
    assert files
    missing = [path for path in files if not (mini.workdir / path).is_file()]
    assert missing == []
    assert [path for path in files if (mini.workdir / path).stat().st_size == 0] == []
    if mini.name == "paper":  # compare_with_paper: our cells beside the DDRS paper's
        assert "paper_comparison" in {target.name for target, *_ in entries}
