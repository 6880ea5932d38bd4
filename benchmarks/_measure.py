"""How the GPU figures are timed: the device synchronised after each run, runs taking turns in rounds, and ratios
paired per round (``gpu_throughput.py``, ``training_loader_cost.py``).

On a GPU a run's kernels finish after Python returns, so each timed run ends with a synchronisation;
a machine's speed drifts (clocks, other load), so runs compared with each other take turns within a
round and their ratio is taken round by round.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch

#: the noise level σ of every GPU figure (the configs' CIFAR-10 σ)
SIGMA = 0.25


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op off CUDA)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def interleaved_seconds(runs: dict[str, Callable[[], object]], device: torch.device, rounds: int) -> dict[str, list]:
    """Each run's seconds in each of ``rounds`` rounds, the runs taking turns within a round (after
    one untimed warm-up each, unless a single round is asked for), so that a drift in the machine's
    speed (clocks, other load) falls on all of them alike and their ratio is paired per round."""
    if rounds > 1:
        for run in runs.values():
            run()
        sync(device)
    seconds: dict[str, list] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            sync(device)
            seconds[name].append(time.perf_counter() - start)
    return seconds


def best_seconds(run: Callable[[], object], device: torch.device, repeats: int) -> float:
    """The fastest of ``repeats`` timed runs, after one untimed warm-up (compilation, cuDNN choice)
    unless a single run is asked for (quick mode)."""
    return min(interleaved_seconds({"run": run}, device, repeats)["run"])


def paired_ratios(seconds: list[float], reference: list[float]) -> dict[str, float]:
    """The speed of a run relative to ``reference`` (reference seconds over its seconds) in each round
    of :func:`interleaved_seconds`: their median, lowest and highest."""
    ratios = [base / taken for taken, base in zip(seconds, reference, strict=True)]
    return {"ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios)}
