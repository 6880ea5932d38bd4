"""config/digits.yaml's DAG for real, on its tiny overlay (tests/tiny.py): table1 from scratch,
killed mid-certification after its first models and resumed, then every other rule, the report, and
the checks of every tiny run (tests/tiny_checks.py). The same at the config's own size, with its
three training runs: tests/test_workflow_run.py (``make test-slow``)."""

import os
import signal
import time
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import pytest
import tiny
import yaml
from miniature import site_environment
from tiny_checks import EveryTinyRun, TinyRun
from workflow_helpers import certified_rows, check_table1, completed, job_counts, start_snakemake

pytestmark = pytest.mark.e2e


class TestTinyDigits(EveryTinyRun):
    """The checks of every tiny run, on digits.yaml's (resumed) tiny run."""


TABLE1 = "results/tables/table1.csv"
#: the first certification log to reach this many rows holds its job there, and the run is killed
ROWS_BEFORE_KILL = 2


class Interrupted(NamedTuple):
    tree: tiny.Tree
    finished: dict  # model path → mtime, for the models finished before the kill
    rows_before_kill: list[str]  # the held certification log's rows at the kill
    resumed_rows: list[str]  # the same rows of its finished log
    killed_output: str  # what the killed run printed
    resumed_output: str  # what the resumed run printed


def kill_mid_certification(tree: tiny.Tree, log: Path) -> Path:
    """Start table1's jobs, hold the first certification log at ``ROWS_BEFORE_KILL`` rows
    (tests/workflow_site), wait for two models and kill the run there; return the held log's partial."""
    marker = tree.workdir / "held"
    hold = {"pause": {"rows": ROWS_BEFORE_KILL, "seconds": 3000, "marker": str(marker)}}
    process = start_snakemake(
        tree.workdir, tree.config, "--cores", "2", TABLE1, env=site_environment(tree.workdir, hold), log=log
    )
    models = tree.workdir / "results" / "digits" / "cohen"
    deadline = time.monotonic() + 3000  # a hang guard only: the run itself ends the wait
    while not (marker.exists() and sum(completed(tree.workdir, p) for p in models.glob("*/*/model.pt")) >= 2):
        assert process.poll() is None, "snakemake ended before it could be interrupted"
        assert time.monotonic() < deadline, "no certification held with two models made within 50 minutes"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # no clean-up: a hard kill, as a lost node would
    process.wait()
    return Path(marker.read_text())


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory) -> Interrupted:
    """table1 of the tiny digits configuration: killed mid-certification after its first models, resumed."""
    tree = tiny.prepare("digits", tmp_path_factory.mktemp("digits"))
    killed_log = tree.workdir / "killed.log"
    partial = kill_mid_certification(tree, killed_log)
    models = tree.workdir / "results" / "digits" / "cohen"
    finished = {p: p.stat().st_mtime_ns for p in models.glob("*/*/model.pt") if completed(tree.workdir, p)}
    rows_before_kill = certified_rows(partial)
    # A hard kill leaves Snakemake's lock behind: the documented recovery is --unlock, then rerun.
    assert tiny.run(tree, "--unlock").returncode == 0
    resumed = tiny.run(tree, "--cores", "2", "--rerun-incomplete", TABLE1, warm=True)
    assert resumed.returncode == 0, resumed.stdout[-5000:] + resumed.stderr[-5000:]
    log = partial.with_name(partial.name.removesuffix(".partial"))
    resumed_rows = log.read_text().split("\n")[1 : 1 + len(rows_before_kill)]
    output = resumed.stdout + resumed.stderr
    return Interrupted(tree, finished, rows_before_kill, resumed_rows, killed_log.read_text(), output)


#: what the checks below read: made whatever else the run's cover picks
CHECKED = [
    TABLE1,
    "results/tables/comparisons_table1.csv",
    "results/tables/selection_optimism_table1.csv",
    "results/figures/certified_cohen_digits.png",
    "results/tables/claims_digits.csv",
    "results/tables/variance_budget_digits.csv",
]


@pytest.fixture(scope="module")
def tiny_run(interrupted) -> TinyRun:
    """After the resumed table1, every other rule of the DAG (tiny.covering_targets)."""
    targets = tiny.covering_targets(interrupted.tree, including=CHECKED)
    rest = tiny.run(interrupted.tree, *tiny.RUN_ARGS, *targets, warm=True)
    assert rest.returncode == 0, rest.stdout[-5000:] + rest.stderr[-8000:]
    outputs = (interrupted.killed_output, interrupted.resumed_output, rest.stdout, rest.stderr)
    return TinyRun(interrupted.tree, targets, "".join(outputs))


def test_a_killed_certification_resumes_its_log(interrupted):
    # the rows certified before the kill are kept as they were, timings included: not recomputed
    assert len(interrupted.rows_before_kill) == ROWS_BEFORE_KILL
    assert interrupted.resumed_rows == interrupted.rows_before_kill


def test_the_resumed_run_keeps_the_models_finished_before_the_kill(interrupted):
    assert len(interrupted.finished) >= 2
    for path, mtime in interrupted.finished.items():
        assert path.stat().st_mtime_ns == mtime, f"{path} was recomputed"
    models = len(list((interrupted.tree.workdir / "results" / "digits" / "cohen").glob("*/*/model.pt")))
    assert job_counts(interrupted.resumed_output).get("train", 0) <= models - len(interrupted.finished)


def test_table1_has_the_papers_rows_and_columns(tiny_run):
    radii = yaml.safe_load(tiny_run.tree.config.read_text())["datasets"]["digits"]["radii"]
    check_table1(tiny_run.tree.workdir / TABLE1, radii, clean_low=10)  # above chance at 20 inputs


def test_the_claims_and_the_variance_budget_rest_on_both_training_runs(tiny_run):
    tables = tiny_run.tree.workdir / "results" / "tables"
    claims = pd.read_csv(tables / "claims_digits.csv")
    verdicts = ["holds", "contradicted", "not shown", "not testable (1 run)"]
    verdicts += [f"{verdict} on these inputs only" for verdict in verdicts[:2]]
    assert set(claims["runs"]) >= {2} and claims["verdict"].isin(verdicts).all()
    budget = pd.read_csv(tables / "variance_budget_digits.csv")  # run 0's fixed-σ models re-certified
    assert set(budget["runs"]) == {2} and set(budget["monte_carlo"]) == {1} and set(budget["variant"]) == {"Cohen"}


def test_the_certificate_audit_has_a_ledger_row_per_certificate_kind_and_the_order_dependence(tiny_run):
    """Issue 69's audit on the tiny tree: the soundness ledger's rows each audit some certificates,
    beside the memory's order dependence."""
    tables = tiny_run.tree.workdir / "results" / "tables"
    ledger = pd.read_csv(tables / "soundness_ledger_digits.csv")
    assert len(ledger) > 0 and (ledger["certificates"] > 0).all()
    assert len(pd.read_csv(tables / "order_dependence_digits.csv")) > 0


def test_the_report_holds_the_tables_and_figures(tiny_run):
    result = tiny.run(tiny_run.tree, "--report", "results/report.html", *tiny_run.targets)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    html = (tiny_run.tree.workdir / "results" / "report.html").read_text(errors="replace")
    assert "table1.csv" in html and "certified_cohen_digits.png" in html
    assert "comparisons_table1.csv" in html and "selection_optimism_table1.csv" in html
    assert "claims_digits.csv" in html and "variance_budget_digits.csv" in html
