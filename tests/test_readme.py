"""The README's commands and examples are true: each quick-start command is what its make target
runs, every Snakemake command it shows builds its DAG (a dry run: the real runs take minutes to
days), and every Python example runs. Examples added later are picked up from the README itself.
Its figures cannot go stale: a job count is a dry run's, a time (the configs' too) one of
benchmarks/measured/README.md's with its commit, the layer list docs/architecture.md's."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
from reruns import kinds_of, schema_classes
from workflow_helpers import REPO, job_counts, load_config, published_imagenet_in_place, snakemake, write_config

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


#: the variables the Makefile lets a caller set (``NAME ?= default``)
MAKEFILE_DEFAULTS = re.findall(r"^(\w+)\s*\?=", (REPO / "Makefile").read_text(), re.MULTILINE)


def make_dry_run(*targets: str) -> str:
    """What ``make -n <targets>`` would run, as the Makefile spells it."""
    # --no-print-directory: under `make test` (MAKELEVEL set) make would add "Entering/Leaving directory" lines;
    # the Makefile's defaults: under .ci/run's `make test PYTEST_ARGS=...` the override reaches this make
    # twice, in MAKEFLAGS and as a variable of the environment
    command = ["make", "--no-print-directory", "-n", *targets]
    overrides = {"MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", *MAKEFILE_DEFAULTS}
    env = {name: value for name, value in os.environ.items() if name not in overrides}
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


#: every `make <target>` the README names, and the Snakemake commands those targets run
MAKE_TARGETS = sorted(set(re.findall(r"`make ([\w-]+)", README)))
SNAKEMAKE_COMMANDS = [
    command for language, text in BLOCKS if language == "bash" for command in shell_commands(text)
] + [line.removeprefix(".venv/bin/") for line in make_dry_run("table1", "readme-figure").splitlines()]
SNAKEMAKE_COMMANDS = list(dict.fromkeys(c for c in SNAKEMAKE_COMMANDS if c.startswith("snakemake ")))
PYTHON_EXAMPLES = [text for language, text in BLOCKS if language == "python"]
#: a commit as the measured figures name it
COMMIT = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")


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


def test_ci_runs_the_readmes_test_command_then_the_benchmarks_the_papers_miniature_and_the_slurm_tier():
    """CI's make commands: the README's test target first, then the benchmark scripts' quick runs, the
    paper's miniature (of the full-size runs) and the SLURM profile's, each with variables only (the
    durations it prints)."""
    script = (REPO / ".ci" / "run").read_text().splitlines()
    run = [shlex.split(line) for line in script if line.startswith("make ")]
    assert [words[:2] for words in run] == [
        ["make", "test"], ["make", "test-bench"], ["make", "test-paper-miniature"], ["make", "test-slurm"]
    ]  # fmt: skip
    assert all(word.startswith("PYTEST_ARGS=") for words in run for word in words[2:])
    assert dict(QUICK_START)["test"].startswith("python -m pytest")


def test_make_test_starts_no_cluster_and_installs_no_system_package():
    """The README's test command changes nothing outside the checkout: the SLURM profile's test, which
    starts a one-node cluster (apt-get, /etc/slurm: root), is make test-slurm's alone."""
    ran = make_dry_run("test")
    assert "slurm_local" not in ran and "apt-get" not in ran and '-m "not slow and not slurm and not bench"' in ran
    assert "scripts/slurm_local.sh start" in make_dry_run("test-slurm")


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
    (the DAG, the config's validation and every check before the jobs), no job; forked from this
    process (tests/workflow_helpers.py), which imported Snakemake once."""
    for folder in ("config", "profiles"):
        (tmp_path / folder).symlink_to(REPO / folder)
    paper_inputs_in_place(tmp_path)
    result = snakemake(tmp_path, *shlex.split(command)[1:], "--dry-run", timeout=600)
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
    hashes = [line for line in README.splitlines() if COMMIT.search(line)]
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


#: the README's job counts, each with the snakemake arguments of the dry run that gives it (from the
#: repository root, as the README runs it): `make all` on the embedded default, the published logs' config
JOB_COUNTS = {
    r"`make all` builds every table and figure of the default \((\d[\d,]*) jobs": (),
    r"--configfile config/published.yaml ``` .{0,2000}? The whole config is (\d[\d,]*) jobs": (
        "--configfile",
        "config/published.yaml",
    ),
}


@pytest.mark.parametrize("quoted,arguments", JOB_COUNTS.items(), ids=["make-all", "published"])
def test_the_readmes_job_counts_are_what_a_dry_run_counts(tmp_path, quoted, arguments):
    """Rules are added all the time: a count the README quotes is Snakemake's total of a dry run of
    that command (the `all` job included), and a failure says the number to write."""
    match = re.search(quoted, " ".join(README.split()))
    assert match, f"the README no longer says {quoted!r}"
    (tmp_path / "config").symlink_to(REPO / "config")
    result = snakemake(tmp_path, "-n", *arguments)
    assert result.returncode == 0, result.stderr[-3000:]
    total = job_counts(result.stdout)["total"]
    assert int(match[1].replace(",", "")) == total, (
        f"README.md quotes {match[1]} jobs where `{' '.join(['snakemake', '-n', *arguments])}` counts {total}: "
        f"write {total}"
    )


MEASURED = (REPO / "benchmarks" / "measured" / "README.md").read_text()
#: a time quoted in prose, one figure or a range of two: "2,426 s", "87 min", "74–83 s"
TIME = re.compile(r"(?<![\w.,])(\d[\d,]*(?:\.\d+)?)(?:–(\d[\d,]*(?:\.\d+)?))? (s|min)\b")
#: a job count quoted in prose: "142 jobs"
JOBS = re.compile(r"(?<![\w.,])(\d[\d,]*) jobs\b")
SECONDS = {"s": 1, "min": 60}
#: a commit where the measured figures name one: as in the README, or of digits alone (8985179)
NAMED_COMMIT = re.compile(rf"{COMMIT.pattern}|\b\d{{7,40}}\b")


def measured_places() -> list[str]:
    """The places of benchmarks/measured/README.md that name a commit: each table row, and each
    paragraph's prose."""
    places = []
    for paragraph in re.split(r"\n\s*\n", MEASURED):
        rows = [line for line in paragraph.splitlines() if line.startswith("|")]
        prose = " ".join(line for line in paragraph.splitlines() if not line.startswith("|"))
        places += [*rows, prose]
    return [place for place in places if NAMED_COMMIT.search(place)]


def is_measured(figure: str, unit: str, places: list[str]) -> bool:
    """Whether a place of :func:`measured_places` holds ``figure`` ``unit`` (a time: any time of
    theirs, in s or min, that rounds half up to it at its precision; a job count: that count)."""
    if unit == "jobs":
        return any(figure in JOBS.findall(place) for place in places)
    quoted = Decimal(figure.replace(",", ""))
    step = Decimal(1).scaleb(quoted.as_tuple().exponent)
    for place in places:
        for match in TIME.finditer(place):
            for value in filter(None, match.group(1, 2)):
                seconds = Decimal(value.replace(",", "")) * SECONDS[match[3]]
                if (seconds / SECONDS[unit]).quantize(step, rounding=ROUND_HALF_UP) == quoted:
                    return True
    return False


def quoted_figures(text: str) -> list[tuple[str, str]]:
    """Every (figure, unit) of ``text``: the times (both ends of a range) and the job counts."""
    times = [(value, match[3]) for match in TIME.finditer(text) for value in filter(None, match.group(1, 2))]
    return times + [(count, "jobs") for count in JOBS.findall(text)]


def test_the_guides_slurm_request_of_the_paper_is_a_dry_runs(tmp_path):
    """docs/guide.md's jobs, hours and training jobs of config/paper.yaml under the SLURM profile are
    the sum of `runtime` over its dry run, the ImageNet checkpoints in place (as the guide says)."""
    guide = " ".join((REPO / "docs" / "guide.md").read_text().split())
    quoted = re.search(r"In all, its (\d+) jobs ask for ([\d,.]+) hours of first attempts \((\d+) training jobs", guide)
    assert quoted, "docs/guide.md no longer says what config/paper.yaml's jobs ask for"
    config = load_config("paper.yaml")
    published_imagenet_in_place(tmp_path, config)
    result = snakemake(
        tmp_path, "-n", "--profile", str(REPO / "profiles" / "slurm"), config=write_config(tmp_path, config)
    )
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    hours = sum(int(minutes) for minutes in re.findall(r"runtime=(\d+)", output)) / 60
    jobs = job_counts(output)
    counted = (jobs["total"], f"{hours:,.1f}", jobs["train"])
    assert (int(quoted[1]), quoted[2], int(quoted[3])) == counted, f"docs/guide.md should say {counted}"


def config_headers() -> dict[str, str]:
    """Each shipped config's comments, as one text (a figure may wrap over two comment lines)."""
    return {
        path.name: " ".join(line.lstrip("# ") for line in path.read_text().splitlines() if line.startswith("#"))
        for path in sorted((REPO / "config").glob("*.yaml"))
    }


def test_every_time_the_readme_and_the_configs_quote_is_measured_with_its_commit():
    """The README's times and the configs' times and job counts are figures of
    benchmarks/measured/README.md, each at a place that names its commit (the README quotes them
    rounded, without the commit); the README's job counts are dry runs' (above)."""
    places = measured_places()
    assert is_measured("2,426", "s", places) and is_measured("12", "min", places)  # 710.5 s
    assert not is_measured("2,427", "s", places) and not is_measured("826", "s", places)
    readme = [(figure, unit) for figure, unit in quoted_figures(" ".join(README.split())) if unit != "jobs"]
    configs = [(name, *figure) for name, text in config_headers().items() for figure in quoted_figures(text)]
    assert len(readme) >= 10 and len(configs) >= 3
    stale = [f"README.md: {figure} {unit}" for figure, unit in readme if not is_measured(figure, unit, places)]
    stale += [
        f"config/{name}: {figure} {unit}" for name, figure, unit in configs if not is_measured(figure, unit, places)
    ]
    assert not stale, f"quoted but not in benchmarks/measured/README.md with its commit: {stale}"


def layers(text: str) -> list[str]:
    """The package names of a comma-separated list, parentheses and their contents left out."""
    return [re.sub(r"\([^)]*\)", "", item).strip() for item in re.sub(r"\s+", " ", text).split(",")]


def test_the_readmes_layer_list_is_the_architectures():
    """The README's layout names the packages of src/ddrs bottom up, as docs/architecture.md's tree
    stands them top down, and both are the packages there are."""
    listed = re.search(r"one package per layer, bottom up: (.*?)\n[^ ]", README, flags=re.DOTALL)
    assert listed, "the README's layout line of src/ddrs/"
    architecture = (REPO / "docs" / "architecture.md").read_text()
    tree = re.search(r"^src/ddrs/\n(.*?)^```", architecture, flags=re.MULTILINE | re.DOTALL)
    top_down = re.findall(r"^  (\w+)/", tree[1], flags=re.MULTILINE)
    packages = {path.parent.name for path in (REPO / "src" / "ddrs").glob("*/__init__.py")}
    assert layers(listed[1]) == top_down[::-1]
    assert set(top_down) == packages
