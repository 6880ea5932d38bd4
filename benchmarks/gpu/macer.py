"""macer: peak memory and seconds of one MACER step (Zhai et al. 2020) with m noisy copies per input.

Batch 256 and m = 64 (target: 40 GB), with all draws in one pass, 16 at a time
(``draws_per_pass``), and in one pass with activations recomputed in backward after 10 cuts
(``activation_checkpoints``, every piece of ResNet-18 its own run; also under bf16 autocast), and
each variant's gradient difference from the one-pass step.
"""

from __future__ import annotations

import copy
import time

import torch
from _measure import SIGMA, sync

from ddrs.core.device import autocast
from ddrs.methods import get_method
from ddrs.models import build_model
from ddrs.training.recompute import with_recomputation
from gpu.sizes import Sizes


def macer_memory(sizes: Sizes, device: torch.device) -> dict[str, object]:
    """Peak CUDA memory (GiB) and seconds of one MACER step in training mode (the registry's loss,
    ResNet-18 CIFAR, fp32) with all m draws in one pass, ``draws_per_pass`` at a time, and in one
    pass recomputing activations after ``activation_checkpoints`` cuts (also under bf16 autocast);
    and the relative difference of each variant's gradient from the one-pass one:
    ``gradient_relative_difference`` of the chunked draws with batch-norm on its running statistics
    (eval mode), where chunking changes float error only; ``…_train`` in training mode, where every
    chunk is normalised by its own batch statistics (``chunked_copies_logits``): the price of the
    chunks' memory saving; ``…_recomputed_train``, where the whole batch is normalised together
    (``ddrs.training.recompute``). Memory is null off CUDA."""
    method = get_method("macer")
    loss_fn = method.load_loss()
    torch.manual_seed(0)
    model = build_model("resnet18", "cifar10").to(device)
    x = torch.rand(sizes.macer_batch, 3, 32, 32, generator=torch.Generator().manual_seed(5)).to(device)
    y = torch.randint(10, (sizes.macer_batch,), generator=torch.Generator().manual_seed(6)).to(device)
    scale = torch.full((len(x),), SIGMA, device=device)
    state = copy.deepcopy(model.state_dict())  # every step starts from the same running statistics

    def step(
        draws_per_pass: int = 0, cuts: int = 0, train: bool = True, precision: str = "fp32"
    ) -> tuple[float | None, float, torch.Tensor]:
        params = method.make_params({"m": sizes.macer_m, "draws_per_pass": draws_per_pass}, source="benchmark")
        model.load_state_dict(state)
        model.train(train)
        model.zero_grad(set_to_none=True)
        sync(device)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        start = time.perf_counter()
        with autocast(device, precision):
            loss = loss_fn(
                with_recomputation(model, "resnet18", cuts), x, y, scale,
                torch.Generator(device=device).manual_seed(0), params,
            )  # fmt: skip
        loss.backward()
        sync(device)
        seconds = time.perf_counter() - start
        peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
        return peak, seconds, torch.cat([parameter.grad.flatten() for parameter in model.parameters()])

    def difference(gradient: torch.Tensor, reference: torch.Tensor) -> float:
        return float((gradient - reference).norm() / reference.norm())

    step()  # warm-up (cuDNN's algorithm choice)
    whole_gib, whole_s, whole_train_grad = step()
    chunked_gib, chunked_s, chunked_train_grad = step(draws_per_pass=sizes.macer_chunk)
    recomputed_gib, recomputed_s, recomputed_train_grad = step(cuts=sizes.macer_cuts)
    recomputed_bf16_gib, recomputed_bf16_s, _ = step(cuts=sizes.macer_cuts, precision="bf16")
    _, _, whole_grad = step(train=False)
    _, _, chunked_grad = step(draws_per_pass=sizes.macer_chunk, train=False)
    return {
        "batch": sizes.macer_batch,
        "m": sizes.macer_m,
        "draws_per_pass": sizes.macer_chunk,
        "activation_checkpoints": sizes.macer_cuts,
        "whole_peak_gib": whole_gib,
        "chunked_peak_gib": chunked_gib,
        "recomputed_peak_gib": recomputed_gib,
        "recomputed_bf16_peak_gib": recomputed_bf16_gib,
        "whole_step_s": whole_s,
        "chunked_step_s": chunked_s,
        "recomputed_step_s": recomputed_s,
        "recomputed_bf16_step_s": recomputed_bf16_s,
        "gradient_relative_difference": difference(chunked_grad, whole_grad),
        "gradient_relative_difference_train": difference(chunked_train_grad, whole_train_grad),
        "gradient_relative_difference_recomputed_train": difference(recomputed_train_grad, whole_train_grad),
    }
