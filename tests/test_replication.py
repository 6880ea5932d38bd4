"""Replication: training runs as the unit of a claim about a method (ddrs.analysis.replication,
variance_budget, claims; the replicates of the run grid and the trainer)."""

from __future__ import annotations

import copy

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
from ddrs.analysis.stats import Inference, bootstrap_means, holm, percentile_interval, pigeonhole_means
from ddrs.analysis.variance_budget import variance_budget
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


def test_the_variance_budget_partitions_a_run_s_metric_as_mixedlm_does_and_shows_the_monte_carlo_part(tmp_path):
    from ddrs.analysis.crossed import mixed_model_components

    rng = np.random.default_rng(9)
    n = 80
    base = rng.uniform(0, 2, n)  # input spread: σ²_input ≈ 1/3
    shifts = rng.normal(0, 0.1, 6)  # run spread: σ²_run ≈ 0.01
    correct = np.ones(n, dtype=bool)
    logs = [_log(np.clip(base + s + rng.normal(0, 0.05, n), 0, None), correct) for s in shifts]  # σ²_residual 0.0025
    run0 = tmp_path / "cohen" / "sigma0.5"
    run0.mkdir(parents=True)
    logs[0].to_csv(run0 / "certify_fixed.tsv", sep="\t", index=False)
    monte_carlo = []
    for d in range(1, 6):  # another noise draw moves each input by SD 0.04 around run 0's model
        path = run0 / f"certify_fixed_mc{d}.tsv"
        radius = np.clip(logs[0]["radius"] + rng.normal(0, 0.04, n), 0, None)
        _log(radius, correct).to_csv(path, sep="\t", index=False)
        monte_carlo.append(path)
    records = [LogRecord(run0 / "certify_fixed.tsv", "digits", "cohen", sigma0=0.5)]
    records += [LogRecord(log, "digits", "cohen", sigma0=0.5, replicate=r) for r, log in enumerate(logs) if r]
    table, figure = variance_budget(records, monte_carlo, [0.0, 0.5, 4.0])
    acr = table[table["metric"] == "ACR"].iloc[0]
    values = np.stack([np.where(log["correct"] == 1, log["radius"], 0) for log in logs])
    fitted = mixed_model_components(values)
    for part in ("run", "input", "residual"):
        assert acr[f"sigma2_{part}"] == pytest.approx(fitted[part], rel=0.05)
    assert acr["sigma2_residual"] == pytest.approx(0.05**2, rel=0.2)
    assert acr[["share_run", "share_input", "share_residual"]].sum() == pytest.approx(1.0)
    assert acr["share_run"] == pytest.approx(
        acr["sigma2_run"] / (acr["sigma2_run"] + 1 / n * (fitted["input"] + fitted["residual"])), rel=0.05
    )
    assert acr["sigma2_monte_carlo"] == pytest.approx(0.04**2, rel=0.3)
    assert acr["dominant"] == "training runs" and (acr["runs"], acr["inputs"], acr["monte_carlo"]) == (6, n, 5)
    # every input is certified at 0 in every run and draw: no variance at any level, no row; none at 4.0 either
    assert set(table["metric"]) == {"0.50", "ACR"}
    assert table.attrs["scientific"] == ["sigma2_run", "sigma2_input", "sigma2_residual", "sigma2_monte_carlo"]
    assert figure.axes


def test_a_negative_run_component_is_shown_as_zero_with_a_flag(tmp_path):
    rng = np.random.default_rng(11)
    base = rng.uniform(0, 2, 200)
    correct = np.ones(200, dtype=bool)
    logs = [_log(base + rng.normal(0, 0.3, 200), correct) for _ in range(4)]  # no run effect: σ²_run ≈ 0 ± noise
    records = [LogRecord(log, "digits", "cohen", sigma0=0.5, replicate=r) for r, log in enumerate(logs)]
    table, _ = variance_budget(records, (), [0.0])
    flagged = table[table["flag"] != ""]
    assert len(flagged) and (flagged["sigma2_run"] == 0).all()
    assert flagged["flag"].str.fullmatch(r"σ²_run estimated -\d\.\d\de-\d\d, shown as 0").all()


# --- the claims ---------------------------------------------------------------------------------------


def _planted_claims():
    """Claims on planted runs (5 runs, 150 inputs): a clean shift, its opposite, and an effect that is
    the same in every run but made of a per-input pattern of spread 1.5 (a run-level effect with a
    large per-input spread: across runs a sure difference, on new inputs not shown); and one of 1 run."""
    rng = np.random.default_rng(10)
    base = rng.uniform(5, 6.5, 150)  # no radius reaches 0, so shifts and patterns are not clipped
    gaussian = _runs(rng, [0.0, 0.03, -0.03, 0.01, -0.01], base=base)
    better = _runs(rng, [0.2, 0.22, 0.18, 0.21, 0.19], base=base)
    worse = _runs(rng, [-0.2, -0.22, -0.18, -0.21, -0.19], base=base)
    pattern = rng.normal(0, 1.5, len(base))
    these_inputs = _runs(rng, [0.1, 0.11, 0.09, 0.1, 0.1], base=base + pattern - pattern.mean())
    records = _records(gaussian, name="Gaussian") + _records(better, name="Better") + _records(worse, name="Worse")
    records += _records(these_inputs, name="TheseInputs") + _records(_runs(rng, [0.0], base=base), name="Single")
    claims = [
        {"paper": "P", "claim": c, "kind": "per_sigma", "variant": v, "baseline": "Gaussian", "metric": "ACR",
         "direction": "greater"}
        for c, v in (("better", "Better"), ("worse", "Worse"), ("these_inputs", "TheseInputs"), ("single", "Single"))
    ]  # fmt: skip
    return records, claims


@pytest.fixture(scope="module")
def planted_claims():
    records, claims = _planted_claims()
    return records, claims, claims_table(records, claims, RADII, classes={"digits": 10}, inference=INFERENCE)


def test_a_claim_holds_only_where_the_unconditional_test_adjusted_over_the_claims_says_so(planted_claims):
    table = planted_claims[2].set_index("claim")
    assert table["verdict"].to_dict() == {
        "better": "holds",
        "worse": "contradicted",
        "these_inputs": "holds on these inputs only",
        "single": "not testable (1 run)",
    }
    # the run-level effect with a large per-input spread: the runs agree, new inputs would not
    assert table.loc["these_inputs", "p_fixed_inputs_holm"] < INFERENCE.alpha <= table.loc["these_inputs", "p_holm"]
    assert table.loc["these_inputs", "low"] < 0 < table.loc["these_inputs", "high"]
    assert table.loc["these_inputs", "df"] > 50  # the inputs' part weighs, and brings its degrees of freedom
    assert table.loc["better", "low"] > 0 and table.loc["worse", "high"] < 0 and table.loc["better", "runs"] == 5
    tested = table.loc[["better", "worse", "these_inputs"]]
    np.testing.assert_allclose(tested["p_holm"], holm(tested["p"].to_numpy()), rtol=1e-12)


def test_the_claims_verdicts_do_not_move_with_the_bootstrap_s_seed(planted_claims, monkeypatch):
    """20 bootstrap seeds (the split's seed kept): the same verdicts and tests, and each interval bound
    on the same side of 0 wherever it settled (its Monte Carlo error below a tenth of its distance to 0)."""
    import ddrs.analysis.claims as claims_module

    records, claims, table = planted_claims
    claims, table = claims[:3], table.iloc[:3]  # the row of one run has no test to move
    settled = table["interval_note"] == ""
    for seed in range(1, 21):

        def reseeded(values, *, n_boot, seed=seed, dataset):
            return pigeonhole_means(values, n_boot=n_boot, seed=seed, dataset=dataset)

        monkeypatch.setattr(claims_module, "pigeonhole_means", reseeded)
        again = claims_table(records, claims, RADII, classes={"digits": 10}, inference=INFERENCE)
        assert again["verdict"].tolist() == table["verdict"].tolist()
        tests = ["p", "p_holm", "p_fixed_inputs_holm"]
        pd.testing.assert_frame_equal(again[tests], table[tests])
        for bound in ("low", "high"):
            assert (np.sign(again.loc[settled, bound]) == np.sign(table.loc[settled, bound])).all()


def test_a_claim_s_effect_variance_is_partitioned_and_its_runs_planned_for_the_verdict_rule(planted_claims):
    table = planted_claims[2].set_index("claim")
    tested = table.loc[["better", "worse", "these_inputs"]]
    np.testing.assert_allclose(tested[["share_run", "share_input", "share_residual"]].sum(axis=1), 1.0)
    assert table.loc["these_inputs", "share_input"] > 0.99  # the per-input pattern is the effect's uncertainty
    # its input part alone, SE 0.12, is six times the planned 0.02: no run count reaches the verdict
    assert pd.isna(table.loc["these_inputs", "runs_needed"])
    assert table.loc["these_inputs", "plan"].startswith("not reachable at 150 inputs")
    better = table.loc["better"]
    assert better["planned_effect"] == 0.02
    assert better["runs_needed_low"] <= better["runs_needed"] <= better["runs_needed_high"]
    assert pd.isna(table.loc["single", "runs_needed"])


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
    """Run 0's weights and tables equal the single run's, timings aside: the same weights, the same
    checkpoint metadata and per-epoch log but for the seconds each epoch took (its certification
    options are the single run's, above, and a certificate is a function of weights and options)."""
    base = dict(
        dataset="digits", arch="mlp", method="cohen", sigma=0.25, epochs=1, batch_size=128, eval_max=50, device="cpu"
    )
    assert TrainConfig(**base).run_seed == TrainConfig(**base, replicate=0).run_seed == 0
    assert TrainConfig(**base, replicate=1).run_seed != TrainConfig(**base, replicate=2).run_seed
    runs = {
        "plain": TrainConfig(**base),
        "zero": TrainConfig(**base, replicate=0),
        "one": TrainConfig(**base, replicate=1),
    }
    for name, config in runs.items():
        train(config, tmp_path / f"{name}.pt", log=tmp_path / f"{name}.csv", progress=False)
    (plain, plain_meta), (zero, zero_meta), (one, meta) = (load_checkpoint(tmp_path / f"{n}.pt") for n in runs)
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), zero.state_dict().values(), strict=True))
    assert not all(
        torch.equal(a, b) for a, b in zip(plain.state_dict().values(), one.state_dict().values(), strict=True)
    )
    assert meta["config"]["replicate"] == 1 and meta["config"]["seed"] == 0  # the data split stays seed 0's

    def timings_aside(meta: dict) -> dict:
        return {**meta, "history": [{k: v for k, v in epoch.items() if k != "seconds"} for epoch in meta["history"]]}

    def same(a, b) -> bool:
        if isinstance(a, torch.Tensor):
            return torch.equal(a, b)
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list | tuple):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
        return a == b

    assert plain_meta["history"] and all("seconds" in epoch for epoch in plain_meta["history"])
    assert same(timings_aside(plain_meta), timings_aside(zero_meta))
    logs = [pd.read_csv(tmp_path / f"{name}.csv") for name in ("plain", "zero")]
    pd.testing.assert_frame_equal(*(log.drop(columns="seconds") for log in logs))
