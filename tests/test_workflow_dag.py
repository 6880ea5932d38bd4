"""The workflow's wiring, from dry runs: the experiment design (tested in test_experiments.py)
becomes these jobs; schema validation stops bad configs before any job runs."""

import shutil

import pytest
from workflow_helpers import (
    REPO,
    job_counts,
    load_config,
    published_imagenet_in_place,
    refusal,
    snakemake,
    write_config,
)

TEST_CONFIGS = REPO / "tests" / "configs"


def dry_run(tmp_path, config, *targets, overlay=None):
    """Job counts of a dry run of ``config`` (a dict), with an overlay from tests/configs merged over it."""
    configs = [write_config(tmp_path, config)] + ([TEST_CONFIGS / f"{overlay}.yaml"] if overlay else [])
    result = snakemake(tmp_path, "-n", *targets, "--configfile", *map(str, configs))
    assert result.returncode == 0, result.stderr
    return job_counts(result.stdout + result.stderr)


def test_table1_on_the_default_config_schedules_exactly_the_cohen_jobs(tmp_path):
    counts = dry_run(tmp_path, load_config(), "results/tables/table1.csv")
    sigmas, ks = 3, 3
    assert counts == {
        "prepare_data": 1,
        "train": 2 * sigmas,  # fs and ds models
        "certify_fixed": sigmas,  # Cohen rows
        # per model, one process: Algorithm 1 to the largest K, then every K certified with Algorithm 3
        "certify_data_dependent_digits": 2 * sigmas,
        "certify_semi_elastic": sigmas,  # Cohen-IDRS rows (semi_elastic)
        "best_table": 1,
        "total": 20,
    }
    assert ks == len(load_config()["optimize_sigma"]["k"])


def test_the_default_target_builds_every_table_and_figure(tmp_path):
    counts = dry_run(tmp_path, load_config())
    assert counts["best_table"] == 4  # Tables 1-4
    assert counts["appendix_h_table"] == 3
    assert counts["appendix_b_table"] == counts["appendix_f_table"] == counts["memory_summary"] == 1
    assert counts["certified_accuracy_figure"] == counts["k_sweep_figure"] == 3
    assert counts["pa_ecdf_figure"] == counts["easy_hard_figure"] == 1
    # three methods x fs/ds x σ, plus uniform noise, plus Cohen's runs 1 and 2 (replication.runs: 3)
    assert counts["train"] == 3 * 2 * 3 + 3 + 2 * 2 * 3
    assert counts["certify_grid_search"] == 3 * 4  # σ x n in {1, 2, 4, 10}
    assert {rule: counts[rule] for rule in CLAIM_RULES} == dict.fromkeys(CLAIM_RULES, 4)


def test_the_certificate_audit_attacks_table1s_logs_for_the_ledger_and_the_orders(tmp_path):
    """Issue 69: Cohen's fixed-σ logs and Cohen-DS's and Cohen-DS²'s at the largest K, one audit each, read by
    the soundness ledger; the order dependence reads the data-dependent logs."""
    targets = ("results/tables/soundness_ledger_digits.csv", "results/tables/order_dependence_digits.csv")
    counts = dry_run(tmp_path, load_config(), *targets)
    audit = {rule: counts.get(rule) for rule in ("audit_fixed", "audit_data_dependent")}
    assert audit == {"audit_fixed": 3, "audit_data_dependent": 2 * 3}
    assert counts["soundness_ledger"] == counts["order_dependence"] == 1
    assert counts["train"] == 2 * 3 and counts["certify_data_dependent_digits"] == 2 * 3
    assert "audit_fixed" not in dry_run(tmp_path, {**load_config(), "audit": {"enabled": False}})


#: issue 19's rules, one job per best table each: held-out selection, comparisons, optimism
CLAIM_RULES = ("best_table_held_out", "comparisons_table", "comparisons_held_out_table", "selection_optimism_table")


def test_the_embedded_default_builds_comparisons_of_every_best_and_study_table(tmp_path):
    counts = dry_run(tmp_path, load_config("config.yaml"))
    best = 8  # Tables 1-4 and table_<method> of consistency, SmoothAdv+Consistency, stability, ACR-focused
    assert counts["best_table"] == best
    assert {rule: counts[rule] for rule in CLAIM_RULES} == dict.fromkeys(CLAIM_RULES, best)
    studies = ("consistency", "methods", "easy_focus_ablation")
    assert [counts[f"{study}_comparisons"] for study in studies] == [counts[f"{study}_table"] for study in studies]
    assert [counts[f"{study}_table"] for study in studies] == [1, 1, 1]


def test_the_paper_config_dag_builds_without_data(tmp_path):
    config = load_config("paper.yaml")
    published_imagenet_in_place(tmp_path, config)
    counts = dry_run(tmp_path, config)
    # CIFAR-10 trains fs and ds models for 3 methods x 3 σ, plus 3 uniform models; ImageNet
    # imports the published Cohen, SmoothAdv and uniform models (3 σ each) and fine-tunes the
    # first two (DS²; DDRS Table 4 has no YANG-DS²).
    assert counts["import_checkpoint"] == 3 * 3
    assert counts["train"] == (3 * 2 * 3 + 3) + 2 * 3
    assert counts["best_table"] == 4
    assert counts["paper_comparison"] == 1
    assert {rule: counts[rule] for rule in CLAIM_RULES} == dict.fromkeys(CLAIM_RULES, 4)
    assert counts["certify_grid_search"] == 3 * 4  # Appendix B on CIFAR-10 only: σ x n in {1, 2, 4, 10}
    # Appendix H's grids: Cohen-DS² and MACER-DS² on CIFAR-10 run longer than the others
    assert counts["certify_data_dependent_cifar10_cohen_ds"] == counts["certify_data_dependent_cifar10_macer_ds"] == 3
    assert counts["certify_data_dependent_cifar10"] == 4 * 3 + 3  # -DS of the 4 methods (YANG incl.), SmoothAdv-DS²
    assert counts["certify_data_dependent_imagenet"] == 3 * 3 + 2 * 3


def test_the_paper_config_without_checkpoints_names_each_file_and_how_to_run_cifar10_alone(tmp_path):
    config = load_config("paper.yaml")
    present = config["datasets"]["imagenet"]["checkpoints"]["cohen"]["0.25"]
    (tmp_path / present).parent.mkdir(parents=True)
    (tmp_path / present).touch()
    configfile = str(write_config(tmp_path, config))
    result = snakemake(tmp_path, "-n", "--configfile", configfile)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "Cyclic" not in output
    missing = [
        path
        for paths in config["datasets"]["imagenet"]["checkpoints"].values()
        for path in paths.values()
        if path != present
    ]
    # one message of at most 5 lines (issue 56): the count, the first file, how many more
    assert len(missing) == 8 and "8 published checkpoints named in the config are missing" in output
    assert sum(f": {path}\n" in output for path in missing) == 1 and "… and 7 more" in output
    assert f": {present}\n" not in output
    for origin in ("locuslab/smoothing", "Hadisalman/smoothing-adversarial", "tonyduan/rs4a"):
        assert origin in output
    command = f"--configfile {configfile} --config 'exclude_datasets=[imagenet]'"
    assert command in output
    # the command it shows runs the CIFAR-10 part alone
    alone = snakemake(tmp_path, "-n", "--configfile", configfile, "--config", "exclude_datasets=[imagenet]")
    assert alone.returncode == 0, alone.stderr
    counts = job_counts(alone.stdout + alone.stderr)
    assert "import_checkpoint" not in counts and counts["train"] == 3 * 2 * 3 + 3 and counts["best_table"] == 4


@pytest.mark.parametrize(
    "overlay,expected",
    [
        # Cohen's models in three runs (config/digits.yaml's replication): 2 · 2 · σ more trainings
        ("uniform_off", {"train": 3 * 2 * 3 + 12, "best_table": 3, "certify_grid_search": 12}),
        ("grid_search_off", {"train": 3 * 2 * 3 + 3 + 12, "best_table": 4, "certify_grid_search": 0}),
        ("single_method", {"train": 6, "best_table": 1, "appendix_h_table": 1, "certify_data_dependent_digits": 6}),
    ],
)
def test_test_configs_schedule_their_slice_of_the_grid(tmp_path, overlay, expected):
    counts = dry_run(tmp_path, load_config(), overlay=overlay)
    assert {rule: counts.get(rule, 0) for rule in expected} == expected


def test_a_published_dataset_imports_its_checkpoints_and_fine_tunes_them(tmp_path):
    for name in ("cohen_0.25", "cohen_0.5", "smoothadv_0.25"):
        (tmp_path / "published").mkdir(exist_ok=True)
        (tmp_path / "published" / f"{name}.pth.tar").touch()
    counts = dry_run(tmp_path, load_config(), overlay="published")
    assert counts["import_checkpoint"] == 3
    assert counts["train"] == 3  # DS² fine-tuning of each imported model; no uniform or MACER checkpoint
    assert counts["best_table"] == 2  # Tables 1 and 2


def test_paper_config_replaces_the_default_experiment_grid(tmp_path):
    config = load_config("paper.yaml")
    config["datasets"] = {"cifar10": config["datasets"]["cifar10"]}
    result = snakemake(tmp_path, "-n", "--quiet", "all", config=write_config(tmp_path, config))
    assert result.returncode == 0, result.stderr
    assert "digits" not in result.stdout + result.stderr


def test_a_config_of_only_datasets_and_methods_runs_on_the_schemas_defaults(tmp_path):
    """Snakemake's validate fills every other key from the schema's defaults (the embedded config's
    values; training options: TrainConfig's; the radii: the paper's grid), and the default's
    datasets are not merged in."""
    config = {
        "datasets": {"digits": {"source": "train", "arch": "mlp", "sigmas": [0.25]}},
        "methods": ["cohen"],
    }
    result = snakemake(tmp_path, "-n", "-p", config=write_config(tmp_path, config))
    output = result.stdout + result.stderr
    assert result.returncode == 0, result.stderr
    counts = job_counts(output)
    # Cohen fs and ds in replication's default 5 runs, and grid_search.method's (SmoothAdv) fixed-σ model
    # for Appendix B at n = 1, 2, 4, 10
    assert counts["train"] == 2 * 5 + 1 and counts["certify_grid_search"] == 4
    assert counts["best_table"] == 1 and "mnist5k" not in output
    embedded = load_config("config.yaml")
    certify = embedded["certify"]
    assert f'"n0": {certify["n0"]}, "n": {certify["n"]}, "alpha": {certify["alpha"]}, "seed": 0' in output
    assert '--speed \'{"certify": {"batch_size": null,' in output  # the device chooses the batch
    assert f"{embedded['results']}/digits/cohen/fs/sigma0.25/model.pt" in output


def test_a_catalogue_entry_without_its_caption_stops_the_dry_run_naming_the_file(tmp_path):
    """Snakemake reads a caption only when the report is built; the dry run names a missing one."""
    workflow = tmp_path / "workflow"
    workflow.mkdir()
    for part in ("Snakefile", "rules", "report", "config"):
        source = REPO / part
        (shutil.copytree if source.is_dir() else shutil.copy)(source, workflow / part)
    (workflow / "report" / "k_sweep.rst").unlink()
    result = snakemake(tmp_path, "-n", snakefile=workflow / "Snakefile", config=write_config(tmp_path, load_config()))
    assert result.returncode != 0
    missing = f"catalogue entry k_sweep_figure: its caption {workflow}/report/k_sweep.rst does not exist"
    assert missing in result.stdout + result.stderr


def test_smoothadv_ds2_on_cifar10_trains_from_the_fixed_sigma_model(tmp_path):
    config = load_config("paper.yaml")
    config["datasets"] = {"cifar10": config["datasets"]["cifar10"]}
    target = "results/cifar10/smoothadv/ds/sigma0.25/model.pt"
    result = snakemake(tmp_path, "-n", "-p", target, "--configfile", str(write_config(tmp_path, config)))
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    assert job_counts(output)["train"] == 2  # the fixed-σ model first, then its DS² fine-tuning
    assert '"init": "results/cifar10/smoothadv/fs/sigma0.25/model.pt"' in output
    cohen = snakemake(
        tmp_path, "-n", "-p", target.replace("smoothadv", "cohen"), "--configfile", str(tmp_path / "config.yaml")
    )
    assert job_counts(cohen.stdout + cohen.stderr)["train"] == 1 and '"init"' not in cohen.stdout + cohen.stderr


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda c: c.update(seeed=1), "seeed"),
        (lambda c: c["certify"].update(n="many"), "many"),
        (lambda c: c["datasets"]["digits"].update(sigmas=[]), "sigmas"),
        (lambda c: c["certify"].update(alpha=1.5), "alpha"),
        (lambda c: c.update(seed=2**32), "4294967296"),
        (lambda c: c["datasets"].update(svhn=c["datasets"]["digits"]), "svhn"),
        (lambda c: c.update(statistics={"level": 0.95}), "level"),
        (lambda c: c.update(statistics={"alpha": 0.0}), "alpha"),
        (lambda c: c.update(statistics={"n_boot": 0}), "n_boot"),
        (lambda c: c.update(statistics={"selection": ["cross_validated"]}), "cross_validated"),
        (lambda c: c.update(statistics={"selection": []}), "selection"),
        (lambda c: c.update(compare_with_paper=True, statistics={"selection": ["held_out"]}), "contain"),
        (lambda c: c.update(gpus_per_job=2), "gpus_per_job"),
        (lambda c: c.update(results=""), "results"),
        (lambda c: c["datasets"]["digits"].update(source="published"), "checkpoints"),
        (lambda c: c["train"].update(epoch=3), "config key train.epoch: unknown key (did you mean epochs?)"),
        (lambda c: c["datasets"]["digits"]["sigmas"].__setitem__(0, -0.25), "σ must be > 0, got -0.25 at datasets"),
        (lambda c: c.update(device="gpu"), "device: 'gpu' is not allowed; it takes auto, cpu, cuda or cuda:<index>"),
    ],
    ids=[
        "unknown-key",
        "wrong-type",
        "empty-sigmas",
        "alpha-out-of-range",
        "seed-beyond-32-bits",
        "unknown-dataset",
        "statistics-unknown-key",
        "statistics-alpha-zero",
        "statistics-no-resamples",
        "statistics-unknown-selection",
        "statistics-no-selection",
        "paper-comparison-without-test-selection",
        "several-gpus-one-device",
        "empty-results-folder",
        "published-without-checkpoints",
        "train-unknown-key",
        "negative-sigma",
        "device-pattern",
    ],
)
def test_schema_rejects_bad_configs_before_any_job(tmp_path, edit, message):
    config = load_config()
    edit(config)
    result = snakemake(tmp_path, "-n", config=write_config(tmp_path, config))
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert message in output
    assert len(output.splitlines()) <= 5, output  # one line per problem, never the schema
    assert not (tmp_path / "results").exists()


def test_a_config_error_names_the_file_that_set_the_key_in_a_few_lines(tmp_path):
    """An overlay's typo in a list of names: the overlay's file, the key, the closest name; nothing of
    the Snakefile."""
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("methods: [cohn, smoothadv]\n")
    base = write_config(tmp_path, load_config())
    lines = refusal(snakemake(tmp_path, "-n", "--configfile", str(base), str(overlay)))
    assert len(lines) <= 5, lines
    (line,) = lines
    assert line.startswith("overlay.yaml: config key methods[0]: 'cohn' is not one of: cohen, "), line
    assert line.endswith("(did you mean cohen?)"), line


@pytest.mark.parametrize(
    "overlay,line",
    [
        (
            "optimize_sigma: {k: [200, 50]}\n",
            "overlay.yaml: optimize_sigma.k [50, 200]: lacks K = 100, where Algorithm 1 spends grid_search.budget 200",
        ),
        (
            "grid_search: {budget: 300}\n",
            "overlay.yaml: grid_search.budget 300: Algorithm 1 spends it at K = 150 (2·n·K = budget), which "
            "optimize_sigma.k [50, 100, 200] lacks",
        ),
    ],
    ids=["k-grid-edited", "budget-edited"],
)
def test_keys_that_disagree_are_refused_naming_the_one_the_user_edited(tmp_path, overlay, line):
    """Appendix B's budget must fall on the K grid: the refusal leads with whichever key the overlay
    (the file a user edits over the shipped config) sets, not always with the budget."""
    (tmp_path / "overlay.yaml").write_text(overlay)
    base = write_config(tmp_path, load_config())
    (refused,) = refusal(snakemake(tmp_path, "-n", "--configfile", str(base), str(tmp_path / "overlay.yaml")))
    assert refused.startswith(line), refused


def test_more_selection_than_estimation_draws_is_refused_naming_both_keys_and_the_file(tmp_path):
    overlay = tmp_path / "draws.yaml"
    overlay.write_text("certify: {n0: 5000, n: 1000}\n")
    base = write_config(tmp_path, load_config())
    (line,) = refusal(snakemake(tmp_path, "-n", "--configfile", str(base), str(overlay)))
    assert line.startswith("draws.yaml: certify.n0 = 5000 is more than certify.n = 1000"), line
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    "target,content",
    [
        ("results/tables/table1.csv", None),
        ("results/figures/certified_cohen_digits.png", None),
        ("results/digits/cohen/fs/sigma0.25/certify_fixed.tsv", None),
        ("results/data/digits.json", '{"n": 1}\n'),
        ("notes.txt", '{"n": 1}\n'),
    ],
    ids=["csv", "png", "tsv", "output-read-as-a-mapping", "not-yaml"],
)
def test_a_target_after_configfile_is_refused_in_one_line_with_the_fix(tmp_path, target, content):
    """``--configfile`` takes every word after it: a target there, on a fresh tree (where Snakemake
    itself would fail opening it) or one a config file could be read from, is named with both fixes
    in one line before Snakemake reads a config file (the second fix is checked to run)."""
    if content is not None:
        (tmp_path / target).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / target).write_text(content)
    config = write_config(tmp_path, load_config())
    (line,) = refusal(snakemake(tmp_path, "-n", "--configfile", str(config), target))
    assert line.startswith(f"--configfile {target}: "), line
    assert f"(snakemake {target} --configfile config.yaml)" in line
    assert f"(snakemake --configfile config.yaml -- {target})" in line
    fixed = snakemake(tmp_path, "-n", "--configfile", str(config), "--", "results/tables/table1.csv")
    assert fixed.returncode == 0 and job_counts(fixed.stdout)["best_table"] == 1, fixed.stdout + fixed.stderr


@pytest.mark.parametrize(
    "text,where",
    [
        ("certify:\n  n0: 100\n   n: 1000\n", "overlay.yaml, line 3, column 5: not valid YAML: "),
        ("methods: [cohen, smoothadv\n", "overlay.yaml, line 2, column 1: not valid YAML: "),
        ("- cohen\n", "config file overlay.yaml holds list, not a mapping of key: value"),
    ],
    ids=["indentation", "unclosed-list", "not-a-mapping"],
)
def test_a_config_file_snakemake_cannot_read_is_named_with_its_line(tmp_path, text, where):
    (tmp_path / "overlay.yaml").write_text(text)
    config = write_config(tmp_path, load_config())
    (line,) = refusal(snakemake(tmp_path, "-n", "--configfile", str(config), str(tmp_path / "overlay.yaml")))
    assert line.startswith(where), line


def test_a_yaml_mistake_in_the_embedded_default_config_is_named_with_its_line(tmp_path):
    """Without --configfile the Snakefile reads config/config.yaml (from the working directory)."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text("seed: 0\n  device: auto\n")
    (line,) = refusal(snakemake(tmp_path, "-n"))
    assert line.startswith("config/config.yaml, line 2, column 9: not valid YAML: "), line


def test_a_method_no_dataset_gives_a_sigma_grid_for_stops_the_dag_naming_the_key(tmp_path):
    config = load_config()
    config["methods"] = ["cohen", "uniform"]
    del config["datasets"]["digits"]["uniform_sigmas"]
    (line,) = refusal(snakemake(tmp_path, "-n", config=write_config(tmp_path, config)))
    assert line == (
        "config.yaml: methods: uniform runs on no dataset, since none gives uniform_sigmas; add "
        "datasets.<dataset>.uniform_sigmas (e.g. [0.25, 0.5, 1.0]) or leave uniform out of methods"
    )


def test_a_method_a_published_dataset_has_no_checkpoint_for_is_a_named_warning(tmp_path):
    (tmp_path / "published").mkdir()
    for name in ("cohen_0.25", "cohen_0.5", "smoothadv_0.25"):
        (tmp_path / "published" / f"{name}.pth.tar").touch()
    overlay = str(TEST_CONFIGS / "published.yaml")
    result = snakemake(tmp_path, "-n", "--configfile", str(write_config(tmp_path, load_config())), overlay)
    assert result.returncode == 0, result.stderr
    for method in ("macer", "uniform"):
        warning = f"methods: {method} runs on no dataset here, so its rows are left out "
        assert f"{warning}(datasets.digits: published, no checkpoints.{method})\n" in result.stdout + result.stderr


@pytest.mark.parametrize("where", ["under-a-file", "a-file"])
def test_a_data_root_that_cannot_be_a_folder_stops_the_dag_naming_it(tmp_path, where):
    (tmp_path / "notes").touch()
    config = load_config()
    config["data_root"] = {"under-a-file": "notes/data", "a-file": "notes"}[where]
    (line,) = refusal(snakemake(tmp_path, "-n", config=write_config(tmp_path, config)))
    expected = {
        "under-a-file": "data_root: notes/data does not exist and cannot be created (notes is not a folder you "
        "can write); create it, or set data_root to a folder you can write",
        "a-file": "data_root: notes is a file, not a folder; set data_root to a folder",
    }[where]
    assert line.startswith(expected), line


def test_data_that_prepare_data_cannot_verify_is_named_on_the_terminal_not_only_in_its_log(tmp_path):
    """The one job of this file that runs (no network): MNIST's idx files without the archives that
    verify them. Downloadable data cannot be checked before the DAG (the network may be there), so
    the job's one-line reason, naming the fix, reaches the terminal beside Snakemake's error block."""
    from torchvision.datasets import MNIST

    raw = tmp_path / "data" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for name, _ in MNIST.resources:
        (raw / name.removesuffix(".gz")).touch()
    config = {"datasets": {"mnist": {"source": "train", "arch": "mlp256", "sigmas": [0.25]}}, "methods": ["cohen"]}
    result = snakemake(tmp_path, "--cores", "1", "results/data/mnist.json", config=write_config(tmp_path, config))
    assert result.returncode != 0
    (reason,) = [line for line in result.stderr.splitlines() if line.startswith("ddrs prepare-data: error:")]
    assert "MNIST archive is missing" in reason and "`ddrs prepare-data --dataset mnist --data-root data`" in reason


def test_missing_imagenet_images_stop_the_dag_naming_each_folder_where_to_get_them_and_how_to_run_the_rest(
    tmp_path,
):
    config = load_config("paper.yaml")
    config["data_root"] = "elsewhere"
    published_imagenet_in_place(tmp_path, config)
    (tmp_path / "elsewhere" / "imagenet" / "train").rmdir()
    configfile = write_config(tmp_path, config)
    lines = refusal(snakemake(tmp_path, "-n", config=configfile))
    assert len(lines) <= 5, lines
    assert lines[0] == "imagenet train images are missing: elsewhere/imagenet/train"
    assert "https://image-net.org" in lines[1] and "ImageFolder" in lines[1] and "set data_root" in lines[1]
    assert f"--configfile {configfile} --config 'exclude_datasets=[imagenet]'" in lines[-1]
    # the models imported from checkpoints alone read only the test images: without DS², no train folder
    config["methods"] = ["uniform"]  # Yang et al.'s models; uniform noise has no DS² in DDRS Table 4
    for spec in config["datasets"].values():
        spec.pop("train_by_method", None)
    assert snakemake(tmp_path, "-n", config=write_config(tmp_path, config)).returncode == 0


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda c: c["certify"].update(n=2000.0), "config key certify.n: 2000.0 is not of type 'integer'"),
        (
            lambda c: c["train"].update(min_sigma=0.25),
            "the training options of results/mnist5k/cohen/ds/sigma0.25: min_sigma must be in (0, sigma=0.25)",
        ),
        (lambda c: c["optimize_sigma"].update(n_by_method={"macr": 8}), "'macr' is not one of"),
        (
            lambda c: c.update(compare_with_paper=True, methods=["consistency", "stability"]),
            "compare_with_paper: none of this config's tables is one of the DDRS paper's Tables 1–4",
        ),
        (
            lambda c: c["optimize_sigma"].update(min_sigma=0.3),
            "optimize_sigma for results/mnist5k/cohen/fs/sigma0.25: sigma0=0.25 lies outside [min_sigma, max_sigma]",
        ),
        (
            lambda c: c["grid_search"].update(n=[3]),
            "grid_search: n = 3 does not divide the budget 200: its grid would spend 198 evaluations",
        ),
        (
            lambda c: c["datasets"]["mnist5k"].update(sigmas=[0.12, 0.1234567]),
            "datasets.mnist5k.sigmas: σ 0.1234567 is spelled sigma0.123457 in paths, which reads back as 0.123457",
        ),
        (
            lambda c: c["datasets"]["mnist5k"].update(sigmas=[0.12, 1000000]),
            "datasets.mnist5k.sigmas: σ 1000000 is spelled sigma1e+06 in paths, which the workflow's {sigma} wildcard",
        ),
    ],
    ids=[
        "float-for-integer",
        "training-option-a-job-would-refuse",
        "unknown-method-key",
        "paper-comparison-no-table",
        "sigma-floor-above-sigma0",
        "grid-n-not-dividing-budget",
        "sigma-changed-by-its-path",
        "sigma-its-wildcard-misses",
    ],
)
def test_what_the_schema_types_allow_but_a_job_would_refuse_stops_the_dag(tmp_path, edit, message):
    """JSON Schema counts 2000.0 as an integer and cannot compare two keys; each of these would
    otherwise fail inside a job after others ran (argparse refuses ``--n 2000.0``) or be ignored."""
    config = load_config("config.yaml")
    edit(config)
    result = snakemake(tmp_path, "-n", config=write_config(tmp_path, config))
    assert result.returncode != 0
    assert message in result.stdout + result.stderr
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


def test_the_seed_papers_config_builds_their_studies_without_data(tmp_path):
    counts = dry_run(tmp_path, load_config("seed_papers.yaml"))
    # 5 methods x fs/ds x 3 σ, stability and SmoothAdv+Consistency at fixed σ only (as their
    # paper's rows), plus the ablation variants of ACR-focused training at every σ (Sun et al.
    # Table 3) but the one with all components on, which is easy_focus's own fixed-σ model, plus
    # the studies' matched baselines at every σ: SmoothAdv with SmoothAdv+Consistency's attack,
    # Gaussian with m = 4
    assert counts["train"] == 5 * 2 * 3 + 2 * 3 + 7 * 3 + 2 * 3
    # Jeong & Shin Table 2, Sun et al. Tables 2 and 3
    assert counts["consistency_table"] == counts["methods_table"] == counts["easy_focus_ablation_table"] == 1
    assert counts["gradient_norms"] == 5 and counts["gradient_norms_table"] == 1
    assert counts["best_table"] == 7 and counts["pa_ecdf_methods_figure"] == 1
    assert counts["consistency_comparisons"] == counts["methods_comparisons"] == 1
    assert counts["easy_focus_ablation_comparisons"] == 1


def test_the_gpu_profile_gives_gpu_jobs_one_gpu_each_and_cpu_jobs_none(tmp_path):
    """profiles/gpu declares the GPUs; GPU rules request gpus_per_job, tables and data request none."""
    config = write_config(tmp_path, {**load_config(), "gpus_per_job": 1})
    result = snakemake(
        tmp_path, "-n", "results/tables/table1.csv", "--configfile", str(config),
        "--profile", str(REPO / "profiles" / "gpu"), "--resources", "gpu=2",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    requests = {}
    for block in (result.stdout + result.stderr).split("\nrule ")[1:]:
        rule = block.split(":", 1)[0]
        resources = next(line for line in block.splitlines() if line.strip().startswith("resources:"))
        requests.setdefault(rule, set()).add("gpu=1" in resources.split(", "))
    for rule in ("train", "certify_fixed", "certify_data_dependent_digits"):
        assert requests[rule] == {True}, rule
    for rule in ("prepare_data", "best_table"):
        assert requests[rule] == {False}, rule
