"""The experiment design (ddrs.pipeline) as plain unit tests: which logs make up which table and
where they live (the config schema's own tests: test_schema.py)."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
import yaml
from snakemake.utils import update_config

from ddrs.methods import get_method
from ddrs.pipeline import Experiment, Layout, Run
from ddrs.pipeline.catalogue import CATALOGUE
from ddrs.pipeline.missing_inputs import missing_checkpoints, missing_checkpoints_message
from ddrs.pipeline.validation import ConfigError, methods_left_out
from ddrs.training import TrainConfig
from ddrs.training.config import ALGORITHM2_FIELDS

REPO = Path(__file__).resolve().parents[1]


def config(name: str = "config.yaml") -> dict:
    return yaml.safe_load((REPO / "config" / name).read_text())


def digits_config() -> dict:
    """The test suite's fast configuration (scikit-learn's digits)."""
    return config("digits.yaml")


def names(records) -> list[str]:
    return [record.name for record in records]


def test_table1_reads_cohen_fixed_ds_and_ds2_logs_at_every_sigma_and_k():
    exp = Experiment(digits_config())
    records = exp.records.table_records("table1")
    sigmas, ks = [0.12, 0.25, 0.5], [50, 100, 200]
    assert names(records) == ["Cohen"] * 3 + ["Cohen-DS"] * 9 + ["Cohen-DS²"] * 9 + ["Cohen-IDRS"] * 3
    assert [r.sigma0 for r in records[:3]] == [r.sigma0 for r in records[-3:]] == sigmas
    assert [(r.sigma0, r.K) for r in records[3:12]] == [(s, k) for s in sigmas for k in ks]
    assert records[0].log == "results/digits/cohen/fs/sigma0.12/certify_fixed.tsv"
    assert records[20].log == "results/digits/cohen/ds/sigma0.5/memory_K200.tsv"
    assert records[-1].log == "results/digits/cohen/fs/sigma0.5/semi_elastic.tsv"
    # Appendix F charges Algorithm 1 (its σ log's time) to the -DS rows
    assert records[20].sigma_log == "results/digits/cohen/ds/sigma0.5/sigma_opt.tsv"
    assert records[-1].sigma_log == "results/digits/cohen/fs/sigma0.5/sigma_semi_elastic.tsv"
    assert records[0].sigma_log is None


def test_uniform_rows_are_yang_and_yang_ds_on_the_l1_grid_with_half_width_sqrt3_sigma():
    exp = Experiment(digits_config())
    records = exp.records.table_records("table4")
    assert names(records) == ["YANG"] * 3 + ["YANG-DS"] * 9  # no DS² row in DDRS Table 4
    assert {r.norm for r in records} == {1}
    assert [r.sigma0 for r in records[:3]] == [0.25, 0.5, 1.0]
    assert exp.grid.radii(1) == {"digits": [0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0]}
    assert exp.grid.noise_sigma("digits", "uniform", 0.5) == pytest.approx(0.5 * math.sqrt(3))
    assert exp.grid.noise_sigma("digits", "cohen", 0.5) == 0.5
    half_width = copy.deepcopy(digits_config())
    half_width["uniform"]["convention"] = "half_width"
    assert Experiment(half_width).grid.noise_sigma("digits", "uniform", 0.5) == 0.5
    half_width["datasets"]["digits"]["uniform_convention"] = "yang_std"  # a dataset's own reading wins
    assert Experiment(half_width).grid.noise_sigma("digits", "uniform", 0.5) == pytest.approx(0.5 * math.sqrt(3))


def test_without_uniform_in_methods_there_is_no_table4():
    cfg = digits_config()
    cfg["methods"] = ["cohen", "smoothadv", "macer"]
    exp = Experiment(cfg)
    assert not any(path.endswith("/table4.csv") for path in exp.tables())
    assert all(r.method != "uniform" for r in exp.records.all_records())


#: (prefix, suffix) of the tables issue 19 builds per best table under the default statistics
CLAIM_TABLES = [
    ("", ""),
    ("", "_held_out"),
    ("comparisons_", ""),
    ("comparisons_", "_held_out"),
    ("selection_optimism_", ""),
]


def test_default_grid_tables_figures_and_models():
    exp = Experiment(digits_config())
    tables = {Path(path).stem for path in exp.tables()}
    best = ["table1", "table2", "table3", "table4"]
    # issue 19: each best table under both selections, their comparisons, and the selection optimism
    claims = {f"{prefix}{t}{suffix}" for t in best for prefix, suffix in CLAIM_TABLES}
    # issue 55: Cohen's models in three training runs: table1 over runs, its comparisons, the budget, the claims
    replicated = {"replicated_table1", "replicated_table1_held_out", "replicated_comparisons_table1_held_out"}
    assert tables == {
        *claims,
        *replicated,
        "variance_budget_digits",
        "claims_digits",
        "appendix_h_cohen",
        "appendix_h_smoothadv",
        "appendix_h_macer",
        "appendix_b",
        "appendix_f",
        "memory_summary",
        "soundness_ledger_digits",  # issue 69: the certificate audit of table 1's rows
        "order_dependence_digits",
    }
    assert len(exp.figures()) == 3 * 2 + 4 + 1 + 1  # and the variance budget's, and the soundness ledger's
    runs = exp.runs()
    # three methods x fs/ds x σ, plus uniform noise (fs only), plus runs 1 and 2 of Cohen's fs/ds x σ
    assert len(runs) == 3 * 2 * 3 + 3 + 2 * 2 * 3
    assert {r.replicate for r in runs if r.method != "cohen"} == {0}
    assert Run("digits", "uniform", "fs", 1.0) in runs and Run("digits", "uniform", "ds", 1.0) not in runs


def test_appendix_b_compares_fixed_grid_search_and_algorithm_1_on_the_chosen_datasets():
    exp = Experiment(digits_config())
    records = exp.records.appendix_b_records()
    assert names(records[:3]) == ["SmoothAdv"] * 3
    assert names(records[3:7]) == [f"SmoothAdv-GDS-n-{n}" for n in (1, 2, 4, 10)]
    assert records[3].log == "results/digits/smoothadv/fs/sigma0.12/memory_grid_n1.tsv"
    assert set(names(records[15:])) == {"SmoothAdv-DS"}
    cfg = digits_config()
    cfg["grid_search"]["datasets"] = ["mnist"]  # not configured: refused, not silently left out
    with pytest.raises(ValueError, match=r"grid_search.datasets: \['mnist'\] not among the config's \['digits'\]"):
        Experiment(cfg)
    cfg["grid_search"].update(enabled=False, datasets=None)
    off = Experiment(cfg)
    assert off.records.grid_datasets() == [] and not any("appendix_b" in path for path in off.tables())
    cfg = digits_config()
    cfg["grid_search"]["budget"] = 20  # Algorithm 1 at K = 10, outside the K grid: no row, refused
    with pytest.raises(
        ConfigError, match=r"budget 20: Algorithm 1 spends it at K = 10 \(2·n·K = budget\), which "
    ) as refused:
        Experiment(cfg).records.appendix_b_records()
    assert "optimize_sigma.k [50, 100, 200] lacks" in str(refused.value)
    assert set(refused.value.messages) == {("grid_search", "budget"), ("optimize_sigma", "k")}


def _renamed(mapping: dict, old: str, new: str) -> None:
    mapping[new] = mapping.pop(old)


@pytest.mark.parametrize(
    ("name", "edit", "message"),
    [
        (
            "config.yaml",
            lambda c: _renamed(c["datasets"]["mnist5k"]["train_by_sigma"], "1", "1.0"),
            r"datasets.mnist5k.train_by_sigma: \['1.0'\] not among the config's \['0.25', '0.5', '1'\]",
        ),
        (
            "paper.yaml",
            lambda c: _renamed(c["datasets"]["imagenet"]["checkpoints"]["cohen"], "1", "1.00"),
            r"datasets.imagenet.checkpoints.cohen: \['1.00'\] not among the config's \['0.25', '0.5', '1'\]",
        ),
        (
            "config.yaml",
            lambda c: c["sun2024"].update(gradient_norm_sigma=0.3),
            r"sun2024.gradient_norm_sigma: \[0.3\] not among",
        ),
        ("config.yaml", lambda c: c["grid_search"].update(low=2.0, high=1.5), "low 2.0 must be below high 1.5"),
        (
            "seed_papers.yaml",
            lambda c: c.update(methods=["cohen", "consistency"]),
            r"datasets.cifar10.train_by_method: \['macer', 'easy_focus'\] not among the config's "
            r"\['cohen', 'consistency'\]",
        ),
    ],
    ids=["train-by-sigma-key", "checkpoint-key", "study-sigma", "empty-grid-interval", "train-by-method-key"],
)
def test_a_reference_the_lookups_would_miss_is_refused_naming_it(name, edit, message):
    """Each of these passes the schema; the lookup (σ₀ spelled as in paths) would silently ignore it:
    MACER's λ at σ₀ = 1, ImageNet Cohen at σ₀ = 1, Sun et al.'s Table 1, or fail only inside a job."""
    cfg = config(name)
    edit(cfg)
    with pytest.raises(ValueError, match=message):
        Experiment(cfg)


def test_published_dataset_has_only_the_models_it_names_and_is_fine_tuned_from_them():
    cfg = config("paper.yaml")
    exp = Experiment(cfg)
    assert exp.grid.sigmas("imagenet", "cohen") == [0.25, 0.5, 1.0]
    assert exp.grid.sigmas("imagenet", "macer") == []  # no published MACER checkpoints named
    assert exp.grid.sigmas("imagenet", "uniform") == [0.25, 0.5, 1.0]  # Yang et al.'s published models
    assert exp.grid.is_published("imagenet") and not exp.grid.is_published("cifar10")
    options = exp.training.train_options(Run("imagenet", "cohen", "ds", 0.5))
    assert options["epochs"] == cfg["datasets"]["imagenet"]["train"]["epochs"]
    assert options["warmup_epochs"] == 0
    assert options["arch"] == "resnet50"
    assert exp.records.grid_datasets() == ["cifar10"]  # Appendix B is a CIFAR-10 experiment


def test_paper_config_follows_what_produced_the_papers_numbers():
    exp = Experiment(config("paper.yaml"))
    # Appendix H: Cohen-DS² runs to K = 1500 and MACER-DS² to 1000 on CIFAR-10; the rest to 900
    assert (
        exp.grid.k_grid("cifar10", "cohen", "ds")[-1] == 1500 and exp.grid.k_grid("cifar10", "cohen", "fs")[-1] == 900
    )
    assert (
        exp.grid.k_grid("cifar10", "macer", "ds")[-1] == 1000 and exp.grid.k_grid("imagenet", "cohen", "ds")[-1] == 400
    )
    # §4.3: n = 8 in Algorithm 1 for MACER, in certification and in Algorithm 2 training
    assert exp.grid.algorithm1_n("macer") == 8 and exp.grid.algorithm1_n("cohen") == 1
    assert exp.training.train_options(Run("cifar10", "macer", "ds", 0.25))["n"] == 8
    assert exp.training.train_options(Run("cifar10", "cohen", "ds", 0.25))["n"] == 1
    # Appendix B: Algorithm 1 at the grid search's budget, 2·n·K = 200 → K = 100 only
    assert {r.K for r in exp.records.appendix_b_records() if r.certify_mode == "ds"} == {100}
    # Table 4's two conventions: Yang's σ on CIFAR-10, the half-width on ImageNet
    assert exp.grid.noise_sigma("cifar10", "uniform", 0.5) == pytest.approx(0.5 * math.sqrt(3))
    assert exp.grid.noise_sigma("imagenet", "uniform", 0.5) == 0.5
    # §4.2: the published SmoothAdv models' ζ per σ, continued in DS² fine-tuning
    assert exp.training.train_options(Run("imagenet", "smoothadv", "ds", 0.25))["smoothadv"]["epsilon"] == 0.5
    # the DDRS release's attack on its networks' softmax output (attacker.py), in fine-tuning too
    assert exp.training.train_options(Run("imagenet", "smoothadv", "ds", 1.0))["smoothadv"] == {
        "steps": 1,
        "epsilon": 1.0,
        "m": 1,
        "warmup": 0,
        "attack": "released",
    }
    assert exp.training.train_options(Run("imagenet", "cohen", "ds", 1.0))["lr"] == 0.001
    assert exp.training.train_options(Run("cifar10", "cohen", "ds", 1.0))["sigma_objective"] == "released"
    assert "paper_comparison" in {Path(p).stem for p in exp.tables()}


def _optimiser(options: dict) -> tuple:
    keys = ("epochs", "batch_size", "lr", "momentum", "weight_decay", "lr_step", "lr_milestones", "lr_drop")
    return tuple(TrainConfig.from_mapping(options).to_dict()[key] for key in keys)


def test_paper_config_trains_cifar10_with_the_releases_optimiser_and_macer_with_macers_schedule():
    """docs/protocol.md, "Training (`train`)": the DDRS release's CIFAR-10 defaults (lr 0.01, weight decay
    5e-4, batch 128, StepLR(30)); MACER's 440 epochs × 0.1 at 200 and 400 (§4.3); the baselines' optimiser
    as the overlay config/paper_baselines_optimiser.yaml; ImageNet unchanged by either."""
    release, baselines = config("paper.yaml"), config("paper.yaml")
    update_config(baselines, yaml.safe_load((REPO / "config" / "paper_baselines_optimiser.yaml").read_text()))
    cohen, macer = Run("cifar10", "cohen", "fs", 0.25), Run("cifar10", "macer", "ds", 0.25)
    smoothadv_ds, imagenet = Run("cifar10", "smoothadv", "ds", 0.5), Run("imagenet", "cohen", "ds", 0.5)
    plan, overlaid = Experiment(release).training, Experiment(baselines).training
    assert _optimiser(plan.train_options(cohen)) == (200, 128, 0.01, 0.9, 0.0005, 30, [], "paper")
    assert _optimiser(overlaid.train_options(cohen)) == (200, 256, 0.1, 0.9, 0.0001, 50, [], "paper")
    assert _optimiser(plan.train_options(macer)) == (440, 128, 0.01, 0.9, 0.0005, 30, [200, 400], "paper")
    assert _optimiser(overlaid.train_options(macer)) == (440, 256, 0.01, 0.9, 0.0005, 50, [200, 400], "paper")
    assert plan.train_options(smoothadv_ds)["lr"] == 0.01 and overlaid.train_options(smoothadv_ds)["lr"] == 0.0001
    assert _optimiser(plan.train_options(imagenet)) == _optimiser(overlaid.train_options(imagenet))
    assert _optimiser(plan.train_options(imagenet)) == (30, 128, 0.001, 0.9, 0.0001, 30, [], "paper")


def test_seed_papers_drop_the_lr_when_each_authors_code_does():
    """Jeong & Shin's scheduler.step(epoch) after each epoch: one epoch late; MACER's main.py steps before
    each epoch: one early; Sun et al.'s after each epoch: at the milestones."""
    plan = Experiment(config("seed_papers.yaml")).training
    drops = {
        method: TrainConfig.from_mapping(plan.train_options(Run("cifar10", method, "fs", 0.5))).lr_drop
        for method in ("cohen", "smoothadv", "consistency", "smoothadv_consistency", "stability", "macer", "easy_focus")
    }
    assert drops == {
        "cohen": "late",
        "smoothadv": "late",
        "consistency": "late",
        "smoothadv_consistency": "late",
        "stability": "late",
        "macer": "early",
        "easy_focus": "paper",
    }


def test_k_grid_groups_give_every_model_exactly_one_certification_rule():
    import re

    exp = Experiment(config("paper.yaml"))
    groups = exp.grid.k_grid_groups()
    for run in exp.runs():
        path = exp.grid.run_dir(run) + "/certify_K100.tsv"
        matching = [g for g in groups if re.fullmatch(g.pattern(exp.layout), path)]
        assert len(matching) == 1, (run, [g.name for g in matching])
        assert list(matching[0].ks) == exp.grid.k_grid(run.dataset, run.method, run.mode)


def test_a_fixed_sigma_models_options_leave_out_what_only_algorithm_2_reads():
    exp = Experiment(digits_config())
    fixed = exp.training.train_options(Run("digits", "macer", "fs", 0.25))
    data_dependent = exp.training.train_options(Run("digits", "macer", "ds", 0.25))
    assert not ALGORITHM2_FIELDS & set(fixed)
    assert {"warmup_epochs", "k", "sigma_objective"} <= set(data_dependent)
    assert {key: value for key, value in data_dependent.items() if key not in ALGORITHM2_FIELDS} == fixed | {
        "train_mode": "ds"
    }
    assert TrainConfig.from_mapping(fixed).train_mode == "fs"


def test_train_options_hold_the_method_section_and_build_a_train_config():
    exp = Experiment(digits_config())
    options = exp.training.train_options(Run("digits", "macer", "ds", 0.25))
    assert options["macer"] == {"m": 8, "lam": 12.0, "gamma": 8.0, "beta": 16.0}
    assert "smoothadv" not in options
    built = TrainConfig.from_mapping(options)
    assert built.params.m == 8 and built.train_mode == "ds" and built.warmup_epochs == 4
    uniform = exp.training.train_options(Run("digits", "uniform", "fs", 0.5))
    assert uniform["sigma"] == pytest.approx(0.5 * math.sqrt(3))
    # training's precision is its own (train.precision); the top-level precision is certification's
    assert TrainConfig.from_mapping(options).precision == "fp32"
    bf16 = digits_config() | {"precision": "bf16"}
    assert "precision" not in Experiment(bf16).training.train_options(Run("digits", "macer", "ds", 0.25))
    bf16["train"] = {**bf16["train"], "precision": "bf16"}
    assert (
        TrainConfig.from_mapping(Experiment(bf16).training.train_options(Run("digits", "macer", "ds", 0.25))).precision
        == "bf16"
    )


def test_showcase_and_k_sweep_records():
    exp = Experiment(digits_config())
    assert exp.figure_records.showcase("digits") == Run("digits", "cohen", "fs", 0.25)
    showcase = exp.figure_records.showcase_records("digits")
    assert {(r.method, r.name, r.sigma0, r.K) for r in showcase} >= {("cohen", "Cohen", 0.25, None)}
    assert {r.K for r in showcase} == {None, 200} and {r.sigma0 for r in showcase} == {0.25}
    assert {r.method for r in showcase} == {"cohen", "smoothadv", "macer"}
    sweep = exp.figure_records.k_sweep_records("macer", "digits")
    assert [(r.name, r.sigma0, r.K) for r in sweep] == [("MACER-DS²", 0.12, k) for k in (50, 100, 200)]


def test_the_mnist_default_runs_the_ddrs_grid_and_the_seed_papers_studies():
    exp = Experiment(config())
    tables = {Path(path).stem for path in exp.tables()}
    assert {
        "table1",
        "table4",
        "table_consistency",
        "table_easy_focus",
        "table_stability",
        "appendix_h_consistency",
    } <= tables
    assert "appendix_h_stability" not in tables  # fixed-σ training only: Method and Method-DS rows
    assert {"consistency_mnist5k", "methods_mnist5k", "easy_focus_ablation_mnist5k", "gradient_norms_mnist5k"} <= tables
    assert "pa_ecdf_methods_mnist5k" in {Path(path).stem for path in exp.figures()}
    # Jeong & Shin Table 2: per σ, the six methods' fixed-σ models
    consistency = exp.target_records("consistency_mnist5k")
    assert [r.name for r in consistency if r.sigma0 == 0.5] == [
        "Cohen",
        "Consistency",
        "SmoothAdv (as SmoothAdv+Consistency: steps, epsilon, m, warmup)",
        "SmoothAdv+Consistency",
        "Stability",
        "MACER",
    ]
    # Sun et al. Table 3: the eight on/off combinations of the three components, at σ = 0.5
    ablation = exp.target_records("easy_focus_ablation_mnist5k")
    assert len(ablation) == 8 and {r.sigma0 for r in ablation} == {0.5}
    assert ablation[0].name == "EasyFocus (none)" and ablation[-1].name == "EasyFocus (discard+reweigh+attack)"
    # all components on is easy_focus itself: its row is easy_focus's log, trained once
    assert ablation[-1].log == exp.grid.run_dir(Run("mnist5k", "easy_focus", "fs", 0.5)) + "/certify_fixed.tsv"
    assert Run("mnist5k", "easy_focus.discard+reweigh+attack", "fs", 0.5) not in exp.runs()
    assert len({r.log for r in ablation}) == 8
    # a cheaper run's rows: the variants sun2024.ablation_variants names, the full one its own model
    two_rows = config()
    two_rows["sun2024"]["ablation_variants"] = ["easy_focus.discard+reweigh+attack", "easy_focus.none"]
    cut = Experiment(two_rows)
    rows = [(r.name, r.log) for r in cut.target_records("easy_focus_ablation_mnist5k")]
    assert rows == [(r.name, r.log) for r in (ablation[0], ablation[-1])]
    assert set(exp.runs()) - set(cut.runs()) == {
        Run("mnist5k", v, "fs", 0.5) for v in get_method("easy_focus").variants()[1:-1]
    }
    options = exp.training.train_options(Run("mnist5k", "easy_focus.discard+attack", "fs", 0.5))
    assert options["method"] == "easy_focus"
    assert options["easy_focus"] == {
        **config()["train"]["easy_focus"],
        "discard": True,
        "reweigh": False,
        "attack": True,
    }
    assert [r.method for r in exp.records.gradient_norm_runs(CATALOGUE["gradient_norms_table"].methods, "mnist5k")] == [
        "cohen@easy_focus",
        "macer",
        "smoothadv",
        "consistency",
        "easy_focus",
    ]
    # with attack off in the config, easy_focus is its discard+reweigh variant and all-on trains apart
    no_attack = config()
    no_attack["train"]["easy_focus"]["attack"] = False
    rows = {r.name: r.log for r in Experiment(no_attack).target_records("easy_focus_ablation_mnist5k")}
    assert rows["EasyFocus (discard+reweigh)"] == ablation[-1].log
    assert "easy_focus.discard+reweigh+attack/" in rows["EasyFocus (discard+reweigh+attack)"]
    # Jeong & Shin's per-σ λ: 10 at σ = 0.25, 5 above
    assert exp.training.train_options(Run("mnist5k", "consistency", "fs", 0.25))["consistency"]["lam"] == 10.0
    assert exp.training.train_options(Run("mnist5k", "consistency", "ds", 1.0))["consistency"]["lam"] == 5.0


def test_the_studies_baselines_are_matched_variants_trained_with_the_shared_fields():
    exp = Experiment(config("seed_papers.yaml"))
    # Jeong & Shin Table 2: SmoothAdv's row is its own model, trained with SmoothAdv+Consistency's attack
    smoothadv = [r for r in exp.target_records("consistency_cifar10") if r.method.startswith("smoothadv@")]
    assert [r.log for r in smoothadv] == [
        f"results/cifar10/smoothadv@smoothadv_consistency/fs/sigma{s}/certify_fixed.tsv" for s in ("0.25", "0.5", "1")
    ]
    assert {r.name for r in smoothadv} == {"SmoothAdv (as SmoothAdv+Consistency: steps, epsilon, m, warmup)"}
    for sigma, attack in ((0.25, (10, 255 / 256, 4, 10)), (0.5, (10, 2.0, 2, 10))):  # A.3 Table 1, per σ
        options = exp.training.train_options(Run("cifar10", "smoothadv@smoothadv_consistency", "fs", sigma))
        assert options["method"] == "smoothadv"
        assert options["smoothadv"] == dict(zip(("steps", "epsilon", "m", "warmup"), attack, strict=True))
    # Sun et al. Tables 1 and 2: Gaussian with m = 4, as their method (§6)
    gaussian = [r for r in exp.target_records("methods_cifar10") if r.method.startswith("cohen")]
    assert {r.method for r in gaussian} == {"cohen@easy_focus"} and gaussian[0].name == "Cohen (as EasyFocus: m)"
    assert exp.training.train_options(Run("cifar10", "cohen@easy_focus", "fs", 0.5))["cohen"] == {"m": 4}
    assert exp.records.gradient_norm_runs(CATALOGUE["gradient_norms_table"].methods, "cifar10")[0] == Run(
        "cifar10", "cohen@easy_focus", "fs", 0.5
    )
    assert Run("cifar10", "cohen@easy_focus", "fs", 0.5) in exp.runs()
    # the DDRS tables keep §4.2's SmoothAdv and Cohen's one draw
    assert {r.method for r in exp.records.table_records("table1") + exp.records.table_records("table2")} == {
        "cohen",
        "smoothadv",
    }
    assert (
        exp.training.train_options(Run("cifar10", "smoothadv", "fs", 0.25))["smoothadv"]
        == config("seed_papers.yaml")["train"]["smoothadv"]
    )
    assert "cohen" not in exp.training.train_options(Run("cifar10", "cohen", "fs", 0.5))


def test_a_matched_variant_that_trains_as_its_method_reuses_the_methods_model():
    cfg = config("seed_papers.yaml")
    cfg["train"]["cohen"] = {"m": 4}  # as easy_focus: cohen@easy_focus is cohen's own model
    exp = Experiment(cfg)
    gaussian = [r for r in exp.target_records("methods_cifar10") if r.name.startswith("Cohen")]
    assert [r.log for r in gaussian] == [
        f"results/cifar10/cohen/fs/sigma{s}/certify_fixed.tsv" for s in ("0.25", "0.5", "1")
    ]
    assert gaussian[0].name == "Cohen (as EasyFocus: m)"
    assert not any(run.method == "cohen@easy_focus" for run in exp.runs())
    assert exp.records.gradient_norm_runs(("cohen@easy_focus",), "cifar10") == [Run("cifar10", "cohen", "fs", 0.5)]
    # at σ = 0.25 SmoothAdv+Consistency's attack differs from the config's smoothadv: only there it trains apart
    cfg["train"]["smoothadv"] = {"steps": 10, "epsilon": 2.0, "m": 2, "warmup": 10}
    logs = [r.log for r in Experiment(cfg).target_records("consistency_cifar10") if r.name.startswith("SmoothAdv (as")]
    assert logs[0].startswith("results/cifar10/smoothadv@smoothadv_consistency/fs/sigma0.25/")
    assert logs[1:] == [f"results/cifar10/smoothadv/fs/sigma{s}/certify_fixed.tsv" for s in ("0.5", "1")]


def test_smoothadv_ds2_on_cifar10_fine_tunes_the_fixed_sigma_model_with_its_own_options():
    exp = Experiment(config("paper.yaml"))
    ds, fs = Run("cifar10", "smoothadv", "ds", 0.25), Run("cifar10", "smoothadv", "fs", 0.25)
    assert exp.training.init_run(ds) == fs and exp.training.init_run(fs) is None
    options = exp.training.train_options(ds)
    # docs/protocol.md, "DS² on CIFAR-10": 30 epochs of Algorithm 2 (K = 1) at the release's lr 0.01, ζ at full size
    assert (options["epochs"], options["warmup_epochs"], options["lr"], options["k"]) == (30, 0, 0.01, 1)
    assert options["smoothadv"] == {"steps": 2, "epsilon": 0.25, "m": 1, "warmup": 0, "attack": "released"}
    assert (exp.training.train_options(fs)["epochs"], exp.training.train_options(fs)["smoothadv"]["warmup"]) == (
        200,
        10,
    )
    # Cohen-DS² and MACER-DS² train from scratch (§4.1, §4.3), MACER for MACER's 440 epochs; the published
    # ImageNet models are fine-tuned
    for method, epochs in (("cohen", 200), ("macer", 440)):
        run = Run("cifar10", method, "ds", 0.25)
        assert exp.training.init_run(run) is None
        assert (exp.training.train_options(run)["epochs"], exp.training.train_options(run)["warmup_epochs"]) == (
            epochs,
            50,
        )
    assert exp.training.init_run(Run("imagenet", "cohen", "ds", 0.5)) == Run("imagenet", "cohen", "fs", 0.5)


def test_missing_published_checkpoints_are_named_with_their_origin(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = config("paper.yaml")
    exp = Experiment(cfg)
    paths = cfg["datasets"]["imagenet"]["checkpoints"]
    assert [path for _, path in missing_checkpoints(exp.grid)] == [p for m in paths.values() for p in m.values()]
    message = missing_checkpoints_message(exp.grid, ["config/paper.yaml"])
    # a fresh clone misses every one, said in 5 lines: the count, the first, how many more, where from, the rest alone
    lines, count = message.splitlines(), sum(len(m) for m in paths.values())
    assert count > 2 and len(lines) <= 5
    assert lines[0].startswith(f"{count} published checkpoints named in the config are missing")
    first = next(f'datasets.imagenet.checkpoints.{m}."{s}": {p}' for m, ps in paths.items() for s, p in ps.items())
    assert lines[1] == f"  {first}" and lines[2] == f"  … and {count - 1} more"
    assert "--configfile config/paper.yaml --config 'exclude_datasets=[imagenet]'" in lines[-1]
    for methods in paths.values():
        for path in methods.values():
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).touch()
    assert missing_checkpoints(exp.grid) == [] and missing_checkpoints_message(exp.grid) is None
    (tmp_path / paths["cohen"]["0.25"]).unlink()  # one missing: a short message naming its config path
    one = missing_checkpoints_message(exp.grid, ["config/paper.yaml"]).splitlines()
    assert len(one) <= 5 and one[1] == f'  datasets.imagenet.checkpoints.cohen."0.25": {paths["cohen"]["0.25"]}'
    (tmp_path / paths["cohen"]["0.25"]).touch()
    # leaving a dataset out drops it from the whole experiment
    alone = Experiment({**cfg, "exclude_datasets": ["imagenet"]})
    assert list(alone.grid.datasets) == ["cifar10"] and {r.dataset for r in alone.records.table_records("table1")} == {
        "cifar10"
    }
    with pytest.raises(ValueError, match="leaves none of the configured datasets"):
        Experiment({**cfg, "exclude_datasets": ["imagenet", "cifar10"]})


def test_a_method_no_dataset_of_the_run_runs_is_named_with_each_datasets_reason():
    """MACER has no published ImageNet checkpoint: with CIFAR-10 left out it runs nowhere, which a
    warning says (a method no configured dataset gives a σ grid for is refused instead)."""
    cfg = config("paper.yaml")
    assert methods_left_out(Experiment(cfg).grid) == []
    alone = Experiment({**cfg, "exclude_datasets": ["cifar10"]})
    assert methods_left_out(alone.grid) == [
        "methods: macer runs on no dataset here, so its rows are left out "
        "(datasets.imagenet: published, no checkpoints.macer; exclude_datasets: cifar10)"
    ]


def test_layout_gives_patterns_for_wildcards_and_files_for_values():
    layout = Layout("out")
    assert layout.run_dir("{dataset}", "{method}", "{mode}", "{sigma}") == "out/{dataset}/{method}/{mode}/sigma{sigma}"
    assert layout.run_dir(*Run("digits", "cohen", "fs", 1.0).wildcards) == "out/digits/cohen/fs/sigma1"
    assert layout.table("table1", "md") == "out/tables/table1.md"


def test_an_unconfigured_table_is_an_error():
    cfg = digits_config()
    cfg["methods"] = ["cohen"]
    with pytest.raises(ValueError, match="no configured method feeds table 'table3'"):
        Experiment(cfg).records.table_records("table3")


def test_the_conda_environment_pins_what_pyproject_requires():
    """`--use-conda` jobs get the same library ranges as the venv (envs/ddrs.yaml mirrors pyproject.toml)."""
    import tomllib

    required = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    conda = yaml.safe_load((REPO / "envs" / "ddrs.yaml").read_text())["dependencies"]
    pip = next(entry["pip"] for entry in conda if isinstance(entry, dict))
    assert sorted(pip) == sorted(required)


def test_the_macer_script_imports_the_run_grid_api_and_prints_its_usage():
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    script = REPO / "scripts" / "macer_clean_accuracy.py"
    result = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert "--max-gap" in result.stdout and "TrainingPlan.train_options" in result.stdout


def test_gpu_jobs_load_batches_with_the_jobs_other_threads_and_cpu_jobs_as_today():
    run = Run("digits", "cohen", "fs", 0.25)
    assert Experiment(digits_config()).training.train_speed(run, threads=8) == {}  # the CPU default: unchanged
    gpu = {**digits_config(), "gpus_per_job": 1, "threads_per_job": 8, "device": "auto"}
    assert Experiment(gpu).training.train_speed(run, threads=8) == {"num_workers": 7}
    assert "num_workers" not in Experiment({**gpu, "device": "cpu"}).training.train_speed(run, threads=8)
    given = {**gpu, "train": {**gpu["train"], "num_workers": 2}}
    assert Experiment(given).training.train_speed(run, threads=8) == {"num_workers": 2}  # the config's own choice wins
    # speed never enters what the workflow compares: the same options train the same model
    assert Experiment(given).training.train_options(run) == Experiment(digits_config()).training.train_options(run)


@pytest.mark.parametrize("sigma,spelt", [(1000000, "1e+06"), (0.00001, "1e-05")])
def test_a_sigma_whose_spelling_the_workflow_wildcard_misses_is_refused_at_load_naming_its_key(sigma, spelt):
    """%g spells σ = 10⁶ as 1e+06: it reads back as itself, but no ``{sigma}`` wildcard matches it,
    and Snakemake would say only that a file has no rule."""
    cfg = config()
    dataset = next(iter(cfg["datasets"]))
    cfg["datasets"][dataset]["sigmas"] = [0.25, sigma]
    with pytest.raises(ValueError) as refused:
        Experiment(cfg)
    assert str(refused.value).startswith(f"datasets.{dataset}.sigmas: σ {sigma!r} is spelled sigma{spelt} in paths")
    assert "wildcard ([0-9.]+) misses" in str(refused.value) and len(str(refused.value).splitlines()) == 1
