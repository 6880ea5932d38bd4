"""profiles/slurm against a real one-node SLURM cluster (scripts/slurm_local.sh start; ``make test-slurm``
starts it, as root).

A slice of the default DAG — train (fs and ds), certify, optimize_sigma, memory and Table 1 —
goes through sbatch; the test checks SLURM ran the jobs and the table is right.
"""

import os
import shutil
import subprocess

import pandas as pd
import pytest
from workflow_helpers import REPO, load_config, snakemake, write_config

pytestmark = pytest.mark.slurm


def cluster_is_up() -> bool:
    if shutil.which("sinfo") is None:
        return False
    return subprocess.run(["sinfo", "-h"], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def slurm():
    if not cluster_is_up():
        if os.environ.get("CI"):
            pytest.fail("CI must run the SLURM test: start the cluster with scripts/slurm_local.sh start")
        pytest.skip("no SLURM cluster; start one with scripts/slurm_local.sh start (root)")


def slice_config():
    config = load_config()
    digits = config["datasets"]["digits"]
    digits.update(sigmas=[0.25], test_max=180)  # Cohen's --max: indices below 180, every 3rd
    config.update(methods=["cohen"])
    config["optimize_sigma"]["k"] = [50]
    config["grid_search"]["enabled"] = False
    config["train"]["epochs"] = 4
    config["train"]["warmup_epochs"] = 2
    return config


def test_the_slurm_profile_runs_the_pipeline_through_sbatch(slurm, tmp_path):
    config = write_config(tmp_path, slice_config())
    result = snakemake(
        tmp_path,
        *("--profile", str(REPO / "profiles" / "slurm")),
        *("--slurm-status-command", "squeue"),  # no accounting database on the test cluster
        *("--slurm-init-seconds-before-status-checks", "2", "--seconds-between-status-checks", "2"),
        "--slurm-keep-successful-logs",
        "results/tables/table1.csv",
        config=config,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]

    submitted = output.count("has been submitted with SLURM jobid")
    # prepare_data, 2 train, certify_fixed, 2 data-dependent certify (Algorithm 1, then CERTIFY and memory),
    # the semi-elastic certification (Cohen-IDRS), the table
    assert submitted == 8, output[-6000:]
    # every job's SLURM log, named by its SLURM job id: the jobs really ran on the cluster
    slurm_logs = list((tmp_path / ".snakemake" / "slurm_logs").rglob("*.log"))
    rules = {
        "rule_train",
        "rule_certify_fixed",
        "rule_certify_data_dependent_digits",
        "rule_certify_semi_elastic",
        "rule_best_table",
    }
    assert {path.parent.parent.name for path in slurm_logs} >= rules  # rule_<name>/<wildcards>/<jobid>.log
    assert all(path.stem.isdigit() for path in slurm_logs)

    table = pd.read_csv(tmp_path / "results" / "tables" / "table1.csv")
    assert table["variant"].tolist() == ["Cohen", "Cohen-DS", "Cohen-DS²", "Cohen-IDRS"]
    assert (table["0.00"] > 50).all()
