"""sequential: sequential CERTIFY's forward passes per second against fixed-n CERTIFY's, on CIFAR ResNet-110 (issue 40).

The sequential mode (``ddrs.core.sequential_pool``, ``docs/protocol.md`` "Sequential certification")
draws in rounds: a host synchronisation, the stopping rule and a refilled pool after every look, and
smaller forward passes while the pool drains. Its draws per second against fixed-n CERTIFY's
(``certify_batch``) on the same model, batch and precision, timed in turns in the same process, is
the figure; the issue's target is ≥ 0.8. Both run bf16, compiled on CUDA: the fastest draws, where
the rounds' host work weighs most. Draws are the rows the model evaluates (selection included),
counted as they are run.

A random ResNet-110's p_A says nothing of a trained model's, so neither would its inputs' draw
needs. To give the inputs a trained model's spread of needs, the base classifier is the whole
ResNet-110 forward pass with its logits overruled by a rule on the noisy image's mean (class 0
above ½, class 1 below). Under Gaussian noise that mean is x̄ + σ·ε̄ with ε̄ ~ N(0, 1/D), D pixels,
so an input with mean ½ + σz/√D has p_A = Φ(|z|) exactly, i.e. a smoothed margin σ|z|; the
inputs' z are spread evenly over [0, 4] (past the 3.8σ that n = 100,000 draws can certify at
α = 0.001), with ``config/paper.yaml``'s CIFAR-10 radius grid. Inputs near a threshold of the grid
run to the cap n, the others stop earlier: at n = 100,000, 64 such inputs took 19,400 draws on
average (median 6,850, 6 % at the cap), against 15,900 (median 9,400, 4 % at the cap) for the
digits model of ``benchmarks/measured/sequential_certify-cpu-mnist5k-50.json`` at σ = 0.25.

The sequential run certifies all ``sequential_inputs`` to the end (the pool draining at the end
included); fixed-n CERTIFY runs ``inputs`` of them at n draws. Seconds per draw, paired round by
round after a warm-up; ``n_timed`` is the cap (``--n``). A short run (``gpu_check.sh``: 256 inputs,
cap 10,000: 3,260 draws per input on average, median 1,620, 3.5 % at the cap) weighs the first
looks' small rounds more than a long job at n = 100,000 does, whose later looks draw thousands per
input.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import torch
import yaml
from _measure import SIGMA, interleaved_seconds, paired_ratios
from torch import Tensor, nn

from ddrs.core.device import BaseClassifier, prepare_certification
from ddrs.core.seeds import Stream
from ddrs.core.sequential_pool import certify_sequentially
from ddrs.core.settings import CertifySettings, DeviceSettings, SequentialSettings
from ddrs.core.smoothing import certify_batch
from ddrs.core.streams import input_streams
from ddrs.data import get_info
from ddrs.models import build_model
from gpu.sizes import ALPHA, Sizes

PAPER_CONFIG = Path(__file__).resolve().parents[2] / "config" / "paper.yaml"
#: the inputs' margins z (p_A = Φ(|z|)) run evenly from 0 to this
LARGEST_MARGIN = 4.0
PRECISION = "bf16"


class MeanRule(nn.Module):
    """``network``'s logits, overruled by the side of ½ the image's mean falls on: class 0 above, class 1 below."""

    def __init__(self, network: nn.Module):
        super().__init__()
        self.network = network

    def forward(self, x: Tensor) -> Tensor:
        logits = self.network(x).float()
        chosen = (x.mean(dim=tuple(range(1, x.ndim))) <= 0.5).long()
        lead = 2 * logits.abs().amax(dim=1, keepdim=True) + 1  # beats any gap between two logits
        classes = torch.arange(logits.shape[1], device=x.device)
        return logits + lead * (classes == chosen[:, None])


class DrawCounter(nn.Module):
    """Counts the rows ``model`` evaluates: the forward passes a certification spends."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.draws = 0

    def forward(self, x: Tensor) -> Tensor:
        self.draws += x.shape[0]
        return self.model(x)


def inputs_with_margins(count: int, shape: tuple[int, ...]) -> Tensor:
    """``count`` images whose means put their margins z (p_A = Φ(|z|) under :class:`MeanRule`) evenly over
    [0, LARGEST_MARGIN]."""
    margins = torch.linspace(0, LARGEST_MARGIN, count, dtype=torch.float64)
    pattern = torch.rand(count, *shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    pattern -= pattern.mean(dim=(1, 2, 3), keepdim=True)
    means = 0.5 + SIGMA * margins / math.sqrt(math.prod(shape))
    return (pattern + means[:, None, None, None]).float()


def sequential_figures(sizes: Sizes, device: torch.device) -> dict[str, float | int | str | bool]:
    torch.manual_seed(0)
    info = get_info("cifar10")
    shape, num_classes = info.input_shape, info.num_classes
    x = inputs_with_margins(sizes.sequential_inputs, shape)
    radii = yaml.safe_load(PAPER_CONFIG.read_text())["datasets"]["cifar10"]["radii"]
    network = MeanRule(build_model("resnet110", "cifar10")).to(device).eval()
    fixed = CertifySettings(n0=sizes.n0, n=sizes.n, alpha=ALPHA, precision=PRECISION)
    on_device = DeviceSettings(batch_size=sizes.batch, compile=sizes.compile)
    # as a certification job resolves its device settings, then every forward pass counted
    prepared = prepare_certification(BaseClassifier(network, num_classes, device, on_device), fixed, shape)
    model = DrawCounter(prepared.model)
    classifier = replace(prepared, model=model)
    sequential = CertifySettings(
        n0=sizes.n0, n=sizes.n, alpha=ALPHA, precision=PRECISION,
        mode="sequential", sequential=SequentialSettings(radii=tuple(radii)),
    )  # fmt: skip
    draws: dict[str, int] = {}
    results = []

    def counted(name: str, run) -> None:
        before = model.draws
        run()
        draws[name] = model.draws - before

    def fixed_n() -> None:
        inputs = x[: sizes.inputs].to(device)
        generator = input_streams(0, range(len(inputs)), Stream.CERTIFY, device)
        certify_batch(classifier, inputs, SIGMA, fixed, generator=generator)

    def sequentially() -> None:
        streams = input_streams(0, range(len(x)), Stream.CERTIFY, device)
        sigma = torch.full((len(x),), SIGMA)
        stopped = certify_sequentially(classifier, x, sigma, sequential, streams=streams)
        results[:] = [result for _, result in stopped]

    seconds = interleaved_seconds(
        {"fixed": lambda: counted("fixed", fixed_n), "sequential": lambda: counted("sequential", sequentially)},
        device,
        sizes.repeats,
    )
    per_draw = {name: [taken / draws[name] for taken in seconds[name]] for name in seconds}
    return {
        "fixed_draws_per_s": 1 / min(per_draw["fixed"]),
        "sequential_draws_per_s": 1 / min(per_draw["sequential"]),
        **{
            f"sequential_over_fixed_{key}": value
            for key, value in paired_ratios(per_draw["sequential"], per_draw["fixed"]).items()
        },
        "sequential_inputs": len(x),
        "sequential_mean_draws_per_input": draws["sequential"] / len(x),
        "sequential_undecided_at_cap": sum(not result.decided for result in results) / len(results),
        "fixed_inputs": sizes.inputs,
        "fixed_draws_per_input": draws["fixed"] / sizes.inputs,
        "n_timed": sizes.n,
        "batch": on_device.batch_size,
        "precision": PRECISION,
        "compiled": sizes.compile,
    }
