"""Replication: training runs as the unit of a claim about a method (ddrs.analysis.replication,
variance_budget, claims; the replicates of the run grid and the trainer)."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from ddrs.analysis.claims import claims_table
from ddrs.analysis.log_record import LogRecord
from ddrs.analysis.replication import (
    TOO_FEW_RUNS,
    replicated_best_table,
    replicated_comparisons_table,
    replicated_study_comparisons_table,
    replicated_study_table,
    run_level_p,
)
from ddrs.analysis.stats import Inference, bootstrap_means, percentile_interval, pigeonhole_means
from ddrs.analysis.variance_budget import runs_needed, variance_budget
from ddrs.models import load_checkpoint
from ddrs.pipeline import Experiment, Run
from ddrs.pipeline.job_plan import JobPlan
from ddrs.training import TrainConfig, train

INFERENCE = Inference(alpha=0.05, n_boot=400, seed=3)
RADII = [0.0, 0.5, 1.0]


def _log(radii: np.ndarray, correct: np.ndarray) -> pd.DataFrame:
    n = len(radii)
    return pd.DataFrame(
        {
            "idx": np.arange(n),
            "label": np.zeros(n, dtype=int),
            "predict": np.where(correct, 0, 1),
            "radius": radii,
            "correct": correct.astype(int),
            "time": np.zeros(n),
        }
    )


def _runs(rng, shifts, n=120, base=None):
    """Per-run logs of one recipe: the same inputs, each run's radii shifted by its ``shifts`` entry."""
    base = rng.uniform(0, 1.5, n) if base is None else base
    n = len(base)
    correct = np.ones(n, dtype=bool)
    return [_log(np.clip(base + shift + rng.normal(0, 0.02, n), 0, None), correct) for shift in shifts]


def _records(logs, method="cohen", name=None, sigma0=0.5, **fields):
    return [
        LogRecord(log, "digits", method, sigma0=sigma0, variant=name, replicate=r, **fields)
        for r, log in enumerate(logs)
    ]


# --- the pigeonhole bootstrap ----------------------------------------------------------------------


def test_identical_runs_give_exactly_the_per_input_interval():
    rng = np.random.default_rng(0)
    one = rng.uniform(0, 2, size=(150, 3))
    runs = np.stack([one] * 5)
    replicated = percentile_interval(pigeonhole_means(runs, n_boot=500, seed=1, dataset="digits"))
    per_input = percentile_interval(bootstrap_means(one, n_boot=500, seed=1, dataset="digits"))
    # the same input resamples: equal up to float64 rounding of a mean of five equal numbers
    np.testing.assert_allclose(replicated, per_input, rtol=0, atol=1e-12)


def test_a_planted_disagreement_between_runs_widens_the_interval():
    rng = np.random.default_rng(1)
    one = rng.uniform(0, 2, size=(150, 1))
    agreeing = np.stack([one] * 5)
    disagreeing = np.stack([one + shift for shift in (-0.3, -0.1, 0.0, 0.1, 0.3)])
    low_a, high_a = percentile_interval(pigeonhole_means(agreeing, n_boot=1000, seed=1, dataset="d"))
    low_d, high_d = percentile_interval(pigeonhole_means(disagreeing, n_boot=1000, seed=1, dataset="d"))
    assert (high_d - low_d)[0] > 1.5 * (high_a - low_a)[0]


def test_the_pigeonhole_interval_covers_the_mean_of_new_runs_and_inputs_at_its_level():
    """Runs and inputs drawn afresh from a crossed model: the 90% interval covers the population mean
    in about 90% of experiments, where an interval over inputs alone covers far less often."""
    rng = np.random.default_rng(2)
    covered, covered_inputs, trials = 0, 0, 150
    for _ in range(trials):
        runs = rng.normal(0, 0.5, size=(6, 1, 1))
        inputs = rng.normal(0, 1.0, size=(1, 80, 1))
        values = 3.0 + runs + inputs + rng.normal(0, 0.3, size=(6, 80, 1))
        low, high = percentile_interval(
            pigeonhole_means(values, n_boot=400, seed=int(rng.integers(1e9)), dataset="d"), 0.1
        )
        covered += low[0] <= 3.0 <= high[0]
        low_i, high_i = percentile_interval(bootstrap_means(values.mean(axis=0), n_boot=400, seed=1, dataset="d"), 0.1)
        covered_inputs += low_i[0] <= 3.0 <= high_i[0]
    assert covered / trials >= 0.8  # pigeonhole is conservative to slightly liberal at 6 runs
    assert covered_inputs / trials < 0.7


def test_run_level_p_is_the_paired_t_test_and_handles_runs_that_do_not_vary():
    from scipy.stats import ttest_rel

    rng = np.random.default_rng(3)
    a, b = rng.normal(1, 1, 6), rng.normal(0, 1, 6)
    assert run_level_p((a - b)[:, None])[0] == pytest.approx(ttest_rel(a, b).pvalue, rel=1e-12)
    assert run_level_p(np.zeros((4, 1)))[0] == 1.0
    assert run_level_p(np.full((4, 1), 0.5))[0] == 0.0


# --- replicated tables ------------------------------------------------------------------------------


def test_a_replicated_cell_is_the_mean_over_runs_with_its_run_count():
    rng = np.random.default_rng(4)
    logs = _runs(rng, [0.0, 0.1, 0.2, 0.3])
    table = replicated_study_table(_records(logs), RADII, inference=INFERENCE)
    row = table.iloc[0]
    assert row["runs"] == 4
    expected = np.mean([np.where(log["correct"] == 1, log["radius"], 0).mean() for log in logs])
    assert row["ACR"] == pytest.approx(expected, rel=1e-12)
    assert row["ACR_low"] < row["ACR"] < row["ACR_high"]
    certified = np.mean([100 * ((log["correct"] == 1) & (log["radius"] >= 0.5)).mean() for log in logs])
    assert row["0.50"] == pytest.approx(certified, rel=1e-12)


def test_runs_that_are_not_numbered_from_zero_are_refused():
    rng = np.random.default_rng(5)
    records = [
        LogRecord(log, "digits", "cohen", sigma0=0.5, replicate=r)
        for r, log in zip((0, 2), _runs(rng, [0, 0]), strict=True)
    ]
    with pytest.raises(ValueError, match=r"training runs \[0, 2\] are not 0, 1"):
        replicated_study_table(records, RADII, inference=INFERENCE)


def test_a_consistent_shift_across_runs_is_significant_and_a_run_disagreement_is_not():
    rng = np.random.default_rng(6)
    base = rng.uniform(0, 1.5, 120)
    gaussian = _runs(rng, [0.0, 0.05, -0.05, 0.02, -0.02], base=base)
    better = _runs(rng, [0.2, 0.25, 0.15, 0.22, 0.18], base=base)
    noisy = _runs(rng, [0.4, -0.35, 0.3, -0.3, 0.0], base=base)
    records = _records(gaussian, name="Gaussian") + _records(better, name="Better") + _records(noisy, name="Noisy")
    table = replicated_study_comparisons_table(records, RADII, baseline="Gaussian", inference=INFERENCE)
    better_row = table[table["variant"] == "Better"].iloc[0]
    noisy_row = table[table["variant"] == "Noisy"].iloc[0]
    assert better_row["runs"] == 5 and better_row["ACR_p_holm"] < 0.05 and better_row["ACR_low"] > 0
    # a per-input test of one pair of runs would call this large; across runs it is noise
    assert noisy_row["ACR_p_holm"] > 0.05 and noisy_row["ACR_low"] < 0 < noisy_row["ACR_high"]


def test_a_comparison_of_one_run_says_so_instead_of_a_p_value():
    rng = np.random.default_rng(7)
    records = _records(_runs(rng, [0.0]), name="Gaussian") + _records(_runs(rng, [0.3]), name="Other")
    row = replicated_study_comparisons_table(records, RADII, baseline="Gaussian", inference=INFERENCE).iloc[0]
    assert row["runs"] == 1 and row["test"] == TOO_FEW_RUNS
    assert "ACR_p" not in row or pd.isna(row["ACR_p"])


def test_replicated_best_rows_choose_their_envelope_in_each_run(tmp_path):
    rng = np.random.default_rng(8)
    records = []
    for sigma0, shift in ((0.25, 0.0), (0.5, 0.1)):
        records += _records(_runs(rng, [shift, shift + 0.05, shift - 0.05]), sigma0=sigma0)
        records += _records(_runs(rng, [shift + 0.1] * 3), sigma0=sigma0, train_mode="fs", certify_mode="ds", K=50)
    table = replicated_best_table(records, RADII, inference=INFERENCE)
    assert list(table["variant"]) == ["Cohen", "Cohen-DS"] and set(table["runs"]) == {3}
    comparisons = replicated_comparisons_table(records, RADII, selection="held_out", inference=INFERENCE)
    row = comparisons.iloc[0]
    assert (row["variant"], row["baseline"], row["tested"]) == ("Cohen-DS", "Cohen", True)
    assert np.isfinite(row["ACR_per_log_p"]) and "ACR_per_input_best_p" not in comparisons.columns


# --- the variance budget ----------------------------------------------------------------------------


def test_the_variance_budget_recovers_planted_run_input_and_monte_carlo_parts(tmp_path):
    rng = np.random.default_rng(9)
    n = 400
    base = rng.uniform(0, 2, n)  # input spread: var ≈ 1/3, /n
    shifts = rng.normal(0, 0.1, 8)  # run spread: var ≈ 0.01
    correct = np.ones(n, dtype=bool)
    logs = [_log(base + s, correct) for s in shifts]
    run0 = tmp_path / "cohen" / "sigma0.5"
    run0.mkdir(parents=True)
    logs[0].to_csv(run0 / "certify_fixed.tsv", sep="\t", index=False)
    monte_carlo = []
    for d in range(1, 6):  # MC spread per input: var 0.04, /n = 1e-4
        path = run0 / f"certify_fixed_mc{d}.tsv"
        _log(np.clip(base + shifts[0] + rng.normal(0, 0.2, n), 0, None), correct).to_csv(path, sep="\t", index=False)
        monte_carlo.append(path)
    records = [LogRecord(run0 / "certify_fixed.tsv", "digits", "cohen", sigma0=0.5)]
    records += [LogRecord(log, "digits", "cohen", sigma0=0.5, replicate=r) for r, log in enumerate(logs) if r]
    table, figure = variance_budget(records, monte_carlo, RADII, effect_acr=0.05, inference=INFERENCE)
    acr = table[table["metric"] == "ACR"].iloc[0]
    assert acr["var_runs"] == pytest.approx(np.var(shifts, ddof=1), rel=1e-9)
    assert acr["var_inputs"] == pytest.approx(np.var(base, ddof=1) / n, rel=0.05)
    assert acr["var_monte_carlo"] == pytest.approx(0.04 / n, rel=0.3)
    assert acr["dominant"] == "training runs" and (acr["runs"], acr["monte_carlo"]) == (8, 5)
    assert acr["share_runs"] + acr["share_inputs"] + acr["share_monte_carlo"] == pytest.approx(1.0)
    # a paired t-test of differences of SD √2 · 0.1 needs ≥ 30 runs to detect 0.05 at power 0.8
    assert 20 <= acr["runs_needed"] <= 60
    assert figure.axes


@pytest.mark.parametrize(("effect_in_run_sds", "expected"), [(0.5, 65), (3.0, 5), (8.0, 3), (20.0, 2), (100.0, 2)])
def test_runs_needed_is_the_least_run_count_with_the_power_even_where_the_solver_fails(effect_in_run_sds, expected):
    """Large effects (the default's DS-against-FS ACR) once crashed variance_budget: statsmodels' solver
    gives NaN from an effect size of about 8 (here 20 and 100 run SDs). The count is the least n >= 2
    whose paired t-test over n runs has power 0.8."""
    from statsmodels.stats.power import TTestPower

    needed = runs_needed(effect_in_run_sds * 0.1, 0.01, 0.05)  # run SD 0.1
    assert needed == expected
    size = effect_in_run_sds / math.sqrt(2)
    power = [
        TTestPower().power(effect_size=size, nobs=n, alpha=0.05, alternative="two-sided") for n in (needed - 1, needed)
    ]
    assert power[1] >= 0.8 and not power[0] >= 0.8  # NaN (not evaluable) counts as not reached


# --- the claims ---------------------------------------------------------------------------------------


def test_claims_hold_are_contradicted_or_not_shown_by_the_run_level_test_and_the_interval():
    rng = np.random.default_rng(10)
    base = rng.uniform(5, 6.5, 150)  # no radius reaches 0, so shifts and patterns are not clipped
    gaussian = _runs(rng, [0.0, 0.03, -0.03, 0.01, -0.01], base=base)
    better = _runs(rng, [0.2, 0.22, 0.18, 0.21, 0.19], base=base)
    worse = _runs(rng, [-0.2, -0.22, -0.18, -0.21, -0.19], base=base)
    # every run 0.1 above Gaussian's on average, but by a pattern over inputs (the same in every run)
    # with a spread of 1.5: across runs a sure difference, on new inputs not shown
    pattern = rng.normal(0, 1.5, len(base))
    these_inputs = _runs(rng, [0.1, 0.11, 0.09, 0.1, 0.1], base=base + pattern - pattern.mean())
    records = _records(gaussian, name="Gaussian") + _records(better, name="Better") + _records(worse, name="Worse")
    records += _records(these_inputs, name="TheseInputs") + _records(_runs(rng, [0.0], base=base), name="Single")
    claims = [
        {
            "paper": "P",
            "claim": c,
            "kind": "per_sigma",
            "variant": v,
            "baseline": "Gaussian",
            "metric": "ACR",
            "direction": d,
        }
        for c, v, d in (
            ("better", "Better", "greater"),
            ("worse", "Worse", "greater"),
            ("these_inputs", "TheseInputs", "greater"),
            ("single", "Single", "greater"),
        )
    ]
    table = claims_table(records, claims, RADII, classes={"digits": 10}, inference=INFERENCE).set_index("claim")
    assert table["verdict"].to_dict() == {
        "better": "holds",
        "worse": "contradicted",
        "these_inputs": "holds on these inputs only",
        "single": "not testable (1 run)",
    }
    assert table.loc["these_inputs", "p_holm"] < INFERENCE.alpha
    assert table.loc["these_inputs", "low"] < 0 < table.loc["these_inputs", "high"]
    assert table.loc["better", "low"] > 0 and table.loc["worse", "high"] < 0
    assert table.loc["better", "runs"] == 5


# --- replicates in the run grid and the trainer ---------------------------------------------------------


@pytest.fixture(scope="module")
def digits_experiment():
    with open("config/digits.yaml") as handle:
        config = yaml.safe_load(handle)
    from snakemake.utils import validate

    validate(config, "config/schema/config.schema.yaml", set_default=True)
    return config


def test_run_zero_keeps_the_paths_options_and_documents_of_a_single_run(digits_experiment):
    replicated = Experiment(digits_experiment)
    single = copy.deepcopy(digits_experiment)
    single["replication"] = {"runs": 1, "methods": []}
    single = Experiment(single)
    for run in (Run("digits", "cohen", "fs", 0.25), Run("digits", "cohen", "ds", 0.25)):
        assert replicated.grid.run_dir(run) == single.grid.run_dir(run) == f"results/digits/cohen/{run.mode}/sigma0.25"
        assert replicated.training.train_options(run) == single.training.train_options(run)
        assert "replicate" not in replicated.training.train_options(run)
        assert JobPlan(replicated.grid).fixed_certification(run) == JobPlan(single.grid).fixed_certification(run)
    assert set(single.runs()) <= set(replicated.runs())


def test_replicates_have_their_own_paths_seeds_and_init_and_share_the_certification_noise(digits_experiment):
    exp = Experiment(digits_experiment)
    run = Run("digits", "cohen", "ds", 0.25, replicate=2)
    assert exp.grid.run_dir(run) == "results/digits/cohen/ds/sigma0.25_r2"
    assert exp.run_at(*run.wildcards) == run
    with pytest.raises(ValueError, match=r"results/digits/cohen/ds/sigma0.25_r7 is no run of this config"):
        exp.run_at("digits", "cohen", "ds", "0.25", "_r7")
    options = exp.training.train_options(run)
    assert options["replicate"] == 2 and options["seed"] == digits_experiment["seed"]
    assert exp.training.init_run(run) is None or exp.training.init_run(run).replicate == 2
    plan = JobPlan(exp.grid)
    fs = Run("digits", "cohen", "fs", 0.25)
    # common random numbers: every run is certified with the same noise; the re-certification with other noise
    assert plan.fixed_certification(Run("digits", "cohen", "fs", 0.25, 1)) == plan.fixed_certification(fs)
    assert plan.monte_carlo_certification(fs, 1)["certify"]["seed"] != plan.fixed_certification(fs)["certify"]["seed"]
    runs = set(exp.runs())
    assert {Run("digits", "cohen", mode, 0.5, r) for mode in ("fs", "ds") for r in range(3)} <= runs
    assert Run("digits", "smoothadv", "fs", 0.5, 1) not in runs  # not replicated


def test_run_zero_trains_the_single_run_and_another_run_changes_every_training_seed(tmp_path):
    base = dict(
        dataset="digits", arch="mlp", method="cohen", sigma=0.25, epochs=1, batch_size=128, eval_max=50, device="cpu"
    )
    assert TrainConfig(**base).run_seed == TrainConfig(**base, replicate=0).run_seed == 0
    assert TrainConfig(**base, replicate=1).run_seed != TrainConfig(**base, replicate=2).run_seed
    paths = {name: tmp_path / f"{name}.pt" for name in ("plain", "zero", "one")}
    train(TrainConfig(**base), paths["plain"], progress=False)
    train(TrainConfig(**base, replicate=0), paths["zero"], progress=False)
    train(TrainConfig(**base, replicate=1), paths["one"], progress=False)
    (plain, _), (zero, _), (one, meta) = (load_checkpoint(paths[n]) for n in ("plain", "zero", "one"))
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), zero.state_dict().values(), strict=True))
    assert not all(
        torch.equal(a, b) for a, b in zip(plain.state_dict().values(), one.state_dict().values(), strict=True)
    )
    assert meta["config"]["replicate"] == 1 and meta["config"]["seed"] == 0  # the data split stays seed 0's
