"""Algorithm 3 (DDRS Appendix C): Figure 2's scenarios, the invariant on random streams, exact log files, the CLI."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ddrs.cli import main
from ddrs.core.memory import memory_certify
from ddrs.data import load_images, load_labels
from ddrs.jobs.memory_log import memory_certify_log
from ddrs.logs.certification_log import read_log


def run(points, predict, radius, norm=2):
    return memory_certify(
        np.asarray(points, dtype=np.float32), np.asarray(predict), np.asarray(radius, dtype=np.float64), norm
    )


# Figure 2 in 2-D: x1 = (0, 0) certified for class 0 with r1 = 1, then x2 with its own prediction and
# radius 0.8; on an axis, so ℓ2 and ℓ1 agree. Left: x2 at d = 0.6 with the same prediction is kept.
# Middle: x2 at d = 0.6 inside x1's region takes its prediction, with the radius left to the border.
# Right: x2 at d = 1.5 with another prediction, its ball crossing x1's region, shrinks to the border.
FIGURE2 = {
    "left": ([0.6, 0], 0, ["kept", "kept"], [0, 0], 0.8),
    "middle": ([0.6, 0], 1, ["kept", "moved_in"], [0, 0], 1.0 - 0.6),
    "right": ([1.5, 0], 1, ["kept", "shrunk"], [0, 1], 1.5 - 1.0),
}


@pytest.mark.parametrize("norm", [2, 1])
@pytest.mark.parametrize("panel", FIGURE2)
def test_figure2_panels(panel, norm):
    x2, predict2, actions, predict, radius2 = FIGURE2[panel]
    result = run([[0, 0], x2], [0, predict2], [1.0, 0.8], norm)
    assert result.action == actions
    assert result.predict.tolist() == predict
    assert result.radius.tolist() == pytest.approx([1.0, radius2])
    assert result.radius_before.tolist() == [1.0, 0.8]


def test_l1_and_l2_balls_differ_off_axis():
    # ‖(0.6, 0.6)‖₂ = 0.85 < 1 (inside the ℓ2 ball), ‖·‖₁ = 1.2 (outside the ℓ1 ball, but intersecting)
    points, predict, radius = [[0, 0], [0.6, 0.6]], [0, 1], [1.0, 0.5]
    l2, l1 = run(points, predict, radius, 2), run(points, predict, radius, 1)
    assert l2.action[1] == "moved_in" and l2.radius[1].item() == pytest.approx(1 - math.hypot(0.6, 0.6))
    assert l1.action[1] == "shrunk" and l1.radius[1].item() == pytest.approx(1.2 - 1.0)


def test_touching_balls_do_not_overlap():
    result = run([[0, 0], [2.0, 0]], [0, 1], [1.0, 1.0])
    assert result.action == ["kept", "kept"]


def test_abstain_inside_a_region_adopts_its_prediction_and_later_balls_avoid_abstentions():
    # x2 abstains inside R1 → must predict 0 there; x3 abstains outside → stays; x4's ball holds x3 → shrinks
    result = run([[0, 0], [0.5, 0], [5, 0], [5.5, 0]], [0, -1, -1, 2], [1.0, 0.0, 0.0, 2.0])
    assert result.action == ["kept", "moved_in", "kept", "shrunk"]
    assert result.predict.tolist() == [0, 0, -1, 2]
    assert result.radius.tolist() == pytest.approx([1.0, 0.0, 0.0, 0.5])


def test_moved_in_resolves_against_every_region_at_once():
    # x3 lies in R1 (class 0) and its ball also meets R2 (class 1); taking class 0 inside R1 is enough
    result = run([[0, 0], [3, 0], [0.5, 0]], [0, 1, 1], [1.0, 1.5, 2.0])
    assert result.action == ["kept", "kept", "moved_in"]
    assert result.predict[2].item() == 0
    assert result.radius[2].item() == pytest.approx(0.5)


def distances(points: np.ndarray, norm: int) -> np.ndarray:
    diff = points[:, None, :].astype(np.float64) - points[None, :, :].astype(np.float64)
    return np.linalg.norm(diff, ord=norm, axis=2)


def assert_sound(points, result, norm):
    """No two stored regions {x} ∪ open ball of different predictions intersect."""
    d = distances(points, norm)
    predict, radius = np.asarray(result.predict), np.asarray(result.radius)
    different = predict[:, None] != predict[None, :]
    reach = radius[:, None] + radius[None, :]
    tolerance = 1e-9 * (1 + reach)
    assert not np.any(different & (d < reach - tolerance)), "regions of different predictions intersect"
    assert not np.any(different & (d == 0)), "one point carries two predictions"


streams = st.integers(min_value=1, max_value=25).flatmap(
    lambda size: st.tuples(
        st.lists(st.lists(st.floats(-2, 2), min_size=2, max_size=2), min_size=size, max_size=size),
        st.lists(st.integers(-1, 2), min_size=size, max_size=size),
        st.lists(st.floats(0, 2), min_size=size, max_size=size),
        st.sampled_from([1, 2]),
    )
)


@settings(max_examples=150, deadline=None)
@given(streams)
def test_random_streams_keep_the_invariant_and_never_grow_a_radius(stream):
    coords, predict, radius, norm = stream
    radius = [0.0 if p == -1 else r for p, r in zip(predict, radius, strict=True)]
    # coarse coordinates make exact coincidences and boundary contacts likely
    points = np.round(np.asarray(coords, dtype=np.float32), 1)
    result = run(points, predict, radius, norm)
    assert_sound(points, result, norm)
    assert np.all(result.radius <= result.radius_before)
    assert np.all(result.radius >= 0)
    for i, action in enumerate(result.action):
        assert (action == "moved_in") == (result.predict[i].item() != predict[i])


def test_high_dimensional_stream_uses_the_same_rules():
    rng = np.random.default_rng(0)
    points = rng.random((300, 3, 8, 8), dtype=np.float32)
    predict = rng.integers(0, 3, 300)
    radius = rng.random(300) * 3
    for norm in (1, 2):
        result = memory_certify(points, predict, radius, norm, block=64)
        assert_sound(points.reshape(300, -1), result, norm)
        assert sum(result.counts().values()) == 300


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="norm"):
        run([[0, 0]], [0], [1.0], norm=3)
    with pytest.raises(ValueError, match="radii"):
        run([[0, 0]], [0], [-1.0])


# A hand-checked stream on a line (distances exact in binary): x0 = 0 certified for class 0 with r = 1;
# x1 = 0.5 (class 1) lies inside R0 → takes class 0 and r = 1 − 0.5; x2 = 3 (class 2, r = 2.5) meets R0 and
# R1 → r = min(3 − 1, 2.5 − 0.5) = 2; x3 = 6 abstains at distance 3 ≥ 2 from x2 → kept. Rows arrive shuffled.
HAND_LOG = """idx\tlabel\tpredict\tradius\tcorrect\ttime\tnoise
2\t2\t2\t2.5\t1\t1.5\tgaussian
0\t0\t0\t1.0\t1\t1.5\tgaussian
3\t3\t-1\t0.0\t0\t1.5\tgaussian
1\t1\t1\t0.75\t1\t1.5\tgaussian
"""
HAND_MEMORY_LOG = """idx\tlabel\tpredict\tradius\tcorrect\ttime\tnoise\tmemory_action\tradius_before
0\t0\t0\t1\t1\t1.5\tgaussian\tkept\t1
1\t1\t0\t0.5\t0\t1.5\tgaussian\tmoved_in\t0.75
2\t2\t2\t2\t1\t1.5\tgaussian\tshrunk\t2.5
3\t3\t-1\t0\t0\t1.5\tgaussian\tkept\t0
"""
HAND_IMAGES = np.array([[[[0.0, 0.0]]], [[[0.5, 0.0]]], [[[3.0, 0.0]]], [[[6.0, 0.0]]]], dtype=np.float32)
HAND_LABELS = [0, 1, 2, 3]


def test_memory_log_file_is_exactly_the_hand_checked_one(tmp_path):
    log, out = tmp_path / "certify.tsv", tmp_path / "memory.tsv"
    log.write_text(HAND_LOG)
    assert memory_certify_log(log, HAND_IMAGES, out, labels=HAND_LABELS) == {"kept": 2, "moved_in": 1, "shrunk": 1}
    assert out.read_text() == HAND_MEMORY_LOG
    assert sorted(p.name for p in tmp_path.iterdir()) == ["certify.tsv", "memory.tsv"]  # no temporary file left


def test_memory_log_takes_a_dataset_of_image_label_pairs_too(digits_data, tmp_path):
    log = tmp_path / "certify.tsv"
    synthetic_digits_log(log, "gaussian", seed=3)
    memory_certify_log(log, digits_data["test"], tmp_path / "from_dataset.tsv")
    memory_certify_log(
        log, load_images("digits", "test"), tmp_path / "from_images.tsv", labels=load_labels("digits", "test")
    )
    assert (tmp_path / "from_dataset.tsv").read_text() == (tmp_path / "from_images.tsv").read_text()


def test_memory_log_refuses_an_idx_outside_the_images(tmp_path):
    log = tmp_path / "certify.tsv"
    log.write_text(HAND_LOG)
    with pytest.raises(ValueError, match="idx outside the dataset's 3 inputs"):
        memory_certify_log(log, HAND_IMAGES[:3], tmp_path / "memory.tsv", labels=HAND_LABELS)
    assert not (tmp_path / "memory.tsv").exists()


def test_memory_log_refuses_a_log_of_another_split(tmp_path):
    """Regions are balls around the certified inputs: a log whose labels are not the split's at its
    idx certifies other images, and Algorithm 3 on these would be no certificate."""
    log = tmp_path / "certify.tsv"
    log.write_text(HAND_LOG)
    with pytest.raises(
        ValueError, match=r"2 of 4 rows have another label .* \(idx \[1, 3\]\): it certifies another split"
    ):
        memory_certify_log(log, HAND_IMAGES, tmp_path / "memory.tsv", labels=[0, 2, 2, 1])
    with pytest.raises(ValueError, match="give the split's labels"):
        memory_certify_log(log, HAND_IMAGES, tmp_path / "memory.tsv")
    assert not (tmp_path / "memory.tsv").exists()


def test_memory_log_of_no_rows_is_a_log_of_no_rows(tmp_path):
    log, out = tmp_path / "certify.tsv", tmp_path / "memory.tsv"
    log.write_text(HAND_LOG.splitlines(keepends=True)[0])
    assert memory_certify_log(log, HAND_IMAGES, out, labels=HAND_LABELS) == {"kept": 0, "moved_in": 0, "shrunk": 0}
    assert read_log(out).columns.tolist()[-2:] == ["memory_action", "radius_before"] and len(read_log(out)) == 0


def certify_digits_log(model, dataset, path, count=60, scale=0.5):
    """A small data-dependent-style certification log of the digits model, written by ddrs.core.smoothing."""
    from ddrs.core.device import BaseClassifier
    from ddrs.core.settings import CertifySettings, DeviceSettings
    from ddrs.core.smoothing import certify_batch

    x = torch.stack([dataset[i][0] for i in range(count)])
    labels = [dataset[i][1] for i in range(count)]
    settings = CertifySettings(noise="gaussian", n0=20, n=200, alpha=0.001)
    on_cpu = BaseClassifier(model, 10, torch.device("cpu"), DeviceSettings(batch_size=2000, memory_format="contiguous"))
    result = certify_batch(on_cpu, x, scale, settings, generator=torch.Generator().manual_seed(0))
    frame = pd.DataFrame(
        {
            "idx": range(count),
            "label": labels,
            "predict": result.predict.tolist(),
            "radius": result.radius.tolist(),
            "correct": [int(p == y) for p, y in zip(result.predict.tolist(), labels, strict=True)],
            "time": 0.0,
            "noise": "gaussian",
        }
    )
    frame.to_csv(path, sep="\t", index=False)


def test_memory_on_a_real_digits_log_reports_its_adjustments(digits_model, digits_data, tmp_path):
    log = tmp_path / "certify.tsv"
    certify_digits_log(digits_model, digits_data["test"], log)
    counts = memory_certify_log(log, digits_data["test"], tmp_path / "memory.tsv")
    out = read_log(tmp_path / "memory.tsv")
    before = read_log(log)
    assert sum(counts.values()) == len(out) == len(before)
    assert list(out.columns) == [*before.columns, "memory_action", "radius_before"]
    assert (out["correct"] == (out["predict"] == out["label"]).astype(int)).all()
    assert np.allclose(out["radius_before"], before["radius"])
    assert (out["memory_action"] != "kept").sum() == counts["moved_in"] + counts["shrunk"]
    points = load_images("digits", "test")[out["idx"]].reshape(len(out), -1)
    result = type("R", (), {"predict": out["predict"].to_numpy(), "radius": out["radius"].to_numpy()})
    assert_sound(points, result, 2)


def test_cli_memory_end_to_end(digits_model, digits_data, tmp_path, capsys):
    log = tmp_path / "certify.tsv"
    certify_digits_log(digits_model, digits_data["test"], log, count=30)
    out = tmp_path / "memory.tsv"
    assert main(["memory", "--log", str(log), "--dataset", "digits", "--out", str(out)]) == 0
    assert "30 rows" in capsys.readouterr().out
    assert len(read_log(out)) == 30


def test_cli_memory_refuses_a_log_certified_under_another_split_seed(tmp_path, capsys):
    """digits' test split depends on the seed: a log certified with --seed 1 is not of --seed 0's images."""
    log, out = tmp_path / "certify.tsv", tmp_path / "memory.tsv"
    synthetic_digits_log(log, "gaussian", seed=4, split_seed=1)
    assert main(["memory", "--log", str(log), "--dataset", "digits", "--seed", "1", "--out", str(out)]) == 0
    assert main(["memory", "--log", str(log), "--dataset", "digits", "--out", str(tmp_path / "seed0.tsv")]) == 2
    assert "it certifies another split; use the dataset and seed it was certified with" in capsys.readouterr().err
    assert not (tmp_path / "seed0.tsv").exists()


def test_cli_memory_bad_inputs(digits_data, tmp_path, capsys):
    assert main(["memory", "--log", str(tmp_path / "missing.tsv"), "--dataset", "digits", "--out", "x"]) == 2
    assert "missing.tsv" in capsys.readouterr().err
    log = tmp_path / "no_noise.tsv"
    pd.DataFrame({"idx": [0], "label": [1], "predict": [1], "radius": [0.3], "correct": [1], "time": [0.1]}).to_csv(
        log, sep="\t", index=False
    )
    assert main(["memory", "--log", str(log), "--dataset", "digits", "--out", str(tmp_path / "m.tsv")]) == 2
    assert "noise column" in capsys.readouterr().err
    assert main(["memory", "--log", str(log), "--dataset", "nope", "--out", str(tmp_path / "m.tsv")]) == 2
    assert "unknown dataset" in capsys.readouterr().err


def synthetic_digits_log(path, noise: str, seed: int, count: int = 80, split_seed: int = 0) -> None:
    """A certification log over digits test inputs (the split of ``split_seed``) with random
    predictions and radii (no model needed)."""
    rng = np.random.default_rng(seed)
    predict = rng.integers(-1, 10, count)
    radius = np.where(predict == -1, 0.0, rng.random(count) * 2)
    idx = rng.permutation(540)[:count]
    label = load_labels("digits", "test", seed=split_seed)[idx]
    pd.DataFrame(
        {
            "idx": idx,
            "label": label,
            "predict": predict,
            "radius": radius,
            "correct": (predict == label).astype(int),
            "time": 0.5,
            "noise": noise,
        }
    ).to_csv(path, sep="\t", index=False)


def test_cli_memory_runs_several_logs_in_one_process(tmp_path, capsys):
    logs = [tmp_path / "gaussian.tsv", tmp_path / "uniform.tsv"]
    synthetic_digits_log(logs[0], "gaussian", seed=1)
    synthetic_digits_log(logs[1], "uniform", seed=2)
    outs = [tmp_path / "memory_gaussian.tsv", tmp_path / "memory_uniform.tsv"]
    assert main(["memory", "--log", *map(str, logs), "--dataset", "digits", "--out", *map(str, outs)]) == 0
    printed = capsys.readouterr()
    assert printed.out.count("80 rows") == 2
    assert re.search(r"^ddrs memory: work [0-9.]+ s$", printed.err, re.MULTILINE)
    images = load_images("digits", "test")
    for log, out in zip(logs, outs, strict=True):
        memory_certify_log(log, images, tmp_path / "alone.tsv", labels=load_labels("digits", "test"))
        assert out.read_text() == (tmp_path / "alone.tsv").read_text()


def test_cli_memory_needs_one_output_per_log(tmp_path, capsys):
    log = tmp_path / "certify.tsv"
    synthetic_digits_log(log, "gaussian", seed=1)
    out = tmp_path / "memory.tsv"
    assert main(["memory", "--log", str(log), str(log), "--dataset", "digits", "--out", str(out)]) == 2
    assert "2 --log files but 1 --out files; give one output per log" in capsys.readouterr().err
    assert main(["memory", "--log", str(log), str(log), "--dataset", "digits", "--out", str(out), str(out)]) == 2
    assert f"--out names a file twice: ['{out}', '{out}']" in capsys.readouterr().err
    assert not out.exists()
