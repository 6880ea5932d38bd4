"""The DAG the paper needs, from dry runs; schema validation before any job runs."""

import pytest
from workflow_helpers import REPO, job_counts, load_config, snakemake, write_config


def dry_run(tmp_path, config, *targets):
    result = snakemake(tmp_path, "-n", *targets, config=write_config(tmp_path, config))
    assert result.returncode == 0, result.stderr
    return job_counts(result.stdout + result.stderr)


def test_table1_on_the_default_config_schedules_exactly_the_cohen_jobs(tmp_path):
    counts = dry_run(tmp_path, load_config(), "results/tables/table1.csv")
    sigmas, ks = 3, 3
    assert counts == {
        "prepare_data": 1,
        "train": 2 * sigmas,  # fs and ds models
        "certify_fixed": sigmas,  # Cohen rows
        "optimize_sigma": 2 * sigmas,  # one Algorithm 1 run per model
        "certify_data_dependent": 2 * sigmas * ks,
        "memory": 2 * sigmas * ks,
        "best_table": 1,
        "total": 53,
    }


def test_the_default_target_builds_every_table_and_figure(tmp_path):
    counts = dry_run(tmp_path, load_config())
    assert counts["best_table"] == 4  # Tables 1-4
    assert counts["appendix_h_table"] == 3
    assert counts["appendix_b_table"] == counts["appendix_f_table"] == counts["memory_summary"] == 1
    assert counts["certified_accuracy_figure"] == counts["k_sweep_figure"] == 3
    assert counts["p_a_figure"] == 2
    assert counts["train"] == 3 * 2 * 3 + 3  # three methods x fs/ds x σ, plus uniform noise
    assert counts["grid_search_sigma"] == 3 * 4  # σ x n in {1, 2, 4, 10}


def test_the_paper_config_dag_builds_without_data(tmp_path):
    config = load_config("paper.yaml")
    for paths in config["datasets"]["imagenet"]["checkpoints"].values():
        for path in paths.values():
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).touch()
    counts = dry_run(tmp_path, config)
    # CIFAR-10 trains fs and ds models for 3 methods x 3 σ, plus 3 uniform models; ImageNet
    # imports the published Cohen and SmoothAdv models (3 σ each) and fine-tunes them (DS²).
    assert counts["import_checkpoint"] == 2 * 3
    assert counts["train"] == (3 * 2 * 3 + 3) + 2 * 3
    assert counts["best_table"] == 4
    assert counts["grid_search_sigma"] == 3 * 4  # Appendix B on CIFAR-10 only: σ x n in {1, 2, 4, 10}


def test_paper_config_replaces_the_default_experiment_grid(tmp_path):
    config = load_config("paper.yaml")
    config["datasets"] = {"cifar10": config["datasets"]["cifar10"]}
    result = snakemake(tmp_path, "-n", "--quiet", "all", config=write_config(tmp_path, config))
    assert result.returncode == 0, result.stderr
    assert "digits" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda c: c.update(seeed=1), "seeed"),
        (lambda c: c["certify"].update(n="many"), "many"),
        (lambda c: c["datasets"]["digits"].update(sigmas=[]), "sigmas"),
        (lambda c: c["certify"].update(alpha=1.5), "alpha"),
        (lambda c: c["datasets"].update(svhn=c["datasets"]["digits"]), "svhn"),
    ],
    ids=["unknown-key", "wrong-type", "empty-sigmas", "alpha-out-of-range", "unknown-dataset"],
)
def test_schema_rejects_bad_configs_before_any_job(tmp_path, edit, message):
    config = load_config()
    edit(config)
    result = snakemake(tmp_path, "-n", config=write_config(tmp_path, config))
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Error validating config file" in output
    assert message in output
    assert not (tmp_path / "results").exists()


def test_lint_reports_nothing():
    result = snakemake(REPO, "--lint")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "good condition" in result.stdout + result.stderr


@pytest.mark.parametrize("smk", sorted((REPO / "rules").glob("*.smk")), ids=lambda path: path.name)
def test_every_job_rule_declares_log_benchmark_threads_resources_and_conda(smk):
    for block in smk.read_text().split("\nrule ")[1:]:
        name = block.split(":", 1)[0]
        for directive in ("log", "benchmark", "threads", "resources", "conda"):
            assert f"\n    {directive}:" in block, f"rule {name} in {smk.name} has no {directive}:"
