"""config/paper.yaml and config/seed_papers.yaml, executed end to end in miniature: every job of
both DAGs runs to its end on the CPU, with the paper's datasets in their on-disk formats, its
architectures, methods, modes, schedules and overlays, and the published ImageNet checkpoints in
their authors' layouts; only sizes are cut (tests/configs/*_miniature.yaml). Minutes of CPU: slow.

The same runs on CUDA are a step of benchmarks/gpu_check.sh (``miniature``)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml
from miniature import MINIATURES, TEST_CONFIGS, config_files, merged, run, snakemake
from workflow_helpers import job_counts, published_imagenet_in_place, write_config

from ddrs.pipeline import Experiment

pytestmark = pytest.mark.slow

#: the keys a miniature overlay may set: sizes (lengths, counts, grids), nothing that changes what runs
SIZE_KEYS = {
    "threads_per_job", "n_boot", "test_skip", "k", "ds", "epochs", "warmup_epochs", "lr_step", "lr_milestones",
    "eval_max", "steps", "warmup", "start_epoch", "reweigh_every", "discard_draws", "n0", "n",
    "budget",
}  # fmt: skip


class Miniature(NamedTuple):
    name: str
    workdir: Path
    config: dict  # the paper configuration, as merged from its files (no miniature overlay)
    run: subprocess.CompletedProcess
    env: dict  # the environment its jobs had


@pytest.fixture(scope="module", params=list(MINIATURES))
def mini(request, tmp_path_factory) -> Miniature:
    name = request.param
    workdir = tmp_path_factory.mktemp(name)
    result, env = run(name, workdir, "--cores", "2")
    return Miniature(name, workdir, merged(config_files(name, overlay=False)), result, env)


def leaves(section: dict):
    for key, value in section.items():
        if isinstance(value, dict):
            yield from leaves(value)
        else:
            yield key


@pytest.mark.parametrize("name", MINIATURES)
def test_a_miniature_overlay_changes_only_sizes(name):
    overlay = yaml.safe_load((TEST_CONFIGS / MINIATURES[name][1]).read_text())
    assert set(leaves(overlay)) <= SIZE_KEYS
    # the same tables and figures, in the same files
    full, small = (Experiment(merged(config_files(name, overlay=overlay))) for overlay in (False, True))
    assert [output for *_, output in full.targets()] == [output for *_, output in small.targets()]


def test_every_job_of_the_miniature_runs_to_its_end(mini):
    assert mini.run.returncode == 0, mini.run.stdout[-5000:] + mini.run.stderr[-8000:]
    again = snakemake(mini.workdir, config_files(mini.name), "-n", env=mini.env)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


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
