"""Time one training step per method, fixed σ (FS) vs data-dependent σ (DS, Algorithm 2 with K = 1, n = 1).

A DS step adds c_A (one forward pass, no gradient) and one step of Algorithm 1 (a forward and a
backward pass with respect to σ) for the whole batch — about one extra forward/backward per step,
not per example. The last column expresses the DS overhead in units of a plain Cohen FS step
(≈ one forward/backward + SGD update) of the same model.

    .venv/bin/python benchmarks/train_step.py                    # digits MLP / CNN and CIFAR ResNet-18
    .venv/bin/python benchmarks/train_step.py --models cnn --repeats 10 --threads 1  # on a shared machine

Every run also writes its figures as JSON (``--json PATH``; default: a new file in benchmarks/results/).
"""

from __future__ import annotations

import argparse
import time

import torch
from _report import add_json_option, write_report
from tabulate import tabulate

from ddrs.data import get_info
from ddrs.methods import get_method
from ddrs.models import build_model
from ddrs.training import TrainConfig, optimize_batch_sigma

#: (model, dataset, batch size) benchmarked
SETTINGS = {"mlp": ("digits", 64), "cnn": ("digits", 64), "resnet18": ("cifar10", 64)}
METHODS = ("cohen", "smoothadv", "macer", "uniform")


def make_step(config: TrainConfig, model, x, y, generator):
    """One training step exactly as ``Trainer._train_epoch`` takes it (σ table lookup excluded)."""
    loss_fn = get_method(config.method).load_loss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    num_classes = get_info(config.dataset).num_classes
    sigma0 = torch.full((len(x),), config.initial_sigma)

    def step():
        sigma = sigma0
        if config.train_mode == "ds":
            sigma = optimize_batch_sigma(model, x, sigma, config, num_classes=num_classes, generator=generator)
        loss = loss_fn(model, x, y, sigma, generator, config.params, 20)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def time_steps(steps: dict, repeats: int) -> dict[str, float]:
    """Fastest of ``repeats`` timings per step, the steps interleaved so machine load hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    for step in steps.values():
        step()  # warm-up (allocations, lazy initialisation)
    for _ in range(repeats):
        for name, step in steps.items():
            began = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - began)
    return {name: min(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's choice)")
    parser.add_argument("--macer-m", type=int, default=4, help="MACER noise draws (paper: 64; small on CPU)")
    add_json_option(parser)
    args = parser.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rows = []
    figures = {}
    for arch in args.models:
        dataset, batch = SETTINGS[arch]
        info = get_info(dataset)
        x = torch.rand(batch, *info.input_shape)
        y = torch.randint(info.num_classes, (batch,))
        model = build_model(arch, dataset).train()
        fs_reference = None
        for method in args.methods:
            steps = {}
            for mode in ("fs", "ds"):
                config = TrainConfig(
                    dataset=dataset,
                    arch=arch,
                    method=method,
                    sigma=0.25,
                    train_mode=mode,
                    k=1,
                    n=1,
                    params={"m": args.macer_m} if method == "macer" else None,
                )
                steps[mode] = make_step(config, model, x, y, torch.Generator().manual_seed(0))
            seconds = time_steps(steps, args.repeats)
            if method == "cohen":
                fs_reference = seconds["fs"]
            overhead = seconds["ds"] - seconds["fs"]
            figures[f"{arch}_{method}"] = {
                "batch": batch,
                "fs_ms_per_step": 1000 * seconds["fs"],
                "ds_ms_per_step": 1000 * seconds["ds"],
                "ds_overhead_per_cohen_fs_step": overhead / fs_reference if fs_reference else None,
            }
            rows.append(
                [
                    arch,
                    batch,
                    method,
                    1000 * seconds["fs"],
                    1000 * seconds["ds"],
                    1000 * overhead,
                    overhead / fs_reference if fs_reference else float("nan"),
                ]
            )
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU, fastest of {args.repeats} steps; "
        f"SmoothAdv 2 PGD steps m=1, MACER m={args.macer_m}"
    )
    print(
        tabulate(
            rows,
            headers=["model", "batch", "method", "FS ms/step", "DS ms/step", "DS − FS ms", "overhead / Cohen FS step"],
            floatfmt=".2f",
        )
    )
    write_report("train_step", figures, args.json, threads=torch.get_num_threads())


if __name__ == "__main__":
    main()
