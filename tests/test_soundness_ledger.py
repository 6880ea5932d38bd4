"""The certificate audit's tables (issue 69): the soundness ledger counts what the audit logs confirm, with
exact intervals, per classifier; the order dependence finds what another order of Algorithm 3's stream changes.
Synthetic audit logs and certification logs: no model, no torch."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from ddrs.analysis.log_record import LogRecord
from ddrs.analysis.order_dependence import order_dependence_table, order_row
from ddrs.analysis.soundness_ledger import allowed_elasticity, soundness_ledger
from ddrs.core.binomial import clopper_pearson
from ddrs.core.semi_elastic import max_semi_elasticity, semi_elastic_radius
from ddrs.data import load_images, load_labels


def audit_frame(violations: list[int], *, memory: bool) -> pd.DataFrame:
    """An audit log of certificates of class 1 and radius 0.5, broken by PGD where ``violations`` says."""
    count = len(violations)
    frame = pd.DataFrame({
        "idx": range(count), "label": 1, "predict": 1, "radius": 0.5, "scale": 0.25, "predict_x": 1,
        "scale_rerun": 0.25 * np.exp(0.01), "pgd_distance": 0.4, "pgd_scale": 0.3,
        "pgd_predict": [2 if v else 1 for v in violations], "pgd_elasticity": np.linspace(0.1, 1.0, count),
        "pgd_violation": violations, "line_distance": 0.45, "line_scale": 0.25, "line_predict": 1,
        "line_elasticity": 0.05, "line_violation": 0, "time": 1.0,
    })  # fmt: skip
    if memory:  # the memory answers the certified class inside its balls, but one ball of radius 0
        frame["memory_predict"], frame["memory_radius"] = 1, [0.0] + [0.5] * (count - 1)
        frame["pgd_memory"], frame["line_memory"], frame["memory_violation"] = 1, 1, 0
    return frame


def test_the_ledger_counts_confirmed_violations_per_classifier_with_exact_intervals(tmp_path):
    fixed, ds = tmp_path / "fixed.tsv", tmp_path / "ds.tsv"
    audit_frame([0] * 10, memory=False).to_csv(fixed, sep="\t", index=False)
    audit_frame([1, 1, 0, 0, 0, 1, 0, 0], memory=True).to_csv(ds, sep="\t", index=False)
    records = [
        LogRecord("f.tsv", "digits", "cohen", sigma0=0.25),
        LogRecord("m.tsv", "digits", "cohen", certify_mode="ds", sigma0=0.25, K=200),
    ]
    table, figure = soundness_ledger(records, [fixed, ds], alpha=0.05, certify_alpha=0.001, dim=64)
    assert list(table["classifier"]) == ["fixed σ", "Algorithm 1", "Algorithm 1 + memory"]
    assert list(table["variant"]) == ["Cohen", "Cohen-DS", "Cohen-DS"]
    assert list(table["certificates"]) == [10, 8, 7] and list(table["violations"]) == [0, 3, 0]
    low, high = clopper_pearson(3, 8, 0.05)
    assert table.loc[1, ["share", "share_low", "share_high"]].tolist() == pytest.approx(
        [3 / 8, float(low), float(high)]
    )
    assert table.loc[0, "share_high"] == pytest.approx(clopper_pearson(0, 10, 0.05)[1])
    assert (table["by_pgd"].tolist(), table["by_line"].tolist()) == ([0, 3, 0], [0, 0, 0])
    assert table["abstained"].tolist() == [0, 0, 0]
    assert table.loc[1, ["found_min", "radius_median"]].tolist() == [0.4, 0.5] and np.isnan(table.loc[0, "found_min"])
    assert table.loc[1, "elasticity_max"] == pytest.approx(1.0) and table.loc[1, "sigma_noise"] == pytest.approx(0.01)
    assert (table["bound"] == 0.002).all() and len(figure.axes) == 2


def test_a_memory_violation_counts_only_inside_the_memory_radius(tmp_path):
    frame = audit_frame([0, 0, 0], memory=True)
    frame["pgd_memory"] = 3  # the memory answers another class at the PGD candidate of every row …
    frame["memory_radius"] = [0.5, 0.5, 0.3]  # … but the third row's memory ball stops before it (0.4)
    frame.to_csv(tmp_path / "ds.tsv", sep="\t", index=False)
    record = LogRecord("m.tsv", "digits", "cohen", train_mode="ds", certify_mode="ds", sigma0=0.5, K=100)
    table, _ = soundness_ledger([record], [tmp_path / "ds.tsv"], alpha=0.05, certify_alpha=0.001, dim=64)
    memory = table[table["classifier"] == "Algorithm 1 + memory"].iloc[0]
    assert (memory["variant"], memory["certificates"], memory["violations"]) == ("Cohen-DS²", 3, 2)


def test_a_path_more_elastic_than_sukenik_et_al_allow_is_flagged(tmp_path):
    # radius 0.5 at σ 0.25 (p̲ = Φ(2)): what their certificate allows for it to reach R/2 = 0.25
    frame = audit_frame([0, 0], memory=False)
    p_lower = float(norm.cdf(2.0))
    allowed = max_semi_elasticity(0.25, p_lower, 0.25, 64)
    # the allowed rate is the certificate's: it reaches R/2 at that rate, not at twice it
    assert semi_elastic_radius(p_lower, 0.25, allowed, 64) >= 0.25 * (1 - 1e-3)
    assert semi_elastic_radius(p_lower, 0.25, 2 * allowed, 64) < 0.25
    assert allowed_elasticity(frame, 64).tolist() == pytest.approx([allowed, allowed])
    frame["pgd_elasticity"], frame["line_elasticity"] = [0.5 * allowed, 2 * allowed], 0.0
    frame.to_csv(tmp_path / "ds.tsv", sep="\t", index=False)
    record = LogRecord("c.tsv", "digits", "cohen", certify_mode="ds", sigma0=0.25, K=100)
    table, _ = soundness_ledger([record], [tmp_path / "ds.tsv"], alpha=0.05, certify_alpha=0.001, dim=64)
    row = table.iloc[0]
    assert row["beyond_allowed"] == 1 and row["allowed_median"] == pytest.approx(allowed)
    # the path below the bound keeps more than half of R, the one beyond it less
    shares = [semi_elastic_radius(p_lower, 0.25, r, 64) / 0.5 for r in (0.5 * allowed, 2 * allowed)]
    assert shares[0] > 0.5 > shares[1] and row["sound_share_median"] == pytest.approx(np.median(shares))


def test_another_order_changes_what_algorithm_3_does_only_where_regions_of_other_classes_meet():
    points = np.array([[0.0], [0.8], [5.0]])
    log = pd.DataFrame({"idx": [0, 1, 2], "label": [0, 1, 2], "predict": [0, 1, 2], "radius": [0.5, 0.5, 0.5]})
    row = order_row(points, log, orders=5, seed=0)
    assert row["inputs"] == 3 and row["orders"] == 5
    # 0 and 1 overlap: whichever comes second shrinks, so an order that puts 1 first changes both
    assert (
        row["changed_max"] == 2 and row["classes_changed_max"] == 0 and row["radius_change_max"] == pytest.approx(0.2)
    )
    apart = order_row(np.array([[0.0], [2.0], [5.0]]), log, orders=5, seed=0)
    assert apart["changed_max"] == apart["radius_change_max"] == 0


def test_the_order_table_reads_the_logs_inputs_from_the_split(tmp_path):
    images, labels = load_images("digits", "test", seed=0), load_labels("digits", "test", seed=0)
    log = pd.DataFrame({"idx": [0, 1, 2], "label": labels[:3], "predict": labels[:3], "radius": 0.3, "correct": 1,
                        "time": 0.1})  # fmt: skip
    log.to_csv(tmp_path / "certify_K50.tsv", sep="\t", index=False)
    record = LogRecord("memory_K50.tsv", "digits", "cohen", certify_mode="ds", sigma0=0.25, K=50)
    table = order_dependence_table(
        [record], [tmp_path / "certify_K50.tsv"], dataset="digits", data_root="data", seed=0, orders=2
    )
    assert table.loc[0, ["variant", "inputs", "orders", "changed_max"]].tolist() == ["Cohen-DS", 3, 2, 0]
    assert len(images) > 3
    log.assign(label=(labels[:3] + 1) % 10).to_csv(tmp_path / "other.tsv", sep="\t", index=False)
    with pytest.raises(ValueError, match="another split"):
        order_dependence_table([record], [tmp_path / "other.tsv"], dataset="digits", data_root="data", seed=0, orders=2)
