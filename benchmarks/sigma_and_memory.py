"""Speed of Algorithm 1 (batched vs one input at a time; overhead vs a 100k-sample CERTIFY) and Algorithm 3.

Targets: batched Algorithm 1 ≥ 10× faster than one input at a time; Algorithm 1 at K = 100, n = 1
costs ≤ 5% of CERTIFY with n = 100,000; memory certification of 10,000 random 3×32×32 inputs in
≤ 10 s on 2 cores. Runs in a few minutes on 2 CPU cores: where a measurement is scaled down
(fewer steps or samples than the target setting), the time is extrapolated linearly in the
number of base-classifier evaluations, and the script says so.

    .venv/bin/python benchmarks/sigma_and_memory.py [--json PATH]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from _report import add_json_option, write_report
from threadpoolctl import threadpool_limits

from ddrs.core.memory import memory_certify
from ddrs.core.seeds import Stream
from ddrs.core.settings import Algorithm1Settings
from ddrs.core.sigma import optimize_sigma
from ddrs.core.smoothing import sample_counts
from ddrs.core.streams import input_streams
from ddrs.models import build_model

CPU = torch.device("cpu")


def seconds(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def model_and_inputs(arch: str, dataset: str, shape: tuple[int, ...], batch: int):
    model = build_model(arch, dataset).eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    x = torch.rand(batch, *shape, generator=torch.Generator().manual_seed(0))
    return model, x


def algorithm1_per_input(model, x, steps: int) -> tuple[float, float]:
    """Seconds per input per step (the default, released objective): all of ``x`` in one batch, and one at a time."""
    gens = input_streams(0, range(len(x)), Stream.OPTIMIZE, CPU)
    settings = Algorithm1Settings(sigma0=0.25, steps=(steps,))

    def batched():
        optimize_sigma(model, x, settings, generator=gens)

    def one_at_a_time():
        for i in range(len(x)):
            optimize_sigma(model, x[i : i + 1], settings, generator=[gens[i]])

    optimize_sigma(model, x[:2], Algorithm1Settings(sigma0=0.25, steps=(1,)), generator=gens[:2])  # warm-up
    return seconds(batched) / len(x) / steps, seconds(one_at_a_time) / len(x) / steps


def certify_per_input_per_sample(model, x, samples: int, noise_batch: int) -> float:
    """Seconds per input per noise sample of CERTIFY's estimation pass (sample_counts)."""
    gens = input_streams(0, range(len(x)), Stream.CERTIFY, CPU)
    elapsed = seconds(lambda: sample_counts(model, x, 0.25, samples, "gaussian", noise_batch, gens))
    return elapsed / len(x) / samples


#: Algorithm 1's cases: figure, the line announcing it, torch threads, then benchmark_algorithm1's arguments
#: (name, arch, dataset, shape, batch, steps, cert_inputs, cert_samples, noise_batch). The digits model's
#: ops are microseconds long: one thread avoids OpenMP hand-off costs that dominate (and swing wildly)
#: when the 2 cores are shared.
ALGORITHM1_CASES = (
    ("digits_mlp_1_thread", "digits model on 1 thread", 1, "digits mlp", "mlp", "digits", (1, 8, 8), 64, 20, 2,
     100_000, 10_000),
    ("cifar_resnet18_2_threads", "ResNet-18 and memory certification on 2 threads", 2, "CIFAR ResNet-18",
     "resnet18", "cifar10", (3, 32, 32), 16, 2, 1, 1_000, 500),
)  # fmt: skip


def benchmark_algorithm1(name, arch, dataset, shape, batch, steps, cert_inputs, cert_samples, noise_batch) -> dict:
    model, x = model_and_inputs(arch, dataset, shape, batch)
    per_step_batched, per_step_single = algorithm1_per_input(model, x, steps)
    print(f"[{name}] Algorithm 1, B={batch}, measured over K={steps} steps, n=1:")
    print(f"    batched        {per_step_batched * 1e3:9.3f} ms per input per step")
    print(f"    one at a time  {per_step_single * 1e3:9.3f} ms per input per step")
    print(f"    speed-up       {per_step_single / per_step_batched:9.1f}x  (target >= 10x)")
    per_sample = certify_per_input_per_sample(model, x[:cert_inputs], cert_samples, noise_batch)
    certify = per_sample * (100_000 + 100)
    optimise = per_step_batched * 100
    scaled = (
        " (extrapolated linearly from the measured steps / samples)" if steps < 100 or cert_samples < 100_000 else ""
    )
    print(
        f"    CERTIFY n0=100, n=100,000: {certify:8.2f} s per input, measured with {cert_samples} samples"
        f" on {cert_inputs} input(s), noise batch {noise_batch}"
    )
    print(f"    Algorithm 1 K=100, n=1:    {optimise:8.3f} s per input (batched)")
    print(f"    DS overhead                {100 * optimise / certify:8.2f} %  (target <= 5%){scaled}")
    return {
        "batch": batch,
        "steps_measured": steps,
        "algorithm1_batched_ms_per_input_step": per_step_batched * 1e3,
        "algorithm1_single_ms_per_input_step": per_step_single * 1e3,
        "algorithm1_speedup": per_step_single / per_step_batched,
        "certify_seconds_per_input_n100000": certify,
        "certify_samples_measured": cert_samples,
        "algorithm1_k100_seconds_per_input": optimise,
        "ds_overhead_percent": 100 * optimise / certify,
        "extrapolated": bool(scaled),
    }


def benchmark_memory(count: int = 10_000, clustered_count: int = 3_000) -> dict:
    rng = np.random.default_rng(0)
    points = rng.random((count, 3, 32, 32), dtype=np.float32)
    predict = rng.integers(-1, 10, count)
    figures = {}
    for norm, scale in ((2, 1.0), (1, 4.0)):
        radius = rng.random(count) * scale
        radius[predict == -1] = 0.0
        start = time.perf_counter()
        result = memory_certify(points, predict, radius, norm)
        elapsed = time.perf_counter() - start
        print(
            f"[memory] {count} random 3x32x32 inputs, l{norm} balls, radii U[0, {scale}]: {elapsed:6.2f} s "
            f"(target <= 10 s); actions {result.counts()}"
        )
        figures[f"random_l{norm}"] = {"inputs": count, "seconds": elapsed, "actions": result.counts()}
    # stress case beyond the target: a clustered stream puts most pairs within reach, so every pair
    # goes through the exact float64 distance (cost grows with the number of such pairs, ~N²/100 here)
    centres = rng.random((50, 3, 32, 32), dtype=np.float32)
    clustered = centres[rng.integers(0, 50, clustered_count)]
    clustered = clustered + np.float32(0.02) * rng.standard_normal((clustered_count, 3, 32, 32), dtype=np.float32)
    radius = rng.random(clustered_count) * 2.0
    start = time.perf_counter()
    result = memory_certify(clustered, predict[:clustered_count].clip(min=0), radius, 2)
    elapsed = time.perf_counter() - start
    print(
        f"[memory] stress: {clustered_count} clustered inputs (50 clusters), l2 radii U[0, 2]: "
        f"{elapsed:6.2f} s; actions {result.counts()}"
    )
    figures["clustered_l2"] = {"inputs": clustered_count, "seconds": elapsed, "actions": result.counts()}
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_json_option(parser)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, CPU", end="; ")
    figures = {}
    for figure, announcement, threads, *case in ALGORITHM1_CASES:
        torch.set_num_threads(threads)
        print(announcement)
        figures[figure] = benchmark_algorithm1(*case)
    with threadpool_limits(limits=2):  # Algorithm 3 runs in numpy: its BLAS on the same 2 threads
        figures["memory_2_threads"] = benchmark_memory()
    write_report("sigma_and_memory", figures, args.json, threads={"digits_mlp": 1, "resnet18_and_memory": 2})


if __name__ == "__main__":
    main()
