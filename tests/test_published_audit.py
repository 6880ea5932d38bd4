"""The audit of published logs: one log built per defect, and a clean one that raises no flag."""

from __future__ import annotations

import hashlib

import pytest
from scipy.stats import norm

from ddrs.core.binomial import clopper_pearson_lower
from ddrs.published.audit import FLAGS, audit, flag_counts, radius_bound

HEADER = "idx\tlabel\tpredict\tradius\tcorrect\ttime"
STRIDE = 1000  # CIFAR-10's 10,000 test inputs: 10 rows


def rows(idx=range(0, 10_000, STRIDE), changes=None) -> list[list[str]]:
    """Cohen-format rows, all correct with radius 0.5; ``changes`` maps idx → {column: printed value}."""
    out = []
    for i in idx:
        row = {"idx": str(i), "label": str(i // STRIDE % 10), "radius": "0.5", "time": "0:00:01.500000"}
        row["predict"] = row["label"]
        row["correct"] = "1"
        row.update((changes or {}).get(i, {}))
        out.append([row[column] for column in HEADER.split("\t")])
    return out


def write(tmp_path, name: str, body: list[list[str]], *, header: str = HEADER, **fields):
    """Write a log; return (registry row, path) for it."""
    text = header + "\n" + "".join("\t".join(row) + "\n" for row in body)
    path = tmp_path / name
    path.write_text(text)
    log = {
        "repository": fields.pop("repository", "someone/smoothing"),
        "commit": "0" * 40,
        "path": f"data/{name}",
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "size": len(text.encode()),
        "dataset": "cifar10",
        "split": "test",
        "sigma": 0.25,
        "n": 100_000,
        "alpha": 0.001,
        "skip": STRIDE,
    }
    log.update(fields)
    return log, path


def run(*written):
    logs, paths = zip(*written, strict=True)
    return audit(list(logs), list(paths))


def flagged(frame, row: int = 0) -> set[str]:
    counts = flag_counts(frame.iloc[[row]])
    return {flag for flag in FLAGS if counts[flag]}


def test_clean_log_raises_no_flag(tmp_path):
    frame = run(write(tmp_path, "clean", rows()))
    assert flagged(frame) == set()
    record = frame.iloc[0]
    assert record["findings"] == ""
    assert (record["rows"], record["expected_rows"], record["stride"], record["stride_source"]) == (
        10,
        10,
        1000,
        "registry",
    )
    assert record["radius_bound"] == pytest.approx(0.25 * 3.8114565633899145)


def test_radius_bound_is_sigma_times_the_clopper_pearson_bound_of_n_successes():
    for n, alpha in ((100_000, 0.001), (1_000, 0.05), (100, 0.001)):
        expected = 0.5 * norm.ppf(clopper_pearson_lower(n, n, alpha))
        assert radius_bound(0.5, n, alpha) == pytest.approx(float(expected), rel=1e-9)


def test_header_only(tmp_path):
    frame = run(write(tmp_path, "empty", []))
    assert flagged(frame) == {"header_only"}
    assert "no rows" in frame.iloc[0]["findings"]


def test_cut_short_names_its_last_idx(tmp_path):
    frame = run(write(tmp_path, "short", rows(range(0, 8000, STRIDE))))
    assert flagged(frame) == {"cut_short"}
    record = frame.iloc[0]
    assert (record["rows"], record["expected_rows"], record["last_idx"]) == (8, 10, 7000)
    assert "last idx is 7000" in record["findings"] and "2 inputs missing at the end" in record["findings"]


def test_starts_late(tmp_path):
    frame = run(write(tmp_path, "second_half", rows(range(5000, 10_000, STRIDE))))
    assert flagged(frame) == {"starts_late"}
    assert "first idx is 5000" in frame.iloc[0]["findings"]


def test_missing_inside(tmp_path):
    frame = run(write(tmp_path, "gap", rows([0, 1000, 2000, 5000, 6000, 7000, 8000, 9000])))
    assert flagged(frame) == {"missing_inside"}
    assert frame.iloc[0]["missing_inside"] == 2


def test_stride_inferred_from_idx_when_the_registry_has_none(tmp_path):
    frame = run(write(tmp_path, "short", rows(range(0, 4000, STRIDE)), skip=None))
    record = frame.iloc[0]
    assert (record["stride"], record["stride_source"], record["expected_rows"]) == (1000, "idx", 10)
    assert flagged(frame) == {"cut_short"}


def test_stride_mismatch(tmp_path):
    frame = run(write(tmp_path, "coarse", rows(range(0, 9000, STRIDE)), skip=500))
    assert flagged(frame) == {"stride_mismatch", "cut_short"}
    record = frame.iloc[0]
    assert (record["stride"], record["stride_source"], record["expected_rows"]) == (1000, "idx", 10)
    assert "idx step is 1000, not the registry's skip 500" in record["findings"]


def test_idx_out_of_range(tmp_path):
    frame = run(write(tmp_path, "train", rows(range(0, 20_000, 2000)), skip=2000))
    assert flagged(frame) == {"idx_out_of_range"}
    assert frame.iloc[0]["idx_out_of_range"] == 5
    frame = run(write(tmp_path, "train", rows(range(0, 50_000, 5000)), split="train", skip=5000))
    assert flagged(frame) == set()


def test_non_monotone_idx(tmp_path):
    frame = run(write(tmp_path, "shuffled", rows([0, 2000, 1000, *range(3000, 10_000, STRIDE)])))
    assert flagged(frame) == {"non_monotone_idx"}
    assert "idx 1000 after 2000" in frame.iloc[0]["findings"]


def test_duplicate_of_lists_the_other_names(tmp_path):
    first = write(tmp_path, "a", rows())
    second = write(tmp_path, "b", rows(), repository="other/fork")
    third = write(tmp_path, "c", rows(changes={0: {"radius": "0.4"}}))
    frame = run(first, second, third)
    assert list(frame["duplicate_of"]) == ["other/fork:data/b", "someone/smoothing:data/a", ""]
    assert flagged(frame, 2) == set()


def test_mixed_time_formats(tmp_path):
    frame = run(write(tmp_path, "mixed", rows(changes={3000: {"time": "1.5"}, 4000: {"time": "2.25"}})))
    assert flagged(frame) == {"mixed_time"}
    assert "(8 rows, first idx 0) with seconds (2 rows, first idx 3000)" in frame.iloc[0]["findings"]


def test_label_conflicts_with_the_majority_at_the_same_idx(tmp_path):
    wrong = {0: {"label": "7", "predict": "7"}, 4000: {"label": "1", "predict": "1"}}
    frame = run(
        write(tmp_path, "a", rows()),
        write(tmp_path, "b", rows(changes={0: {"radius": "0.6"}})),
        write(tmp_path, "c", rows(changes=wrong)),
        write(tmp_path, "other_dataset", rows(changes=wrong), dataset="mnist"),
    )
    assert list(frame["label_conflicts"]) == [0, 0, 2, 0]
    assert "2 of its 10 rows" in frame.iloc[2]["findings"] and "idx 0: 7 here, 0 in most" in frame.iloc[2]["findings"]
    train = write(tmp_path, "train_split", rows(changes=wrong), split="train")
    assert list(run(write(tmp_path, "a", rows()), write(tmp_path, "b", rows()), train)["label_conflicts"]) == [0, 0, 0]


def test_a_tie_flags_both_logs(tmp_path):
    frame = run(write(tmp_path, "a", rows()), write(tmp_path, "b", rows(changes={0: {"label": "7", "predict": "7"}})))
    assert list(frame["label_conflicts"]) == [1, 1]
    assert "no majority" in frame.iloc[0]["findings"]


def test_impossible_radius_allows_for_printed_rounding(tmp_path):
    # σ = 0.25, n = 100,000, α = 0.001: the bound is 0.95286; "0.953" may be it rounded, "0.978" may not
    frame = run(write(tmp_path, "big", rows(changes={0: {"radius": "0.953"}, 1000: {"radius": "0.978"}})))
    assert flagged(frame) == {"impossible_radius"}
    assert frame.iloc[0]["impossible_radius"] == 1
    findings = frame.iloc[0]["findings"]
    assert "0.978 at idx 1000" in findings and "needs α ≥ 0.0099" in findings and "n ≥ 149,684 at α = 0.001" in findings
    frame = run(
        write(
            tmp_path, "full_precision", rows(changes={0: {"radius": repr(radius_bound(0.25, 100_000, 0.001) + 1e-6)}})
        )
    )
    assert frame.iloc[0]["impossible_radius"] == 1


def test_radius_bound_skipped_with_a_reason_when_n_is_unknown(tmp_path):
    frame = run(write(tmp_path, "big", rows(changes={0: {"radius": "3.0"}}), n=None, alpha=None))
    assert flagged(frame) == set()
    assert "registry gives no n, alpha" in frame.iloc[0]["findings"]


@pytest.mark.parametrize(
    ("flag", "change"),
    [
        ("correct_mismatch", {"correct": "0"}),
        ("abstain_with_radius", {"predict": "-1", "correct": "0", "radius": "0.3"}),
        ("negative_radius", {"radius": "-0.1"}),
    ],
)
def test_rows_that_contradict_themselves(tmp_path, flag, change):
    frame = run(write(tmp_path, flag, rows(changes={2000: change})))
    assert flagged(frame) == {flag}
    assert frame.iloc[0][flag] == 1 and "first idx 2000" in frame.iloc[0]["findings"]


def test_unreadable_logs_are_findings_not_errors(tmp_path):
    torn_log, torn = write(tmp_path, "torn", rows())
    torn.write_text(HEADER + "\n0\t3\t3\n")
    torn_log["sha256"] = hashlib.sha256(torn.read_bytes()).hexdigest()
    altered_log, altered = write(tmp_path, "altered", rows())
    altered.write_text(altered.read_text().replace("0.5", "0.6"))
    missing_log, _ = write(tmp_path, "missing", rows())
    frame = audit([torn_log, altered_log, missing_log], [torn, altered, tmp_path / "nowhere"])
    assert list(frame["unreadable"]) == [True, True, True]
    assert "Not a readable certification log" in frame.iloc[0]["findings"] and "fields" in frame.iloc[0]["findings"]
    assert "not the registered one" in frame.iloc[1]["findings"]
    assert "Not in the cache" in frame.iloc[2]["findings"]


def test_ddrs_logs_audit_fetches_from_a_mirror_and_writes_the_csv(tmp_path, capsys):
    import pandas as pd

    from ddrs.cli import main
    from ddrs.published.log_registry import COLUMNS

    checkout = tmp_path / "checkout"
    (checkout / "data").mkdir(parents=True)  # a log's registry path is data/<name>
    entries = [
        write(checkout / "data", "clean", rows())[0],
        write(checkout / "data", "short", rows(range(0, 5000, STRIDE)))[0],
        write(tmp_path, "elsewhere", rows(), repository="other/repo")[0],
    ]
    defaults = {"rows": 10, "arch": "resnet110", "run": "", "method_authors": "gaussian", "method": "cohen"}
    defaults |= {"noise": 0.25, "n0": 100, "paper": "cohen2019", "table": "", "licence": "MIT"}
    registry = tmp_path / "logs.csv"
    pd.DataFrame([defaults | entry for entry in entries], columns=COLUMNS).to_csv(registry, index=False)
    out = tmp_path / "audit.csv"
    common = ["--registry", str(registry), "--cache", str(tmp_path / "cache"), "--offline"]
    mirror = ["--mirror", f"someone/smoothing={checkout}"]
    assert main(["logs", "audit", "--repository", "someone/smoothing", *common, *mirror, "--out", str(out)]) == 0
    frame = pd.read_csv(out, keep_default_na=False)
    assert list(frame["path"]) == ["data/clean", "data/short"] and list(frame["cut_short"]) == [False, True]
    assert "2 logs audited, 1 flagged" in capsys.readouterr().out
    assert main(["logs", "fetch", *common, *mirror]) == 2  # other/repo has no mirror, and the network is off
    assert "no mirror of other/repo" in capsys.readouterr().err
    assert main(["logs", "fetch", *common, "--mirror", "no-equals-sign"]) == 2
    assert "expected REPO=PATH" in capsys.readouterr().err
