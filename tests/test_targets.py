"""The target catalogue (ddrs.pipeline.catalogue) and its runner (ddrs.pipeline.build): every entry is complete, every
output has exactly one rule, a new entry needs nothing else, and builders' results are written
by their type."""

from __future__ import annotations

import importlib
import inspect
import math
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import yaml

from ddrs.analysis.log_record import display_name
from ddrs.analysis.stats import Inference
from ddrs.analysis.table_settings import TableStatistics
from ddrs.analysis.tables import BestTable
from ddrs.pipeline import Experiment
from ddrs.pipeline.build import build, write
from ddrs.pipeline.catalogue import CATALOGUE
from ddrs.pipeline.grid import RunGrid
from ddrs.pipeline.layout import Run
from ddrs.pipeline.queries import best_tables
from ddrs.pipeline.records import Records
from ddrs.pipeline.resources import job_minutes
from ddrs.pipeline.target import REPORTED, Target
from ddrs.pipeline.training_plan import TrainingPlan

REPO = Path(__file__).resolve().parents[1]
CONFIGS = ["config.yaml", "digits.yaml", "paper.yaml", "seed_papers.yaml"]


def experiment(name: str) -> Experiment:
    return Experiment(yaml.safe_load((REPO / "config" / name).read_text()))


@pytest.mark.parametrize("target", CATALOGUE.values(), ids=lambda target: target.name)
def test_every_entry_names_a_builder_a_caption_and_its_outputs(target):
    module, function = target.builder.split(":")
    assert callable(getattr(importlib.import_module(module), function))
    assert (REPO / "report" / f"{target.caption}.rst").is_file()
    assert set(target.outputs) & set(REPORTED), "nothing of it would show in the report"
    assert target.records is not None or target.files is not Target.files, "it reads no input"


def rule_patterns(exp: Experiment) -> dict[str, str]:
    """What the generated rules ask Snakemake to match: each entry's pattern under its constraints."""
    patterns = {}
    for target in CATALOGUE.values():
        constraints = target.constraints(exp)
        regex = re.escape(target.pattern)
        for wildcard in target.wildcard_names:
            regex = regex.replace(re.escape(f"{{{wildcard}}}"), f"(?:{constraints[wildcard]})", 1)
        patterns[target.name] = regex
    return patterns


def assert_one_rule_per_output(exp: Experiment) -> None:
    patterns, outputs = rule_patterns(exp), exp.targets()
    assert len({output for _, _, output in outputs}) == len(outputs)
    for target, wildcards, output in outputs:
        assert [n for n, regex in patterns.items() if re.fullmatch(regex, output)] == [target.name], output
        assert set(wildcards) == set(target.wildcard_names)


@pytest.mark.parametrize("name", CONFIGS)
def test_every_output_matches_exactly_one_rule(name):
    assert_one_rule_per_output(experiment(name))


def test_the_seed_papers_studies_name_their_methods_in_their_entries():
    exp = experiment("config.yaml")
    consistency = CATALOGUE["consistency_table"]
    assert consistency.methods == (
        "cohen",
        "consistency",
        "smoothadv@smoothadv_consistency",  # Jeong & Shin's SmoothAdv shares their attack (A.3, App. B)
        "smoothadv_consistency",
        "stability",
        "macer",
    )
    assert [r.method for r in exp.target_records("consistency_mnist5k") if r.sigma0 == 0.5] == list(consistency.methods)
    # an entry asking for other methods gets them, with no other change
    narrower = replace(consistency, methods=("macer", "cohen"))
    assert [r.method for r in narrower.query(exp, {"dataset": "mnist5k"}) if r.sigma0 == 0.5] == ["macer", "cohen"]
    assert CATALOGUE["methods_table"].methods == CATALOGUE["pa_ecdf_methods_figure"].methods
    # without any of its `requires` methods configured, a study is not built
    cfg = dict(exp.config, methods=["cohen", "smoothadv", "macer", "uniform"])
    assert not {"consistency_mnist5k", "methods_mnist5k"} & {output for _, _, output in Experiment(cfg).targets()}


def test_a_new_table_is_one_entry(monkeypatch):
    """One entry plus its builder: the experiment lists it, its rule's inputs and arguments follow."""
    entry = Target(
        "fixed_only",
        "fixed_only_{dataset}",
        "ddrs.analysis.tables:per_sigma_table",
        "study_table",
        "Seed papers",
        instances=lambda exp, t: [{"dataset": d} for d in exp.grid.datasets],
        records=lambda exp, t, dataset: exp.records.fixed_records(dataset, "cohen"),
        params=lambda exp, t, dataset: {"radii": [0.0, 0.5]},
        decimals=2,
    )
    monkeypatch.setitem(CATALOGUE, entry.name, entry)
    exp = experiment("digits.yaml")
    assert "results/tables/fixed_only_digits.csv" in exp.tables()
    inputs = entry.inputs(exp, {"dataset": "digits"})
    assert inputs == [f"results/digits/cohen/fs/sigma{s}/certify_fixed.tsv" for s in ("0.12", "0.25", "0.5")]
    arguments = entry.arguments(exp, {"dataset": "digits"})
    assert arguments["builder"]["radii"] == [0.0, 0.5] and len(arguments["builder"]["records"]) == 3
    assert arguments["render"] == {"decimals": 2, "bold": True}


#: issue 19's tables per best table: (entry, the best table's entry it accompanies, output name)
PER_BEST_TABLE = [
    ("best_table_held_out", "{table}_held_out"),
    ("comparisons_table", "comparisons_{table}"),
    ("comparisons_held_out_table", "comparisons_{table}_held_out"),
    ("selection_optimism_table", "selection_optimism_{table}"),
]
#: each seed-paper study and its comparisons entry
STUDY_COMPARISONS = {
    "consistency_table": "consistency_comparisons",
    "methods_table": "methods_comparisons",
    "easy_focus_ablation_table": "easy_focus_ablation_comparisons",
}


def outputs_of(exp: Experiment) -> dict[str, list[str]]:
    """Each entry's output names on ``exp``."""
    found: dict[str, list[str]] = {}
    for target, _, output in exp.targets():
        found.setdefault(target.name, []).append(output)
    return found


@pytest.mark.parametrize("name", CONFIGS)
def test_every_best_and_study_table_has_its_comparisons_and_held_out_tables(name):
    """Issue 19: one comparisons table per best or study table (under each built selection), a
    held-out best table and a selection-optimism table per best table, each reading the logs of
    the table it accompanies."""
    exp = experiment(name)
    found = outputs_of(exp)
    best = found["best_table"]
    assert best == best_tables(exp) and best
    for entry, pattern in PER_BEST_TABLE:
        assert found[entry] == [pattern.format(table=table) for table in best], entry
        for table in best:
            inputs = CATALOGUE[entry].inputs(exp, {"table": table})
            assert inputs == CATALOGUE["best_table"].inputs(exp, {"table": table}), (entry, table)
    studies = [study for study in STUDY_COMPARISONS if study in found]
    assert bool(studies) == (name in ("config.yaml", "seed_papers.yaml"))
    for study in studies:
        comparisons = CATALOGUE[STUDY_COMPARISONS[study]]
        assert found[comparisons.name] == [f"comparisons_{table}" for table in found[study]]
        for wildcards in CATALOGUE[study].instances(exp, CATALOGUE[study]):
            records = comparisons.query(exp, wildcards)
            assert comparisons.inputs(exp, wildcards) == CATALOGUE[study].inputs(exp, wildcards)
            # exactly one baseline row per σ₀ (what study_comparisons_table requires)
            baseline = comparisons.arguments(exp, wildcards)["builder"]["baseline"]
            for sigma in {r.sigma0 for r in records}:
                assert [r.name for r in records if r.sigma0 == sigma].count(baseline) == 1, (study, sigma)
    assert_one_rule_per_output(exp)


def test_the_study_baselines_are_gaussian_and_the_full_ablation_variant():
    exp = experiment("config.yaml")
    baseline = {
        entry: CATALOGUE[entry].arguments(exp, {"dataset": "mnist5k"})["builder"]["baseline"]
        for entry in STUDY_COMPARISONS.values()
    }
    assert baseline == {
        "consistency_comparisons": "Cohen",
        "methods_comparisons": display_name("cohen@easy_focus"),  # Sun et al.'s Gaussian: m = 4
        "easy_focus_ablation_comparisons": "EasyFocus (discard+reweigh+attack)",
    }


def test_the_statistics_section_reaches_every_builder_with_intervals_and_the_captions():
    """alpha, n_boot and the config's seed reach every builder with intervals; captions say the level."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["seed"], cfg["statistics"] = 7, {"alpha": 0.1, "n_boot": 50}
    exp = Experiment(cfg)
    checked = set()
    for target, wildcards, output in exp.targets():
        module, function = target.builder.split(":")
        accepted = inspect.signature(getattr(importlib.import_module(module), function)).parameters
        wanted = {"inference": Inference(alpha=0.1, n_boot=50, seed=7), "alpha": 0.1}
        expected = {k: v for k, v in wanted.items() if k in accepted}
        if not expected:
            continue
        arguments = target.arguments(exp, wildcards)
        assert {k: arguments["builder"].get(k) for k in expected} == expected, output
        if target.caption_of is not None:
            assert "90%" in arguments["render"]["caption"] or "α = 0.1" in arguments["render"]["caption"], output
        checked.add(target.name)
    assert {"best_table", "appendix_h_table", "appendix_b_table", "methods_table", "k_sweep_figure"} <= checked
    assert {entry for entry, _ in PER_BEST_TABLE} | set(STUDY_COMPARISONS.values()) <= checked
    held_out = CATALOGUE["best_table_held_out"].arguments(exp, {"table": "table1"})
    assert held_out["builder"]["selection"] == "held_out" and "other half" in held_out["render"]["caption"]
    # Appendix F charges each K the whole Algorithm 1 run to its largest K, and says so
    assert "upper bound" in CATALOGUE["appendix_f_table"].arguments(exp, {})["render"]["caption"]
    assert CATALOGUE["best_table"].arguments(exp, {"table": "table1"})["builder"]["selection"] == "test"


@pytest.mark.parametrize(
    "selection,built,absent",
    [
        (["test"], ["table1", "comparisons_table1"], ["table1_held_out", "selection_optimism_table1"]),
        (["held_out"], ["table1_held_out", "comparisons_table1_held_out", "selection_optimism_table1"], ["table1"]),
    ],
)
def test_statistics_selection_says_which_best_tables_are_built(selection, built, absent):
    cfg = yaml.safe_load((REPO / "config" / "digits.yaml").read_text())
    cfg["statistics"] = {"selection": selection}
    tables = {Path(path).stem for path in Experiment(cfg).tables()}
    assert set(built) <= tables and not set(absent) & tables
    assert "comparisons_table1" not in tables or "test" in selection


def test_the_statistics_defaults_are_the_schemas():
    schema = yaml.safe_load((REPO / "config" / "schema" / "config.schema.yaml").read_text())
    section = schema["properties"]["statistics"]["properties"]
    defaults = TableStatistics.from_config({"seed": 3})
    assert {key: section[key]["default"] for key in section} == {
        "alpha": defaults.inference.alpha,
        "n_boot": defaults.inference.n_boot,
        "selection": list(defaults.selection),
    }
    with pytest.raises(ValueError, match="statistics.selection must list distinct ones of"):
        TableStatistics(selection=("test", "test"))
    with pytest.raises(ValueError, match=r"alpha must lie in \(0, 1\), got 1.5"):
        Inference(alpha=1.5)
    with pytest.raises(ValueError, match="n_boot must be a positive integer, got 0"):
        Inference(n_boot=0)


def test_appendix_f_reads_the_sigma_logs_and_the_comparison_the_tables_it_compares():
    exp = experiment("paper.yaml")
    appendix_f = CATALOGUE["appendix_f_table"].inputs(exp, {})
    assert "results/cifar10/cohen/ds/sigma0.5/sigma_opt.tsv" in appendix_f
    assert not any("memory_grid" in path for path in appendix_f)  # Appendix F leaves the grid search out
    tables = CATALOGUE["paper_comparison"].arguments(exp, {})["builder"]["tables"]
    appendix_h = ["appendix_h_cohen", "appendix_h_smoothadv", "appendix_h_macer"]
    assert list(tables) == ["table1", "table2", "table3", "table4", *appendix_h]
    assert CATALOGUE["paper_comparison"].arguments(exp, {})["render"]["decimals"] == 2  # Appendix H's digits


def test_a_paper_comparison_without_the_papers_tables_is_refused_naming_the_methods():
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg |= {"compare_with_paper": True, "methods": ["consistency", "stability"]}
    with pytest.raises(ValueError, match="compare_with_paper: none of this config's tables .* cohen, smoothadv"):
        CATALOGUE["paper_comparison"].instances(Experiment(cfg), CATALOGUE["paper_comparison"])


def test_the_catalogue_and_the_design_load_without_torch_or_matplotlib():
    code = (
        "import sys, ddrs.pipeline.catalogue, ddrs.pipeline; print('torch' in sys.modules, 'matplotlib' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "False"]


def test_unknown_target_name_is_an_error():
    with pytest.raises(ValueError, match="'table9' is not a table or figure"):
        experiment("digits.yaml").target_records("table9")


def test_build_writes_what_the_builder_returns_by_its_type(tmp_path, monkeypatch):
    frame = pd.DataFrame({"dataset": ["d", "d"], "variant": ["A", "B"], "0.00": [50.0, 60.0], "ACR": [0.1234, 0.2]})
    best = BestTable(frame, pd.DataFrame({"metric": ["ACR"], "value": [0.2]}))
    outputs = {kind: str(tmp_path / f"t.{kind}") for kind in ("csv", "md", "tex")}
    outputs["winners"] = str(tmp_path / "w.csv")
    write(best, outputs, decimals=2, bold=False)
    assert pd.read_csv(outputs["csv"])["ACR"].tolist() == [0.1234, 0.2]
    assert "50.00" in Path(outputs["md"]).read_text() and pd.read_csv(outputs["winners"])["value"].tolist() == [0.2]
    with pytest.raises(TypeError, match="a builder returned int"):
        write(3, outputs)
    module = type(sys)("fake_builders")
    module.table = lambda records, factor: frame.assign(ACR=frame["ACR"] * factor)
    monkeypatch.setitem(sys.modules, "fake_builders", module)
    monkeypatch.setitem(CATALOGUE, "fake", Target("fake", "fake", "fake_builders:table", "study_table", "x"))
    build("fake", {"builder": {"records": [], "factor": 10}, "render": {}}, outputs)
    assert pd.read_csv(outputs["csv"])["ACR"].tolist() == [1.234, 2.0]


def test_the_run_grid_the_training_plan_and_the_records_stand_alone():
    cfg = yaml.safe_load((REPO / "config" / "digits.yaml").read_text())
    grid = RunGrid(cfg)
    assert grid.sigmas("digits", "cohen") == [0.12, 0.25, 0.5]
    training = TrainingPlan(grid)
    assert training.train_options(Run("digits", "cohen", "fs", 0.25))["sigma"] == 0.25
    records = Records(grid, training)
    first = records.fixed_records("digits", "cohen")[0]
    assert first.log == "results/digits/cohen/fs/sigma0.12/certify_fixed.tsv"
    assert [r.K for r in records.ds_records("digits", "cohen", "ds")][:3] == [50, 100, 200]


def test_job_run_times_follow_the_work_up_to_the_configured_limit():
    grid = experiment("paper.yaml").grid
    # 10,000 CIFAR-10 inputs at n0 + n = 100,100 draws, twice the paper GPU's 3.2 s per 100,000
    assert job_minutes(grid, "certify", "cifar10") == math.ceil(2 * 10_000 * 1.001 * 3.2 / 60) == 1068
    assert job_minutes(grid, "certify", "cifar10", passes=2) == 24 * 60  # capped: it resumes over retries
    assert job_minutes(grid, "train", "cifar10") == 24 * 60 and job_minutes(grid, "train", "digits") == 30
    config = experiment("paper.yaml").config
    longer = RunGrid({**config, "max_job_minutes": 3 * 24 * 60})
    assert job_minutes(longer, "certify", "cifar10", passes=2) == 2136
    fewer = {**config["datasets"]["cifar10"], "test_skip": 100}
    fewer_inputs = RunGrid({**config, "datasets": {**config["datasets"], "cifar10": fewer}})
    assert job_minutes(fewer_inputs, "certify", "cifar10") == 60
    rules = "".join(path.read_text() for path in (REPO / "rules").glob("*.smk"))
    named = re.search(r"[\"'](imagenet|cifar10|mnist|mnist5k|digits)[\"']", rules)
    assert not named, f"a rule decides by a dataset's name: {named}"


def test_measured_columns_print_to_the_entrys_decimals_and_the_csv_keeps_full_precision(tmp_path):
    """Appendix F and the gradient norms printed 17 digits (0.024722660725001334) in Markdown and LaTeX."""
    frame = pd.DataFrame(
        {"variant": ["Cohen", "MACER"], "sigma": [0.5, 0.5], "easy_grad_norm": [0.024722660725001334, 1.5]}
    )
    outputs = {kind: str(tmp_path / f"g.{kind}") for kind in ("csv", "md", "tex")}
    write(frame, outputs, decimals=4, bold=False, measured=("easy_grad_norm",))
    assert "0.024722660725001334" in Path(outputs["csv"]).read_text()
    for kind in ("md", "tex"):
        text = Path(outputs[kind]).read_text()
        assert "0.0247" in text and "1.5000" in text and "0.02472266" not in text, kind
    with pytest.raises(ValueError, match=r"measured columns \['seconds'\] are not in the table"):
        write(frame, outputs, decimals=4, measured=("seconds",))


def test_the_measured_columns_of_the_catalogue_are_its_builders_columns():
    from ddrs.analysis.log_record import LogRecord
    from ddrs.analysis.render import runtime_caption
    from ddrs.analysis.tables import runtime_table
    from ddrs.training.gradient_norms import SUMMARY_COLUMNS

    log = pd.DataFrame({"idx": [0], "label": [1], "predict": [1], "radius": [0.5], "correct": [1], "time": [0.1]})
    runtime = runtime_table([LogRecord(log, "digits", "cohen", sigma0=0.25)])
    assert set(CATALOGUE["appendix_f_table"].measured) <= set(runtime.columns)
    assert set(CATALOGUE["gradient_norms_table"].measured) <= set(SUMMARY_COLUMNS)
    render = CATALOGUE["appendix_f_table"].arguments(experiment("digits.yaml"), {})["render"]
    assert render == {
        "decimals": 4,
        "bold": False,
        "measured": ("certify_s", "extra_s", "total_s"),
        "caption": runtime_caption(),
    }
