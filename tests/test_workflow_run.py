"""config/digits.yaml's workflow for real at its own size, with its three training runs: table1 from
scratch (interrupted and resumed), everything else, the report, and nothing rescheduled on a
finished tree. Tens of minutes of CPU: ``make test-slow`` (marked slow). ``make test`` runs the same
on the tiny overlay (tests/test_tiny_digits.py)."""

import os
import signal
import time
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import pytest
from workflow_helpers import (
    certified_rows,
    check_table1,
    completed,
    job_counts,
    load_config,
    snakemake,
    start_snakemake,
    write_config,
)

pytestmark = pytest.mark.slow

TABLE1 = "results/tables/table1.csv"


class Run(NamedTuple):
    workdir: Path
    config: Path
    finished: dict  # model path → mtime, for the models finished before the kill
    output: str  # what the resumed run printed
    rows_before_kill: list[str]  # an interrupted certification log's rows at the kill
    resumed_rows: list[str]  # the same rows of its finished log


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """table1 of config/digits.yaml: killed mid-certification after its first models, then resumed."""
    workdir = tmp_path_factory.mktemp("default")
    config = write_config(workdir, load_config())
    process = start_snakemake(workdir, config, "--cores", "2", TABLE1)
    models = workdir / "results" / "digits" / "cohen"

    def interrupted_certification():
        return [p for p in models.glob("*/*/certify_*.tsv.partial") if len(certified_rows(p)) >= 2]

    deadline = time.monotonic() + 3000  # a hang guard only, as snakemake()'s timeout: the run itself ends the wait
    while not (sum(completed(workdir, p) for p in models.glob("*/*/model.pt")) >= 2 and interrupted_certification()):
        assert process.poll() is None, "snakemake ended before it could be interrupted"
        assert time.monotonic() < deadline, "no certification job to interrupt within 50 minutes"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # no clean-up: a hard kill, as a lost node would
    process.wait()
    finished = {p: p.stat().st_mtime_ns for p in models.glob("*/*/model.pt") if completed(workdir, p)}
    assert len(finished) >= 2
    partial = interrupted_certification()[0]
    rows_before_kill = certified_rows(partial)

    # A hard kill leaves Snakemake's lock behind: the documented recovery is --unlock, then rerun.
    assert snakemake(workdir, "--unlock", config=config).returncode == 0
    resumed = snakemake(workdir, "--cores", "2", "--rerun-incomplete", TABLE1, config=config)
    assert resumed.returncode == 0, resumed.stdout[-5000:] + resumed.stderr[-5000:]
    log = partial.with_name(partial.name.removesuffix(".partial"))
    resumed_rows = log.read_text().split("\n")[1 : 1 + len(rows_before_kill)]
    return Run(workdir, config, finished, resumed.stdout + resumed.stderr, rows_before_kill, resumed_rows)


def test_a_killed_certification_resumes_its_log(run_dir):
    # the rows certified before the kill are kept as they were, timings included: not recomputed
    assert run_dir.resumed_rows == run_dir.rows_before_kill


def test_resumed_run_keeps_completed_targets(run_dir):
    for path, mtime in run_dir.finished.items():
        assert path.stat().st_mtime_ns == mtime, f"{path} was recomputed"
    assert job_counts(run_dir.output).get("train", 0) <= 6 - len(run_dir.finished)


def test_table1_has_the_papers_rows_and_columns(run_dir):
    radii = load_config()["datasets"]["digits"]["radii"]
    check_table1(run_dir.workdir / TABLE1, radii, clean_low=50)  # far above chance at the config's size


def test_the_whole_default_dag_and_its_report(run_dir):
    workdir, config = run_dir.workdir, run_dir.config
    result = snakemake(workdir, "--cores", "all", config=config)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    for table in ("table2", "table3", "table4", "appendix_b", "appendix_f", "memory_summary"):
        assert (workdir / "results" / "tables" / f"{table}.csv").exists()
    # issue 19: both selections, the paired comparisons and the selection optimism of every best table
    for table in ("table1", "table4"):
        for name in (f"{table}_held_out", f"comparisons_{table}", f"comparisons_{table}_held_out"):
            assert (workdir / "results" / "tables" / f"{name}.csv").exists(), name
        assert (workdir / "results" / "tables" / f"selection_optimism_{table}.md").exists()
    figures = list((workdir / "results" / "figures").glob("*.png"))
    assert len(figures) == 3 * 2 + 4 + 1 + 1  # and the variance budget's, and the soundness ledger's
    # issue 69: the certificate audit of table 1's logs and the memory's order dependence
    ledger = pd.read_csv(workdir / "results" / "tables" / "soundness_ledger_digits.csv")
    assert len(ledger) == 3 + 2 * 3 * 2 and (ledger["certificates"] > 0).all()
    assert (workdir / "results" / "tables" / "order_dependence_digits.csv").exists()
    # issue 55: Cohen's three training runs give table1 over runs, its comparisons, the budget and the claims
    for name in (
        "replicated_table1",
        "replicated_comparisons_table1_held_out",
        "variance_budget_digits",
        "claims_digits",
    ):
        assert (workdir / "results" / "tables" / f"{name}.csv").exists(), name
    claims = pd.read_csv(workdir / "results" / "tables" / "claims_digits.csv")
    verdicts = ["holds", "contradicted", "not shown", "not testable (1 run)"]
    verdicts += [f"{verdict} on these inputs only" for verdict in verdicts[:2]]
    assert set(claims["runs"]) >= {3} and claims["verdict"].isin(verdicts).all()

    report = snakemake(workdir, "--report", "results/report.html", config=config)
    assert report.returncode == 0, report.stdout[-5000:] + report.stderr[-5000:]
    html = (workdir / "results" / "report.html").read_text(errors="replace")
    assert "table1.csv" in html and "certified_cohen_digits.png" in html
    assert "comparisons_table1.csv" in html and "selection_optimism_table1.csv" in html


def test_a_finished_tree_schedules_nothing(run_dir):
    workdir, config = run_dir.workdir, run_dir.config
    result = snakemake(workdir, "-n", TABLE1, config=config)
    assert result.returncode == 0
    assert "Nothing to be done" in result.stdout + result.stderr
