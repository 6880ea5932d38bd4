"""The README's commands and examples are true: each quick-start command is what its make target
runs, every Snakemake command it shows builds its DAG (a dry run: the real runs take minutes to
days), and every Python example runs. Examples added later are picked up from the README itself."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from reruns import kinds_of, schema_classes
from workflow_helpers import REPO, SNAKEFILE, load_config

README = (REPO / "README.md").read_text()
#: the README's fenced blocks, as (language, text)
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```$", README, flags=re.MULTILINE | re.DOTALL)
#: the quick start's lines: `make <target>   # ..., then: <command>`
QUICK_START = re.findall(r"^make (\w+) +#.*then: (.+)$", README.split("## Quick start", 1)[1], flags=re.MULTILINE)
#: where the quick start's models lie (results/<dataset>/<method>/<mode>/sigma<σ>/model.pt)
QUICK_START_MODEL = re.compile(r"results/(\w+)/\w+/(?:fs|ds)/sigma[0-9.]+/model\.pt")


def shell_commands(text: str) -> list[str]:
    """The commands of a bash block: continuation lines joined, comments and blank lines left out."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line.split(" #", 1)[0].strip() for line in joined.splitlines() if line.strip() and not line.startswith("#")]


def make_dry_run(*targets: str) -> str:
    """What ``make -n <targets>`` would run, as the Makefile spells it."""
    # --no-print-directory: under `make test` (MAKELEVEL set) make would add "Entering/Leaving directory" lines
    command = ["make", "--no-print-directory", "-n", *targets]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


#: every `make <target>` the README names, and the Snakemake commands those targets run
MAKE_TARGETS = sorted(set(re.findall(r"`make ([\w-]+)", README)))
SNAKEMAKE_COMMANDS = [
    command for language, text in BLOCKS if language == "bash" for command in shell_commands(text)
] + [line.removeprefix(".venv/bin/") for line in make_dry_run("table1", "readme-figure").splitlines()]
SNAKEMAKE_COMMANDS = list(dict.fromkeys(c for c in SNAKEMAKE_COMMANDS if c.startswith("snakemake ")))
PYTHON_EXAMPLES = [text for language, text in BLOCKS if language == "python"]


def test_the_readme_has_its_quick_start_and_examples():
    """Guards the parsing below: a README rewritten past these patterns fails here, not silently."""
    assert [target for target, _ in QUICK_START] == ["table1", "test"]
    assert len(SNAKEMAKE_COMMANDS) >= 5 and PYTHON_EXAMPLES


@pytest.mark.parametrize("target,command", QUICK_START, ids=[target for target, _ in QUICK_START])
def test_each_quick_start_command_is_what_its_make_target_runs(target, command):
    """`make table1 # ... then: snakemake ...`: the comment is the Makefile's command, in the venv."""
    program, *arguments = shlex.split(command)
    ran = [shlex.split(line) for line in make_dry_run(target).splitlines()]
    assert [f".venv/bin/{program}", *arguments] in ran


def test_ci_runs_the_readmes_test_command():
    run = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert run[-1] == "make test" and dict(QUICK_START)["test"].startswith("python -m pytest")


@pytest.mark.parametrize("target", MAKE_TARGETS)
def test_every_make_target_the_readme_names_exists(target):
    make_dry_run(target)


def paper_inputs_in_place(workdir: Path) -> None:
    """Empty stand-ins for what the paper's configuration reads from disk and a dry run checks:
    ImageNet's published checkpoints and image folders."""
    config = load_config("paper.yaml")
    for paths in config["datasets"]["imagenet"]["checkpoints"].values():
        for path in paths.values():
            (workdir / path).parent.mkdir(parents=True, exist_ok=True)
            (workdir / path).touch()
    for split in ("train", "val"):
        (workdir / config["data_root"] / "imagenet" / split).mkdir(parents=True, exist_ok=True)


@pytest.mark.parametrize("command", SNAKEMAKE_COMMANDS)
def test_every_snakemake_command_of_the_readme_builds_its_dag(tmp_path, command):
    """Run from the repository root as the README says, in a scratch working directory: a dry run
    (the DAG, the config's validation and every check before the jobs), no job."""
    for folder in ("config", "profiles"):
        (tmp_path / folder).symlink_to(REPO / folder)
    paper_inputs_in_place(tmp_path)
    arguments = shlex.split(command)[1:]
    env_path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), *arguments, "--dry-run"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PATH": env_path},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "This was a dry-run" in result.stdout + result.stderr
    assert not (tmp_path / "results").exists()


def quick_start_models_in_place(workdir: Path, example: str) -> None:
    """An untrained model of the default config's architecture at each quick-start model path an
    example reads: the example runs the library's API; what `make table1` trains is the workflow's test."""
    from ddrs.models import build_model, save_checkpoint

    datasets = load_config("config.yaml")["datasets"]
    for match in QUICK_START_MODEL.finditer(example):
        arch = datasets[match[1]]["arch"]
        save_checkpoint(workdir / match[0], build_model(arch, match[1]), arch=arch, dataset=match[1])


@pytest.mark.parametrize("example", PYTHON_EXAMPLES, ids=lambda text: text.splitlines()[-1][:40])
def test_every_python_example_of_the_readme_runs(tmp_path, example):
    quick_start_models_in_place(tmp_path, example)
    result = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


def test_the_readmes_figure_is_committed_and_no_row_of_it_is_stamped_with_a_commit():
    """The README shows results, not history: its figure is in the repository, and its timings
    name machines, not commits (those are in benchmarks/measured/README.md, one link away)."""
    for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README):
        assert (REPO / image).is_file(), image
    commit = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
    hashes = [line for line in README.splitlines() if commit.search(line)]
    assert hashes == [] and len(README.splitlines()) <= 300
    linked = set(re.findall(r"\]\(([^)#]+)", README))
    assert {"benchmarks/measured/README.md", "CHANGELOG.md", "docs/guide.md"} <= linked
    assert all((REPO / path).exists() for path in linked)


def test_the_readmes_speed_settings_are_the_schemas():
    """The README's list of speed settings names exactly the schema's keys of no job kind
    (``x-reruns: []``, tests/reruns.py): a name stands for the keys it ends (a train
    section's `num_workers`: every section's) or holds (`published_logs.mirrors`: its keys)."""
    listed = re.search(r"Speed settings re-run nothing: (.*?) \(", " ".join(README.split()))
    assert listed, "the README's list of speed settings"
    names = re.findall(r"`([\w.]+)`", listed.group(1))
    classes = schema_classes(REPO / "config" / "schema" / "config.schema.yaml")

    def stands_for(name: str) -> set[str]:
        return {leaf for leaf in classes if leaf == name or leaf.endswith(f".{name}") or leaf.startswith(f"{name}.")}

    for name in names:
        assert stands_for(name) and not any(kinds_of(leaf) for leaf in stands_for(name)), name
    assert set().union(*map(stands_for, names)) == {leaf for leaf in classes if not kinds_of(leaf)}
