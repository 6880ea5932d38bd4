"""Run the Snakemake workflow of this repository from tests, in a scratch working directory."""

from __future__ import annotations

import base64
import copy
import functools
import importlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml
from warm_jobs import warm_jobs

REPO = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO / "Snakefile"


def load_config(name: str = "digits.yaml") -> dict:
    return yaml.safe_load((REPO / "config" / name).read_text())


def write_config(directory: Path, config: dict, name: str = "config.yaml") -> Path:
    path = directory / name
    path.write_text(yaml.safe_dump(copy.deepcopy(config), sort_keys=False))
    return path


def snakemake(
    workdir: Path,
    *args: str,
    config: Path | None = None,
    timeout: float = 3000,
    snakefile: Path = SNAKEFILE,
    env: dict[str, str] | None = None,
    warm: bool = False,
) -> subprocess.CompletedProcess:
    """``snakemake -s <repo>/Snakefile -d <workdir> ...`` with ``env`` over this process's environment
    and this interpreter's venv on PATH, run in a fork of this process (:func:`forked_snakemake`); with
    ``warm``, its jobs are forks of a server that imported torch once (tests/warm_jobs.py)."""
    environment = dict(os.environ, **(env or {}))
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment.get('PATH', '')}"
    argv = ["-s", str(snakefile), "-d", str(workdir)]
    if config is not None:
        argv += ["--configfile", str(config)]
    if not warm:
        return forked_snakemake([*argv, *args], cwd=workdir, env=environment, timeout=timeout)
    with warm_jobs(environment) as jobs_environment:
        return forked_snakemake([*argv, *args], cwd=workdir, env=jobs_environment, timeout=timeout)


#: what the Snakefile imports before it builds a DAG: with Snakemake's own, about three quarters of a
#: dry run's CPU on the digits config (cProfile: 10 of 18 s under load)
_WARM_IMPORTS = ("snakemake.cli", "ddrs.pipeline.job_plan", "ddrs.pipeline.catalogue", "ddrs.pipeline.missing_inputs")


@functools.cache
def _warm_snakemake() -> None:
    """Import :data:`_WARM_IMPORTS` and build Snakemake's argument parser once, in the parent: the parser
    fills Snakemake's plugin registries (singletons: executors, storage, reports, schedulers, loggers),
    which every forked run would otherwise collect again (0.3 of a dry run's 2.5 s on the digits config)."""
    for module in _WARM_IMPORTS:
        importlib.import_module(module)
    sys.modules["snakemake.cli"].get_argument_parser()


def forked_snakemake(argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """``python -m snakemake <argv>`` as a forked child of this process, which imported Snakemake and
    the Snakefile's modules once (:func:`_warm_snakemake`): the tests make hundreds of runs, most of
    them dry. The child starts from a process that never ran a workflow (only imported one), and its
    output goes to files that are read back as a ``CompletedProcess``'s. Neither Snakemake nor
    ``ddrs.pipeline`` imports torch, so no torch thread pool is forked. A run past ``timeout`` is
    killed, as ``subprocess.run`` does."""
    _warm_snakemake()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                os.setsid()  # its jobs are killed with it, as a child process group
                os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # nothing reads a test worker's stdin
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", closefd=False)  # pytest's capture objects stay in the parent
                sys.stderr = open(2, "w", closefd=False)
                os.chdir(cwd)
                os.environ.clear()
                os.environ.update(env)
                sys.argv = ["snakemake", *argv]
                sys.modules["snakemake.cli"].main(argv)
            except SystemExit as exit:
                code = exit.code if isinstance(exit.code, int) else 1
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        deadline = time.monotonic() + timeout
        while (waited := os.waitpid(pid, os.WNOHANG))[0] == 0:
            if time.monotonic() > deadline:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired(["snakemake", *argv], timeout)
            time.sleep(0.02)
        out.seek(0)
        err.seek(0)
        text = [stream.read().decode(errors="replace") for stream in (out, err)]
    return subprocess.CompletedProcess(["snakemake", *argv], os.waitstatus_to_exitcode(waited[1]), *text)


def start_snakemake(
    workdir: Path, config: Path, *args: str, env: dict[str, str] | None = None, log: Path | None = None
) -> subprocess.Popen:
    """``snakemake ... --configfile config args`` started in a process group of its own, to be killed
    (``os.killpg``) as a lost node would be; what it prints goes to ``log`` (or nowhere)."""
    environment = dict(os.environ, **(env or {}))
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment.get('PATH', '')}"
    command = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "-d", str(workdir), "--configfile", str(config)]
    output = subprocess.DEVNULL if log is None else open(log, "w")  # noqa: SIM115 - the child holds it
    try:
        return subprocess.Popen(
            [*command, *args],
            cwd=workdir,
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        if log is not None:
            output.close()


def completed(workdir: Path, path: Path) -> bool:
    """Did Snakemake record the job that wrote ``path`` as finished (metadata, no incomplete marker)?"""
    key = base64.urlsafe_b64encode(str(path.relative_to(workdir)).encode()).decode()
    state = workdir / ".snakemake"
    return (state / "metadata" / key).exists() and not (state / "incomplete" / key).exists()


def certified_rows(partial: Path) -> list[str]:
    """The complete rows of a certification log being written (a killed job may tear the last)."""
    lines = partial.read_text().split("\n")
    width = len(lines[0].split("\t"))
    return [line for line in lines[1:-1] if len(line.split("\t")) == width]


#: what Snakemake prints first on every run, having read the workflow profile (profiles/default)
PROFILE_NOTICE = re.compile(r"Using workflow specific profile \S+ for setting default command line arguments\.")


def refusal(result: subprocess.CompletedProcess) -> list[str]:
    """The lines of a refused run's message, which is all it prints but Snakemake's notice that it read
    the workflow profile: no line naming a workflow file and line, no frame."""
    assert result.returncode != 0
    lines = [line for line in (result.stdout + result.stderr).splitlines() if not PROFILE_NOTICE.fullmatch(line)]
    assert not any(line.startswith(("WorkflowError", "  File ")) or "Snakefile" in line for line in lines), lines
    return lines


def job_counts(output: str) -> dict[str, int]:
    """The "Job stats" table of a Snakemake run or dry-run, as {rule: count}."""
    block = output.split("Job stats:", 1)[1]
    counts = {}
    for line in block.splitlines()[3:]:
        match = re.fullmatch(r"(\w+)\s+(\d+)", line.strip())
        if not match:
            break
        counts[match[1]] = int(match[2])
    return counts


def finished_tree(workdir: Path, config: Path) -> None:
    """Make ``workdir`` a results tree that Snakemake records as finished under ``config``, in seconds:
    every output of the DAG as an empty file, then ``--touch --forceall`` (which records each job's
    params, code and inputs as a run would). Dry runs against it show what a config edit re-runs."""
    summary = snakemake(workdir, "--summary", config=config)
    assert summary.returncode == 0, summary.stderr
    for line in summary.stdout.splitlines()[1:]:
        path = workdir / line.split("\t", 1)[0]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    touched = snakemake(workdir, "--touch", "--forceall", "--cores", "1", config=config)
    assert touched.returncode == 0, touched.stderr


@dataclass(frozen=True)
class Scheduled:
    """One job of a dry run: its rule, why Snakemake schedules it, its outputs and its inputs."""

    rule: str
    reason: str
    outputs: tuple[str, ...]
    inputs: tuple[str, ...]

    @property
    def output(self) -> str:
        """Its first output, which names it."""
        return self.outputs[0] if self.outputs else ""

    @property
    def source(self) -> bool:
        """Scheduled for a reason of its own, not only because a job before it runs again."""
        return any(
            part.strip() and not part.strip().startswith(("Input files updated by another job", "Forced execution"))
            for part in self.reason.split(";")
        )


def scheduled(workdir: Path, *configs: Path, args: tuple[str, ...] = ()) -> list[Scheduled]:
    """Every job a dry run of ``configs`` (merged in order) schedules, ``all`` left out."""
    result = snakemake(workdir, "-n", *args, "--configfile", *map(str, configs))
    assert result.returncode == 0, result.stderr
    return dry_run_jobs(result.stdout + result.stderr)


def dry_run_jobs(output: str) -> list[Scheduled]:
    """Every job a dry run's ``output`` lists, ``all`` left out."""
    jobs, rule, fields = [], None, {}
    for line in output.splitlines():
        if match := re.fullmatch(r"(?:local)?rule (\w+):", line.strip()):
            rule, fields = match[1], {}
        elif rule and (match := re.fullmatch(r"\s+(\w+): (.*)", line)):
            fields[match[1]] = match[2]
            if match[1] == "reason" and rule != "all":
                outputs, inputs = (tuple(filter(None, fields.get(key, "").split(", "))) for key in ("output", "input"))
                jobs.append(Scheduled(rule, match[2], outputs, inputs))
    return jobs


def published_imagenet_in_place(workdir: Path, config: dict) -> None:
    """Empty files at ``config``'s ImageNet checkpoint paths and its empty ImageNet split folders under
    ``data_root`` (``DatasetInfo.local_folder``): what the dry run checks is there before it builds the
    DAG (``prepare_data`` checks the class folders). Nothing for a config without ImageNet."""
    from ddrs.data import get_info

    imagenet = config["datasets"].get("imagenet")
    if imagenet is None:
        return
    for paths in imagenet.get("checkpoints", {}).values():
        for path in paths.values():
            (workdir / path).parent.mkdir(parents=True, exist_ok=True)
            (workdir / path).touch()
    for split in ("train", "test"):
        get_info("imagenet").local_folder(workdir / config.get("data_root", "data"), split).mkdir(parents=True)


#: table1's rows on digits (config/digits.yaml and its tiny overlay): variant, then training and certification
TABLE1_ROWS = [("Cohen", "FS", "FS"), ("Cohen-DS", "FS", "DS"), ("Cohen-DS²", "DS", "DS"), ("Cohen-IDRS", "FS", "IDRS")]


def check_table1(table1: Path, radii: list[float], clean_low: float) -> None:
    """table1.csv of a digits run has the paper's rows and columns, certified accuracies that are
    percentages falling with the radius, a clean accuracy whose lower bound is above ``clean_low``
    (percent), and its Markdown and LaTeX renderings."""
    table = pd.read_csv(table1)
    labels = [f"{r:.2f}" for r in radii]
    metrics = [*labels, "ACR_per_log", "ACR_per_input_best"]
    bounds = [f"{c}_{end}" for c in metrics for end in ("low", "high")]
    assert list(table.columns) == ["dataset", "variant", "train", "certify", *metrics, *bounds]
    assert (table["ACR_per_input_best"] >= table["ACR_per_log"]).all()
    assert [tuple(row) for row in table[["variant", "train", "certify"]].values.tolist()] == TABLE1_ROWS
    accuracy = table[labels].to_numpy()
    assert ((accuracy >= 0) & (accuracy <= 100)).all()
    clean = table[f"{labels[0]}_low"]
    assert (clean > clean_low).all(), f"clean certified accuracy on digits not above {clean_low}%: {clean.tolist()}"
    assert (accuracy[:, :-1] >= accuracy[:, 1:]).all(), "certified accuracy cannot grow with the radius"
    for suffix in ("md", "tex"):
        assert table1.with_suffix(f".{suffix}").stat().st_size > 0
