"""algorithm1: DDRS Algorithm 1 (the per-input σ search, ``ddrs.core.sigma.optimize_sigma``) on CIFAR ResNet-110.

n = 1, seconds per input at K = ``--k``: timed over 50 steps (1 in quick mode) and scaled (each step is
the same work). "today" is one ``torch.Generator`` per input at the paper config's batch 64 with a
contiguous model, "now" Philox streams at ``--sigma-batch`` inputs with the model laid out as
``ddrs.jobs.sigma_search`` lays it out (channels_last on CUDA). Best of two timed runs after a warm-up.
"""

from __future__ import annotations

import copy

import torch
from _measure import SIGMA, best_seconds

from ddrs.core.device import prepare_classifier
from ddrs.core.seeds import Stream
from ddrs.core.settings import Algorithm1Settings
from ddrs.core.sigma import optimize_sigma
from ddrs.core.streams import input_streams
from ddrs.models import build_model
from gpu.sizes import Sizes


def algorithm1_figures(sizes: Sizes, device: torch.device) -> dict[str, float]:
    """Seconds per input to K = sizes.k, timed over sizes.k_timed steps: today's streams and batch, and now's."""
    torch.manual_seed(0)
    today = build_model("resnet110", "cifar10").to(device).eval()
    now = prepare_classifier(
        copy.deepcopy(today), device, memory_format="auto", compile=False
    )  # as ddrs.jobs.sigma_search
    x = torch.rand(sizes.sigma_batch, 3, 32, 32, generator=torch.Generator().manual_seed(1)).to(device)
    figures: dict[str, float] = {}
    runs = (("today", today, sizes.sigma_batch_today, "generator"), ("now", now, sizes.sigma_batch, None))
    for label, model, batch, streams in runs:
        for precision in ("fp32", "bf16"):
            settings = Algorithm1Settings(sigma0=SIGMA, n=1, steps=(sizes.k_timed,), lr=1e-4, precision=precision)

            def solve(model=model, settings=settings, inputs=x[:batch], streams=streams):
                generator = input_streams(0, range(len(inputs)), Stream.OPTIMIZE, device, kind=streams)
                optimize_sigma(model, inputs, settings, generator=generator)

            seconds = best_seconds(solve, device, sizes.repeats)
            figures[f"{label}_{precision}_s_per_input"] = seconds / batch * sizes.k / sizes.k_timed
        figures[f"{label}_batch"] = batch
    figures["speedup_fp32"] = figures["today_fp32_s_per_input"] / figures["now_fp32_s_per_input"]
    figures["speedup_best"] = figures["today_fp32_s_per_input"] / min(
        figures["now_fp32_s_per_input"], figures["now_bf16_s_per_input"]
    )
    figures["k"], figures["k_timed"] = sizes.k, sizes.k_timed
    return figures
