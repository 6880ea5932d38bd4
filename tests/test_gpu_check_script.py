"""benchmarks/gpu_check.sh, the GPU-machine visit of issue 36, runs every step's code on the CPU with --quick."""

import json
import os
import re
import subprocess
import sys
import zipfile

import pytest
from benchmark_helpers import BENCHMARKS, REPO

SCRIPT = BENCHMARKS / "gpu_check.sh"
STEPS = [
    "install", "cuda_tests", "macer", "algorithm1", "training", "certify_resnet110", "certify_sequential",
    "certify_resnet50", "miniature",
]  # fmt: skip
BENCH_STEPS = STEPS[2:-1]
#: gpu_check.sh's QUICK_LIMIT: with --quick every step's share is this hang guard, not the visit's share
QUICK_LIMIT = 600
#: gpu_check.sh's default budget, less the 10 s it keeps for the summary
VISIT_BUDGET = 450 - 10


def gpu_check(tmp_path, *args: str, quick: bool = True, **env: str) -> subprocess.CompletedProcess:
    """``bash benchmarks/gpu_check.sh --quick ARGS`` with this interpreter, its records under ``tmp_path/out``;
    the timeout only stops a hung run: it is longer than the script's own hang guards together."""
    environment = dict(
        os.environ, OUT=str(tmp_path / "out"), PYTHON=sys.executable, GPU_CHECK_SITE=str(tmp_path / "site"), **env
    )
    command = ["bash", str(SCRIPT), *(["--quick"] if quick else []), *args]
    return subprocess.run(
        command, capture_output=True, text=True, env=environment, cwd=REPO, timeout=len(STEPS) * (QUICK_LIMIT + 60)
    )


def summary(tmp_path) -> dict:
    return json.loads((tmp_path / "out" / "summary.json").read_text())


#: what each benchmark step's record must hold besides the quick CPU run's marks: its section's figures
SECTION_OF = {
    "macer": "macer_memory_resnet18",
    "algorithm1": "algorithm1_resnet110",
    "training": "training_resnet18",
    "certify_sequential": "sequential_resnet110",
}
#: what the certification steps certify
CERTIFIED = {"certify_resnet110": {"cifar_resnet110"}, "certify_resnet50": {"imagenet_resnet50"}}
#: the steps whose code no other test runs (``make test-bench``): the quick CUDA-test selection, one
#: benchmark step (in --quick every one runs gpu_throughput.py alike, but for its section, whose
#: sections tests/test_benchmark_gpu_throughput.py runs) and the miniature's command
UNIQUE_STEPS = ["install", "cuda_tests", "certify_sequential", "miniature"]


def quick_run(tmp_path, steps: list[str]) -> dict:
    """``gpu_check.sh --quick`` over ``steps`` (all: no --only), checked for what every quick run
    gives: each step passed (install skipped: ddrs is importable here) with its record, the CUDA
    tests' quick selection, the seed papers' miniature to one model; returns the summary."""
    only = [] if steps == STEPS else ["--only", ",".join(steps)]
    result = gpu_check(tmp_path, *only, COMMIT="abc1234")
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    out = tmp_path / "out"
    bench = [step for step in steps if step in BENCH_STEPS]
    records = {f"gpu_throughput-{step}.json" for step in bench}
    # the device tool returns at most 8 files from $OUT
    assert {path.name for path in out.iterdir()} == {"gpu_check.log", "summary.json", *records}
    written = summary(tmp_path)
    assert (written["commit"], written["quick"], written["failed"]) == ("abc1234", True, [])
    assert [step["name"] for step in written["steps"]] == steps
    statuses = {step["name"]: step["status"] for step in written["steps"]}
    assert statuses == {"install": "skipped", **{step: "passed" for step in steps[1:]}}
    assert all(step["exit_code"] == 0 for step in written["steps"][1:])
    assert {step["name"]: step["record"] for step in written["steps"]} == {
        step: f"gpu_throughput-{step}.json" if step in bench else None for step in steps
    }
    for step in bench:
        record = json.loads((out / f"gpu_throughput-{step}.json").read_text())
        figures = record["figures"]
        assert record["benchmark"] == "gpu_throughput" and figures["quick"] and figures["device"] == "cpu", step
        assert record["threads"] == 1, step
        if step in SECTION_OF:
            assert SECTION_OF[step] in figures and not figures["certify_s_per_input"], step
        if step in CERTIFIED:
            assert set(figures["certify_s_per_input"]) == CERTIFIED[step], step
    log = (out / "gpu_check.log").read_text()
    assert "3 passed" in log  # the quick selection of the CUDA tests
    assert f"{len(steps)} of {len(steps)} steps passed or skipped" in result.stdout
    # the miniature step ran the seed papers' miniature on the CPU, to one model, under the GPU profile
    assert "miniature seed_papers: 2 jobs of 2 rules, exit 0" in log
    sequential = json.loads((out / "gpu_throughput-certify_sequential.json").read_text())["figures"]
    ratio = sequential["sequential_resnet110"]["sequential_over_fixed_ratio"]
    assert ratio > 0 and sequential["sizes"]["sequential_inputs"] == 4
    return written


@pytest.mark.bench
def test_a_quick_run_of_the_steps_no_other_test_runs_writes_their_records_and_a_summary(tmp_path):
    quick_run(tmp_path, UNIQUE_STEPS)


def test_each_benchmark_step_runs_a_section_of_gpu_throughput():
    """What the quick run of every step adds to the one above: each step's section is one
    gpu_throughput.py has (its records' figures: the full quick run, ``make test-slow``)."""
    names = "import sys; sys.path.insert(0, sys.argv[1]); from gpu_throughput import SECTIONS; print(*SECTIONS)"
    sections = subprocess.run([sys.executable, "-c", names, BENCHMARKS], capture_output=True, text=True, check=True)
    steps = dict(re.findall(r"^step_(\w+)\(\) \{ step_bench \1 (\w+)", SCRIPT.read_text(), flags=re.MULTILINE))
    assert list(steps) == BENCH_STEPS and set(steps.values()) <= set(sections.stdout.split())


@pytest.mark.slow
def test_the_quick_run_writes_every_steps_record_and_a_summary(tmp_path):
    """Whatever the machine's speed: --quick gives each step the hang guard, not the visit's time limit."""
    written = quick_run(tmp_path, STEPS)
    assert written["budget_s"] == len(STEPS) * QUICK_LIMIT
    limits = [step["limit_s"] for step in written["steps"]]
    assert limits[0] == QUICK_LIMIT and all(limit >= QUICK_LIMIT for limit in limits)
    assert limits[1] > QUICK_LIMIT  # the time the skipped install left unused passes to the next step
    assert "9 of 9 steps" in (tmp_path / "out" / "gpu_check.log").read_text()


def test_the_steps_shares_fit_the_default_budget():
    """A visit whose every step runs to its share still ends within the budget, the summary's 10 s kept."""
    declared = re.search(r"declare -A LIMIT=\((.*?)\)\n", SCRIPT.read_text(), re.DOTALL).group(1)
    shares = {name: int(seconds) for name, seconds in re.findall(r"\[(\w+)\]=(\d+)", declared)}
    assert list(shares) == STEPS
    assert sum(shares.values()) <= VISIT_BUDGET


def test_a_failing_step_is_reported_the_others_still_run_and_the_exit_is_non_zero(tmp_path):
    result = gpu_check(tmp_path, "--only", "install,algorithm1", "--fail", "install")  # one of the quickest steps
    assert result.returncode == 1, result.stdout[-5000:] + result.stderr[-5000:]
    written = summary(tmp_path)
    statuses = [(step["name"], step["status"]) for step in written["steps"]]
    assert statuses == [("install", "failed"), ("algorithm1", "passed")]
    assert written["failed"] == ["install"]
    assert "rerun: bash benchmarks/gpu_check.sh --only install" in result.stdout


def test_a_step_the_budget_leaves_no_time_for_is_out_of_time(tmp_path):
    result = gpu_check(tmp_path, "--only", "macer", GPU_CHECK_BUDGET_S="20")
    assert result.returncode == 1
    assert [(step["name"], step["status"]) for step in summary(tmp_path)["steps"]] == [("macer", "out_of_time")]
    assert not (tmp_path / "out" / "gpu_throughput-macer.json").exists()


def test_a_rerun_of_the_last_step_gets_the_shares_of_the_steps_it_leaves_out(tmp_path):
    """The visit's limits (no --quick): certify_resnet50's own share is 40 s; --only gives it the
    budget the other steps would have used, less the seconds before it starts (the interpreter)."""
    result = gpu_check(tmp_path, "--only", "certify_resnet50", "--fail", "certify_resnet50", quick=False)
    assert result.returncode == 1
    (step,) = summary(tmp_path)["steps"]
    assert step["name"] == "certify_resnet50" and step["status"] == "failed"
    assert 300 < step["limit_s"] <= VISIT_BUDGET


def test_an_unknown_step_is_named_with_the_steps_there_are(tmp_path):
    result = gpu_check(tmp_path, "--only", "certify")
    assert result.returncode == 2
    assert "unknown step 'certify'; the steps are: " + " ".join(STEPS) in result.stderr


def probe_wheel(folder) -> None:
    """A pure-Python wheel of one module, ``gpu_check_probe``, as ``pip wheel`` would build it."""
    folder.mkdir()
    info = "gpu_check_probe-0.1.dist-info"
    files = {
        "gpu_check_probe.py": "ANSWER = 42\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: gpu-check-probe\nVersion: 0.1\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(folder / "gpu_check_probe-0.1-py3-none-any.whl", "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)


def test_install_puts_the_carried_wheels_on_the_path_of_the_later_steps(tmp_path):
    """Off --quick the install step runs whether or not ddrs is importable: the wheels go to the site folder."""
    probe_wheel(tmp_path / "wheels")
    result = gpu_check(tmp_path, "--only", "install", quick=False, WHEELS=str(tmp_path / "wheels"))
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    assert [(step["name"], step["status"]) for step in summary(tmp_path)["steps"]] == [("install", "passed")]
    assert (tmp_path / "site" / "gpu_check_probe.py").read_text() == "ANSWER = 42\n"
    assert "ddrs 0.1.0" in result.stdout  # the install step checks ddrs's metadata, read as installed


def test_install_without_wheels_says_how_to_prepare_them(tmp_path):
    (tmp_path / "wheels").mkdir()
    result = gpu_check(tmp_path, "--only", "install", quick=False, WHEELS=str(tmp_path / "wheels"))
    assert result.returncode == 1
    assert f"no wheels in {tmp_path / 'wheels'}: prepare them on the CPU machine" in result.stdout
    assert "bash benchmarks/gpu_check.sh --prepare-wheels" in result.stdout
