"""benchmarks/gpu_throughput.py runs on the CPU in its quick mode and writes every figure the issue names."""

import subprocess
import sys

import pytest
import torch
from benchmark_helpers import BENCHMARKS, quick_cpu_record
from scipy.stats import binomtest, norm
from torch import nn

CERTIFY_FIGURES = {
    "ddrs_fp32_eager", "ddrs_bf16_eager", "ddrs_fp32_compiled", "ddrs_bf16_compiled", "cohen_fp32_batch400",
    "ceiling_bf16_channels_last_eager", "best_ddrs_over_ceiling", "cohen_over_best_ddrs", "n_timed",
}  # fmt: skip
MACER_VARIANTS = ("whole", "chunked", "recomputed", "recomputed_bf16")


@pytest.mark.bench
def test_quick_cpu_run_writes_every_figure(tmp_path):
    record = quick_cpu_record("gpu_throughput.py", tmp_path / "figures.json")
    assert record["benchmark"] == "gpu_throughput" and record["torch"]
    figures = record["figures"]
    assert figures["device"] == "cpu" and figures["quick"] is True
    assert set(figures["certify_s_per_input"]) == {"cifar_resnet110", "cifar_resnet18", "imagenet_resnet50"}
    for name, values in figures["certify_s_per_input"].items():
        assert set(values) == CERTIFY_FIGURES, name
        assert values["ddrs_fp32_compiled"] is None  # quick mode does not compile
        assert all(values[key] > 0 for key in CERTIFY_FIGURES if values[key] is not None), name
    sequential = figures["sequential_resnet110"]
    assert sequential["fixed_draws_per_s"] > 0 and sequential["sequential_draws_per_s"] > 0
    assert sequential["sequential_over_fixed_ratio_min"] == sequential["sequential_over_fixed_ratio"]  # one round
    # quick: the cap n = 4, so every input draws n0 = 2 selection draws and n = 4 estimation draws
    assert sequential["sequential_mean_draws_per_input"] == sequential["fixed_draws_per_input"] == 6
    algorithm1 = figures["algorithm1_resnet110"]
    for when in ("today", "now"):
        assert algorithm1[f"{when}_fp32_s_per_input"] > 0 and algorithm1[f"{when}_bf16_s_per_input"] > 0
    assert algorithm1["speedup_fp32"] == algorithm1["today_fp32_s_per_input"] / algorithm1["now_fp32_s_per_input"]
    training = figures["training_resnet18"]
    assert set(training) == {
        "num_workers", "steps_per_epoch", "rounds", "feed", "fp32_contiguous", "bf16_channels_last",
        "loader_only_img_per_s",
    }  # fmt: skip
    assert training["loader_only_img_per_s"] > 0 and training["rounds"] == 1
    assert training["feed"] == "device"  # what a CIFAR-10 run builds by default
    for name in ("fp32_contiguous", "bf16_channels_last"):
        values = training[name]
        assert values["ddrs_img_per_s"] > 0 and values["plain_on_device_img_per_s"] > 0, name
        # one round: its ratio is the medians' ratio (up to rounding), and the lowest and highest
        assert values["ratio"] == pytest.approx(values["ddrs_img_per_s"] / values["plain_on_device_img_per_s"]), name
        assert values["ratio_min"] == values["ratio"] == values["ratio_max"], name
    macer = figures["macer_memory_resnet18"]
    assert all(macer[f"{variant}_peak_gib"] is None for variant in MACER_VARIANTS)  # no CUDA: no peak memory
    assert all(macer[f"{variant}_step_s"] > 0 for variant in MACER_VARIANTS)
    assert macer["m"] > macer["draws_per_pass"] > 0 and macer["activation_checkpoints"] > 0
    assert 0 <= macer["gradient_relative_difference"] < 1e-4  # chunked draws: the same gradient
    # in training mode each chunk has its own batch-norm statistics: a difference beyond float error
    assert macer["gradient_relative_difference_train"] > 1e-3
    # recomputation normalises the whole batch together: the one-pass gradient
    assert 0 <= macer["gradient_relative_difference_recomputed_train"] < 1e-4


def test_interleaved_rounds_take_turns_after_one_warm_up(monkeypatch):
    """The training ratio is paired per round: the runs alternate, each warmed up once first."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _measure

    calls = []
    seconds = _measure.interleaved_seconds(
        {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, torch.device("cpu"), rounds=3
    )
    assert calls == ["a", "b"] * 4  # the warm-up round, then three timed rounds
    assert {name: len(values) for name, values in seconds.items()} == {"a": 3, "b": 3}
    assert _measure.interleaved_seconds({"a": lambda: calls.append("c")}, torch.device("cpu"), 1)
    assert calls[-1:] == ["c"] and calls.count("c") == 1  # a single round is not warmed up


def test_ratios_are_paired_round_by_round(monkeypatch):
    """Each round's ratio is the reference's seconds over the run's in that same round."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _measure

    # round by round 2/1, 3/4, 6/2; unpaired medians would give 3/2
    ratios = _measure.paired_ratios([1.0, 4.0, 2.0], [2.0, 3.0, 6.0])
    assert ratios == {"ratio": 2.0, "ratio_min": 0.75, "ratio_max": 3.0}


def test_the_entry_point_names_every_section_and_its_module():
    """``--help`` lists the five subjects and each module's account of what it times."""
    result = subprocess.run(
        [sys.executable, str(BENCHMARKS / "gpu_throughput.py"), "--help"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    for module in ("certify", "sequential", "algorithm1", "training", "macer"):
        assert f"gpu/{module}.py" in result.stdout and f"\n{module}: " in result.stdout, module
    for option in ("--quick", "--device", "--n", "--imagenet-n", "--k", "--sigma-batch", "--sections", "--train-steps"):
        assert option in result.stdout, option


def test_the_sequential_sections_inputs_have_the_p_a_it_states(monkeypatch):
    """Under the section's mean rule, an input made with margin z has p_A = Φ(z) at σ: the share of class 0
    among 20,000 noisy copies covers it at 99.99 % (any network: its logits are overruled)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    from _measure import SIGMA
    from gpu.sequential import LARGEST_MARGIN, MeanRule, inputs_with_margins

    torch.manual_seed(0)
    model = MeanRule(nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10))).eval()
    images = inputs_with_margins(5, (3, 32, 32))
    copies = 20_000
    for image, margin in zip(images, torch.linspace(0, LARGEST_MARGIN, 5).tolist(), strict=True):
        with torch.inference_mode():
            predictions = model(image + SIGMA * torch.randn(copies, *image.shape)).argmax(1)
        interval = binomtest(int((predictions == 0).sum()), copies).proportion_ci(0.9999)
        assert interval.low <= norm.cdf(margin) <= interval.high, margin
