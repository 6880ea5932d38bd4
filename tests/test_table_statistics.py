"""The tables' statistics on logs built for them: per-input-best ACR, held-out selection, selection
optimism, significance-aware bold and the paired comparisons."""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar as statsmodels_mcnemar
from statsmodels.stats.multitest import multipletests

from ddrs.analysis import LogRecord, best_table, per_sigma_table, to_latex, to_markdown
from ddrs.analysis.assemble import BOLD_ATTR
from ddrs.analysis.comparisons import (
    comparisons_table,
    log_comparisons_table,
    selection_optimism_table,
    study_comparisons_table,
)
from ddrs.analysis.render import p_text, selection_caption
from ddrs.analysis.stats import Inference, held_out_split, holm, mcnemar
from ddrs.errors import LogFormatError


def make_log(radii) -> pd.DataFrame:
    """One row per input (idx 0..): a certified radius, or 0 for a wrong prediction."""
    radii = np.asarray(radii, dtype=float)
    correct = (radii > 0).astype(int)
    return pd.DataFrame(
        {
            "idx": np.arange(len(radii)),
            "label": 1,
            "predict": np.where(correct, 1, 2),
            "radius": radii,
            "correct": correct,
        }
    )


def bold(frame: pd.DataFrame, column: str) -> list[str]:
    """The variants whose ``column`` cell is bold."""
    return sorted(frame.loc[row, "variant"] for row, c in frame.attrs[BOLD_ATTR] if c == column)


def test_per_input_best_acr_over_three_logs_differs_from_the_best_single_log():
    # three σ, each best on a different input: per-log ACR 0.4, per-input best 1.0
    logs = [make_log([1.2, 0.0, 0.0]), make_log([0.0, 0.9, 0.3]), make_log([0.2, 0.0, 0.9])]
    records = [LogRecord(log, "cifar10", "cohen", sigma0=s) for log, s in zip(logs, (0.12, 0.25, 0.5), strict=True)]
    row = best_table(records, radii=[0.0, 0.5]).table.iloc[0]
    assert row["ACR_per_log"] == pytest.approx(max(1.2, 1.2, 1.1) / 3)  # 0.4: the first log (ties → first)
    assert row["ACR_per_input_best"] == pytest.approx((1.2 + 0.9 + 0.9) / 3)
    assert row["ACR_per_input_best_low"] <= row["ACR_per_input_best"] <= row["ACR_per_input_best_high"]


def test_per_input_best_acr_is_never_bold_since_more_candidates_gain_by_construction():
    # every log is the same classifier (one radius per input) up to tiny certification noise: the
    # DS row's per-input best over six logs exceeds the FS row's over two, significantly by the
    # bootstrap, though nothing differs; neither the table nor the comparison may call it a win
    rng = np.random.default_rng(3)
    truth = rng.uniform(0.1, 1.0, 200)
    log = lambda: make_log(truth + rng.normal(0.0, 0.02, truth.size).clip(-0.05, 0.05))  # noqa: E731
    records = [LogRecord(log(), "digits", "cohen", "fs", "fs", s) for s in (0.25, 0.5)]
    records += [LogRecord(log(), "digits", "cohen", "fs", "ds", 0.25, K=k) for k in range(10, 70, 10)]
    best = best_table(records, radii=[0.0, 0.5])
    comparison = comparisons_table(records, radii=[0.0, 0.5]).iloc[0]
    assert comparison["ACR_per_input_best_low"] > 0  # the selection effect the interval cannot see
    assert bold(best.table, "ACR_per_input_best") == []
    assert not any(
        column == "ACR_per_input_best" for _, column in comparisons_table(records, radii=[0.0, 0.5]).attrs[BOLD_ATTR]
    )
    assert comparison["ACR_per_log_low"] < 0 < comparison["ACR_per_log_high"]


def two_candidates(n: int = 40, seed: int = 0, dataset: str = "digits"):
    """Candidate A certifies every selection-half input and no evaluation-half input; B the reverse
    on the evaluation half and a quarter of the selection half. Test selection picks B (more
    inputs overall); held-out selection picks A and reports 0 on the evaluation half."""
    select, evaluate = held_out_split(n, seed=seed, dataset=dataset)
    quarter = np.flatnonzero(select)[: select.sum() // 4]
    a = np.where(select, 0.6, 0.0)
    b = np.where(evaluate, 0.4, 0.0)
    b[quarter] = 0.4
    fs = [LogRecord(make_log(a), dataset, "cohen", sigma0=0.25), LogRecord(make_log(b), dataset, "cohen", sigma0=0.5)]
    return fs, select, evaluate


def test_held_out_selection_chooses_on_one_half_and_reports_on_the_other():
    records, select, evaluate = two_candidates()
    test = best_table(records, radii=[0.0, 0.5], selection="test")
    held = best_table(records, radii=[0.0, 0.5], selection="held_out")
    n_eval = evaluate.sum()
    # test selection: B at r=0 (25 of 40 certified), only A reaches 0.5 (20 of 40)
    winners = test.winners.set_index(["metric", "radius"])
    assert winners.loc[("certified_accuracy", 0.0), "sigma0"] == 0.5
    assert test.table.loc[0, ["0.00", "0.50"]].tolist() == pytest.approx([62.5, 50.0])
    assert held.table.loc[0, "0.00"] == 0.0  # A chosen on the selection half, certifies none of the rest
    held_winners = held.winners.set_index(["metric", "radius"])
    assert held_winners.loc[("certified_accuracy", 0.0), "sigma0"] == 0.25
    # per-log ACR: A wins on the selection half (0.6 · 20 > 0.4 · 5) and scores 0 on the evaluation half
    assert held.table.loc[0, "ACR_per_log"] == 0.0
    # per-input best has no choice to make: B's 0.4 on every evaluation input
    assert held.table.loc[0, "ACR_per_input_best"] == pytest.approx(0.4)
    # the interval is over the evaluation half only: Clopper–Pearson of 0 of 20 inputs
    assert held.table.loc[0, "0.00_high"] == pytest.approx(100 * (1 - 0.025 ** (1 / n_eval)))


def test_selection_optimism_is_test_selected_minus_held_out_selected_on_the_evaluation_half():
    records, _, evaluate = two_candidates()
    optimism = selection_optimism_table(records, radii=[0.0, 0.5], inference=Inference(n_boot=500)).iloc[0]
    # on the evaluation half B certifies all, A none: test selection reports 100 %, held-out 0 %
    assert optimism["0.00"] == pytest.approx(100.0) and optimism["0.50"] == 0.0
    assert optimism["ACR_per_log"] == pytest.approx(0.4)
    assert optimism["0.00_low"] == pytest.approx(100.0) and optimism["0.50_high"] == 0.0
    assert "ACR_per_input_best" not in optimism.index
    held = best_table(records, radii=[0.0, 0.5], selection="held_out").table.iloc[0]
    assert held["0.00"] + optimism["0.00"] == pytest.approx(100.0)


def test_one_digit_on_40_inputs_is_noise_and_a_large_gap_is_not():
    ten, eleven, thirty = (np.r_[np.full(k, 0.5), np.zeros(40 - k)] for k in (10, 11, 30))
    close = [
        LogRecord(make_log(ten), "digits", "cohen", sigma0=0.25),
        LogRecord(make_log(eleven), "digits", "macer", sigma0=0.25),
    ]
    table = per_sigma_table(close, radii=[0.0])
    assert bold(table, "0.00") == ["Cohen", "MACER"] and bold(table, "ACR") == ["Cohen", "MACER"]
    far = [
        LogRecord(make_log(ten), "digits", "cohen", sigma0=0.25),
        LogRecord(make_log(thirty), "digits", "macer", sigma0=0.25),
    ]
    table = per_sigma_table(far, radii=[0.0])
    assert bold(table, "0.00") == ["MACER"] and bold(table, "ACR") == ["MACER"]


def test_rows_of_different_sigma_do_not_compete_in_a_study_table():
    ten, thirty = (np.r_[np.full(k, 0.5), np.zeros(40 - k)] for k in (10, 30))
    records = [
        LogRecord(make_log(ten), "digits", "cohen", sigma0=0.25),
        LogRecord(make_log(thirty), "digits", "cohen", sigma0=0.5),
    ]
    assert per_sigma_table(records, radii=[0.0]).attrs[BOLD_ATTR] == frozenset()


@pytest.fixture
def ddrs_rows():
    """Cohen (two σ), Cohen-DS (two K), Cohen-DS² on 60 inputs."""
    rng = np.random.default_rng(5)
    radius = lambda p: np.where(rng.random(60) < p, rng.uniform(0.1, 1.2, 60), 0.0)  # noqa: E731
    return [
        LogRecord(make_log(radius(0.5)), "digits", "cohen", "fs", "fs", 0.25),
        LogRecord(make_log(radius(0.4)), "digits", "cohen", "fs", "fs", 0.5),
        LogRecord(make_log(radius(0.7)), "digits", "cohen", "fs", "ds", 0.25, K=10),
        LogRecord(make_log(radius(0.6)), "digits", "cohen", "fs", "ds", 0.25, K=20),
        LogRecord(make_log(radius(0.9)), "digits", "cohen", "ds", "ds", 0.25, K=10),
    ]


def test_comparisons_pair_each_variant_with_its_baselines_on_the_winning_logs(ddrs_rows):
    radii = [0.0, 0.25, 0.5, 1.0]
    comparisons = comparisons_table(ddrs_rows, radii=radii, inference=Inference(n_boot=400))
    pairs = list(zip(comparisons["variant"], comparisons["baseline"], strict=True))
    assert pairs == [("Cohen-DS", "Cohen"), ("Cohen-DS²", "Cohen-DS"), ("Cohen-DS²", "Cohen")]
    best = best_table(ddrs_rows, radii=radii)
    winners = best.winners.set_index(["variant", "metric", "radius"])
    logs = {(r.name, r.sigma0, r.K): r.log for r in ddrs_rows}

    def indicator(variant, r):
        won = winners.loc[(variant, "certified_accuracy", r)]
        log = logs[(variant, won["sigma0"], None if pd.isna(won["K"]) else int(won["K"]))]
        return (log["correct"] == 1) & (log["radius"] >= r)

    row = comparisons.iloc[0]
    p = []
    for r in radii:
        ds, fs = indicator("Cohen-DS", r), indicator("Cohen", r)
        table = [[np.sum(ds & fs), np.sum(ds & ~fs)], [np.sum(~ds & fs), np.sum(~ds & ~fs)]]
        p.append(statsmodels_mcnemar(table, exact=True).pvalue)
        assert row[f"{r:.2f}"] == pytest.approx(100 * (ds.mean() - fs.mean()))
        assert (row[f"{r:.2f}_better"], row[f"{r:.2f}_worse"]) == (table[0][1], table[1][0])
    assert [row[f"{r:.2f}_p"] for r in radii] == pytest.approx(p)
    # under test selection Cohen and Cohen-DS are each the best of two logs on these inputs: no pair
    # is tested; the p-values are Holm-adjusted over the table's untested cells, and none is bold
    tested = [f"{r:.2f}" for r in radii] + ["ACR_per_log"]
    family = comparisons[[f"{c}_p" for c in tested]].to_numpy()
    holm = multipletests(family.ravel(), method="holm")[1].reshape(family.shape)
    assert comparisons[[f"{c}_p_holm" for c in tested]].to_numpy() == pytest.approx(holm)
    assert not comparisons["tested"].any() and comparisons.attrs[BOLD_ATTR] == frozenset()
    assert "ACR_per_input_best_p" not in comparisons.columns
    table = best.table.set_index("variant")
    for convention in ("ACR_per_log", "ACR_per_input_best"):
        difference = table.loc["Cohen-DS", convention] - table.loc["Cohen", convention]
        assert row[convention] == pytest.approx(difference)
        assert row[f"{convention}_low"] <= row[f"{convention}_high"]
    # held out, every pair is tested: one Holm family over the table, and bold marks the significant cells
    held = comparisons_table(ddrs_rows, radii=radii, selection="held_out", inference=Inference(n_boot=400))
    assert held["tested"].all()
    family = held[[f"{c}_p" for c in tested]].to_numpy()
    holm = multipletests(family.ravel(), method="holm")[1].reshape(family.shape)
    assert held[[f"{c}_p_holm" for c in tested]].to_numpy() == pytest.approx(holm)
    significant = {(i, c) for i in held.index for c in tested if held.loc[i, f"{c}_p_holm"] < 0.05}
    assert held.attrs[BOLD_ATTR] == significant


def test_study_comparisons_against_gaussian_per_sigma():
    ten, thirty = (np.r_[np.full(k, 0.5), np.zeros(40 - k)] for k in (10, 30))
    records = [
        LogRecord(make_log(ten), "digits", "cohen", sigma0=0.25),
        LogRecord(make_log(thirty), "digits", "consistency", sigma0=0.25),
        LogRecord(make_log(ten), "digits", "cohen", sigma0=0.5),
        LogRecord(make_log(ten), "digits", "macer", sigma0=0.5),
    ]
    comparisons = study_comparisons_table(records, radii=[0.0, 0.5])
    assert comparisons[["sigma0", "variant", "baseline"]].values.tolist() == [
        [0.25, "Consistency", "Cohen"],
        [0.5, "MACER", "Cohen"],
    ]
    # 20 inputs certified by Consistency only, none by Gaussian only: p = 2 · 0.5^20 at both radii;
    # the family is every row of the dataset (both σ₀) × every tested column (two radii, ACR), less
    # MACER's three tests, which cannot reject (MACER and Cohen agree on every input): three
    # p-values, the two smallest equal, so Holm multiplies them by three
    assert comparisons.loc[0, "0.00_p"] == pytest.approx(2 * 0.5**20)
    assert comparisons.loc[0, "0.00_p_holm"] == pytest.approx(6 * 0.5**20)
    assert comparisons.loc[1, "0.00_p_holm"] == comparisons.loc[1, "ACR_p_holm"] == 1.0
    assert comparisons.loc[0, "ACR_p"] <= comparisons.loc[0, "ACR_p_holm"] < 0.05  # the largest p keeps its own
    assert comparisons.loc[0, "ACR"] == pytest.approx(0.25)
    assert comparisons.loc[1, "0.00"] == 0.0 and comparisons.loc[1, "0.00_p"] == 1.0
    assert (0, "0.00") in comparisons.attrs[BOLD_ATTR] and (1, "0.00") not in comparisons.attrs[BOLD_ATTR]
    with pytest.raises(ValueError, match="baseline 'smoothadv'"):
        study_comparisons_table(records, radii=[0.0], baseline="smoothadv")


def test_acr_intervals_are_seeded(ddrs_rows):
    first = best_table(ddrs_rows, radii=[0.0], inference=Inference(n_boot=300, seed=1)).table
    again = best_table(ddrs_rows, radii=[0.0], inference=Inference(n_boot=300, seed=1)).table
    other = best_table(ddrs_rows, radii=[0.0], inference=Inference(n_boot=300, seed=2)).table
    columns = ["ACR_per_log_low", "ACR_per_log_high", "ACR_per_input_best_low"]
    pd.testing.assert_frame_equal(first, again)
    assert not first[columns].equals(other[columns])
    assert first["0.00_low"].equals(other["0.00_low"])  # Clopper–Pearson draws nothing


def resampled_means(values: np.ndarray, *, n_boot: int, seed: int, dataset: str) -> np.ndarray:
    """Bootstrap means drawn by hand as ddrs.analysis.stats documents them: multinomial counts of the
    n inputs from the generator of (seed, stream 1, CRC-32 of the dataset), one block (n_boot ≤ 256)."""
    n = len(values)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1, zlib.crc32(dataset.encode())]))
    return rng.multinomial(n, np.full(n, 1 / n), size=n_boot) @ values / n


def test_acr_intervals_are_percentile_bootstrap_intervals_at_alpha():
    # two logs of 50 inputs, α = 0.3: every ACR interval (table, paired difference, optimism) is the
    # (α/2, 1 − α/2) = (0.15, 0.85) quantiles of the 200 resampled means, not those of another level
    rng = np.random.default_rng(11)
    a, b = (np.where(rng.random(50) < 0.6, rng.uniform(0.1, 1.2, 50), 0.0) for _ in range(2))
    inference = Inference(alpha=0.3, n_boot=200, seed=4)

    def interval(values):
        return np.quantile(resampled_means(values, n_boot=200, seed=4, dataset="digits"), [0.15, 0.85], axis=0)

    records = [LogRecord(make_log(r), "digits", "cohen", sigma0=s) for r, s in ((a, 0.25), (b, 0.5))]
    row = best_table(records, radii=[0.0], inference=inference).table.iloc[0]
    assert b.mean() > a.mean() and row["ACR_per_log"] == pytest.approx(b.mean())
    for column, values in (("ACR_per_log", b), ("ACR_per_input_best", np.maximum(a, b))):
        assert [row[f"{column}_low"], row[f"{column}_high"]] == pytest.approx(interval(values).tolist(), rel=1e-9)
    # the paired difference of a study comparison: MACER − Cohen per input, on the same resamples
    study = [LogRecord(make_log(r), "digits", m, sigma0=0.25) for r, m in ((a, "cohen"), (b, "macer"))]
    comparison = study_comparisons_table(study, radii=[0.0], inference=inference).iloc[0]
    assert [comparison["ACR_low"], comparison["ACR_high"]] == pytest.approx(interval(b - a).tolist(), rel=1e-9)
    # selection optimism: per resample of the evaluation half, the best candidate's mean minus that
    # of the candidate the selection half chose
    select, evaluate = held_out_split(50, seed=4, dataset="digits")
    chosen = int(b[select].sum() > a[select].sum())
    means = resampled_means(np.stack([a[evaluate], b[evaluate]], axis=1), n_boot=200, seed=4, dataset="digits")
    expected = np.quantile(means.max(axis=1) - means[:, chosen], [0.15, 0.85])
    optimism = selection_optimism_table(records, radii=[0.0], inference=inference).iloc[0]
    assert expected[1] > 0.05
    assert [optimism["ACR_per_log_low"], optimism["ACR_per_log_high"]] == pytest.approx(
        expected.tolist(), rel=1e-9, abs=1e-12
    )


def test_bad_selection_and_duplicated_inputs_are_named(ddrs_rows):
    with pytest.raises(ValueError, match="selection 'validation': choose one of"):
        best_table(ddrs_rows, radii=[0.0], selection="validation")
    twice = pd.concat([make_log([0.5, 0.2]), make_log([0.5, 0.2])], ignore_index=True)
    with pytest.raises(LogFormatError, match="appears twice"):
        best_table([LogRecord(twice, "digits", "cohen", sigma0=0.25)], radii=[0.0])


def test_held_out_tables_of_one_seed_agree_with_the_optimism_table(ddrs_rows):
    """The held-out table's cell plus the optimism is the best candidate on the evaluation half."""
    radii = [0.0, 0.5, 1.0]
    held = best_table(ddrs_rows, radii=radii, selection="held_out", inference=Inference(seed=3)).table.set_index(
        "variant"
    )
    optimism = selection_optimism_table(ddrs_rows, radii=radii, inference=Inference(n_boot=200, seed=3)).set_index(
        "variant"
    )
    _, evaluate = held_out_split(60, seed=3, dataset="digits")
    for variant, logs in (("Cohen", ddrs_rows[:2]), ("Cohen-DS", ddrs_rows[2:4])):
        for r in radii:
            best = max(100 * ((log.log["radius"] >= r) & (log.log["correct"] == 1))[evaluate].mean() for log in logs)
            assert held.loc[variant, f"{r:.2f}"] + optimism.loc[variant, f"{r:.2f}"] == pytest.approx(best)


def certified_log(certified: np.ndarray, radius: np.ndarray | float = 0.0) -> pd.DataFrame:
    """A log whose ``certified`` inputs are correct at ``radius`` (0: certified at r = 0 only) and the
    others wrong."""
    certified = np.asarray(certified, dtype=bool)
    radius = np.where(certified, radius, 0.0)
    return pd.DataFrame(
        {
            "idx": np.arange(certified.size),
            "label": 1,
            "predict": np.where(certified, 1, 2),
            "radius": radius,
            "correct": certified.astype(int),
        }
    )


def test_bold_holm_adjusts_over_every_pair_and_column_of_the_group_not_per_pair():
    # six methods at one σ that differ only in a few inputs, as six runs of one classifier would:
    # all certify inputs 0–49 at radius 1; Cohen also 50–59 and MACER input 60 at radius 0.2; the
    # others 50–54 and 60. Cohen vs MACER at r = 0: 10 against 1 discordant, McNemar p = 0.0117
    shared = np.zeros(100, dtype=bool)
    shared[:50] = True
    extra = {"cohen": range(50, 60), "macer": [60]}
    methods = ["cohen", "consistency", "smoothadv", "smoothadv_consistency", "stability", "macer"]
    radii = [0.0, 0.5]
    records = []
    for method in methods:
        low = np.zeros(100, dtype=bool)
        low[list(extra.get(method, [*range(50, 55), 60]))] = True
        radius = np.where(shared, 1.0, np.where(low, 0.2, 0.0))
        records.append(LogRecord(make_log(radius), "digits", method, sigma0=0.25))
    certified = {
        m: np.stack([r.log["radius"] >= x for x in radii]) & (r.log["radius"] > 0).to_numpy()
        for m, r in zip(methods, records, strict=True)
    }
    _, _, p = mcnemar(certified["cohen"], certified["macer"])
    assert p[0] == pytest.approx(0.01172, abs=1e-5)
    # Holm over this pair's radii alone (the old family) calls MACER significantly worse at r = 0 ...
    assert holm(p)[0] < 0.05
    # ... but the family of the group is 15 pairs × (2 radii + ACR) = 45 tests: nothing is
    # significant, so every cell of a column whose values differ is bold
    table = per_sigma_table(records, radii=radii)
    assert table["0.00"].nunique() > 1 and table["ACR"].nunique() > 1
    assert bold(table, "0.00") == bold(table, "ACR") == sorted(table["variant"])
    assert bold(table, "0.50") == []  # every row ties at r = 0.5
    # the comparisons of the study: one family over every row × column of the dataset, none significant
    comparisons = study_comparisons_table(records, radii=radii)
    cohen_macer = comparisons.set_index("variant").loc["MACER"]
    assert cohen_macer["0.00_p"] == pytest.approx(p[0]) and cohen_macer["0.00_p_holm"] >= 0.05
    assert comparisons.attrs[BOLD_ATTR] == frozenset()


def test_an_acr_difference_on_one_input_is_never_significant():
    # the paired bootstrap of one input resamples that input every time: its interval is the point
    # and excluded 0; the sign-flip test has two sign patterns, ±d, so p = 1
    logs = {"a": make_log([2.0]), "b": make_log([0.0])}
    comparison = log_comparisons_table(logs, [0.0], baseline="b", inference=Inference(n_boot=200))
    assert comparison.loc[0, "ACR_per_log"] == 2.0 and comparison.attrs[BOLD_ATTR] == frozenset()
    records = [LogRecord(make_log([2.0]), "digits", "cohen", sigma0=0.25)]
    records.append(LogRecord(make_log([0.0]), "digits", "macer", sigma0=0.25))
    assert bold(per_sigma_table(records, radii=[0.0]), "ACR") == ["Cohen", "MACER"]
    assert comparison.loc[0, "ACR_per_log_p"] == comparison.loc[0, "ACR_per_log_p_holm"] == 1.0


def large_gap_rows(n: int = 200) -> list[LogRecord]:
    """Cohen (two σ, each certifying under a third of the inputs) and Cohen-DS (two K, each 85–90 %)."""
    first = lambda k, r: make_log(np.where(np.arange(n) < k, r, 0.0))  # noqa: E731
    return [
        LogRecord(first(60, 0.6), "digits", "cohen", "fs", "fs", 0.25),
        LogRecord(first(50, 0.8), "digits", "cohen", "fs", "fs", 0.5),
        LogRecord(first(180, 0.7), "digits", "cohen", "fs", "ds", 0.25, K=10),
        LogRecord(first(170, 0.9), "digits", "cohen", "fs", "ds", 0.25, K=20),
    ]


def test_rows_chosen_among_several_logs_on_the_reported_inputs_are_described_not_tested():
    records, radii = large_gap_rows(), [0.0, 0.5]
    # test selection: each row is the best of two logs on the very inputs it reports, which favours
    # the row with more logs; however large the gap, nothing is bold and no comparison is significant
    test = best_table(records, radii=radii, selection="test").table
    assert test.loc[1, "0.00"] - test.loc[0, "0.00"] == pytest.approx(60.0)
    assert test.attrs[BOLD_ATTR] == frozenset()
    comparison = comparisons_table(records, radii=radii, selection="test")
    assert not comparison.loc[0, "tested"] and comparison.attrs[BOLD_ATTR] == frozenset()
    assert comparison.loc[0, "0.00_p_holm"] < 1e-6  # reported, as a description
    assert "carries no bold" in selection_caption("test") and "_held_out tables carry the tests" in selection_caption(
        "test"
    )
    # held out: chosen on one half, reported and tested on the other: the true gap is bold
    held = best_table(records, radii=radii, selection="held_out").table
    assert bold(held, "0.00") == bold(held, "0.50") == bold(held, "ACR_per_log") == ["Cohen-DS"]
    comparison = comparisons_table(records, radii=radii, selection="held_out")
    assert comparison.loc[0, "tested"]
    assert {(0, "0.00"), (0, "0.50"), (0, "ACR_per_log")} <= comparison.attrs[BOLD_ATTR]
    # a row of one log is tested under test selection too
    single = [records[0], records[2]]
    assert bold(best_table(single, radii=radii, selection="test").table, "0.00") == ["Cohen-DS"]


def test_a_printed_p_value_stays_on_its_side_of_alpha():
    # a significant cell (Holm-adjusted p 0.049981 < α = 0.05) that three decimals print as 0.050
    frame = pd.DataFrame({"log": ["new", "other"], "baseline": "base", "0.00": [23.0, 5.0]})
    frame["0.00_p_holm"] = [0.049981, 0.050004]
    frame.attrs.update({BOLD_ATTR: frozenset({(0, "0.00")}), "alpha": 0.05})
    markdown = to_markdown(frame)
    assert "**23.0 (p=0.04998)**" in markdown and "| 5.0 (p=0.050) " in markdown
    assert "(p=0.04998)" in to_latex(frame)
    assert p_text(0.049981, 0.05) == "p=0.04998" and p_text(0.05, 0.05) == "p=0.050"
    assert p_text(0.050004, 0.05) == "p=0.050" and p_text(0.0495, 0.05) == "p=0.0495"
    assert p_text(0.0004, 0.05) == "p<0.001" and p_text(0.3, None) == "p=0.300"
    assert p_text(0.05 - 1e-12, 0.05) == "p<0.05" and p_text(0.0125, 0.0125) == "p=0.013"
    # the same from logs: 60 inputs certified (at r = 0 only) by the variant alone, 37 by the baseline
    # alone: McNemar p = 0.024991; the ACRs differ by ±0.1 on two inputs (p = 1), so Holm over the
    # two tested columns gives 0.049981
    new, base = np.zeros(100, dtype=bool), np.zeros(100, dtype=bool)
    new[:60], base[60:97] = True, True
    first = np.arange(100) == 0
    logs = {"base": certified_log(base, np.roll(first, 60) * 0.1), "new": certified_log(new, first * 0.1)}
    comparison = log_comparisons_table(logs, [0.0], baseline="base", inference=Inference(n_boot=200))
    assert comparison.loc[0, "0.00_p_holm"] == pytest.approx(0.049981, abs=1e-6)
    assert (0, "0.00") in comparison.attrs[BOLD_ATTR]
    assert "**23.0 (p=0.04998)**" in to_markdown(comparison)


def test_a_clearly_worse_acr_is_not_bold_in_a_large_group():
    # six methods at one σ certify the same 160 of 200 inputs, five at radii near 0.3 and one at
    # radii three times larger (paired t ≈ 40). The group's family is 15 pairs × 12 columns: the
    # ACR test must resolve p far below 0.05 / 180, or every ACR stays bold "within noise"
    u = np.random.default_rng(0).random(200)
    correct = u < 0.8
    scales = {"cohen": 0.20, "macer": 0.21, "smoothadv": 0.22, "consistency": 0.23, "stability": 0.24}
    scales["smoothadv_consistency"] = 0.60
    radii = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5]
    records = [
        LogRecord(make_log(np.where(correct, scale * (1.5 + u), 0.0)), "digits", method, sigma0=0.25)
        for method, scale in scales.items()
    ]
    table = per_sigma_table(records, radii=radii)
    assert bold(table, "ACR") == ["SmoothAdv+Consistency"]
    comparisons = study_comparisons_table(records, radii=radii).set_index("variant")
    assert (comparisons["ACR_p_holm"] < 0.05).all()


def test_a_semi_elastic_row_stands_beside_cohen_and_cohen_ds_and_is_tested_against_both():
    """Method-IDRS (Súkeník et al.'s certificate, issue 69): a best-table row of its own, paired with
    Method and Method-DS."""
    rng = np.random.default_rng(0)
    radius = lambda p: np.where(rng.random(80) < p, rng.uniform(0.1, 1.2, 80), 0.0)  # noqa: E731
    records = [
        LogRecord(make_log(radius(0.5)), "digits", "cohen", "fs", "fs", 0.25),
        LogRecord(make_log(radius(0.7)), "digits", "cohen", "fs", "ds", 0.25, K=10),
        LogRecord(make_log(radius(0.45)), "digits", "cohen", "fs", "idrs", 0.25),
        LogRecord(make_log(radius(0.4)), "digits", "cohen", "fs", "idrs", 0.5),
    ]
    table = best_table(records, radii=[0.0, 0.5]).table
    assert table[["variant", "train", "certify"]].values.tolist() == [
        ["Cohen", "FS", "FS"],
        ["Cohen-DS", "FS", "DS"],
        ["Cohen-IDRS", "FS", "IDRS"],
    ]
    assert {"0.50_low", "0.50_high", "ACR_per_log_low"} <= set(table.columns)
    pairs = comparisons_table(records, radii=[0.0, 0.5])[["variant", "baseline"]].values.tolist()
    assert pairs == [["Cohen-DS", "Cohen"], ["Cohen-IDRS", "Cohen"], ["Cohen-IDRS", "Cohen-DS"]]
