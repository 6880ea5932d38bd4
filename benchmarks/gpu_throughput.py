"""Paper-scale throughput on a GPU (issue 18): CERTIFY, Algorithm 1 and training against their ceilings.

Random weights (speed does not depend on training). Every figure is seconds per input (CERTIFY,
Algorithm 1), draws per second (sequential CERTIFY), images per second (training), or GiB and seconds
of one step (MACER). Five subjects, one module each under ``benchmarks/gpu/`` (what each times is below):

  certify     gpu/certify.py     ddrs's CERTIFY against Cohen's loop and the raw ceiling, per model
  sequential  gpu/sequential.py  sequential CERTIFY's draws per second against fixed-n CERTIFY's
  algorithm1  gpu/algorithm1.py  Algorithm 1 with a generator per input against Philox streams
  training    gpu/training.py    the trainer against a plain loop over batches on the device
  macer       gpu/macer.py       MACER's peak memory: all draws at once, in chunks, recomputed

On CUDA the sizes are the paper's (n = 100,000, K = 1500, batch 256). Without CUDA, or with
``--quick``, the sizes are tiny and compilation is skipped (it alone takes longer than the run),
so CI exercises every path in well under a minute; those figures say nothing about a GPU.
``--sections`` runs some of the figures (a full CUDA run takes longer than ten minutes;
``benchmarks/gpu_check.sh`` runs them one by one within a device visit).
Run:  python benchmarks/gpu_throughput.py [--quick] [--device cuda] [--sections ...] [--json PATH]
"""

from __future__ import annotations

import argparse

import torch
from _report import add_json_option, write_report
from _train_loops import CIFAR10_EPOCH_STEPS
from gpu import algorithm1, certify, macer, sequential, training
from gpu.sizes import Sizes

from ddrs.core.device import select_device

SECTIONS = (*(name for name, _, _ in certify.MODELS), "sequential", "algorithm1", "training", "macer")


def run(
    quick: bool,
    device: torch.device,
    sizes: Sizes,
    workers: int = 0,
    sections: tuple[str, ...] = SECTIONS,
) -> dict:
    figures = {
        "device": str(device),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "quick": quick,
        "sizes": {
            "n0": sizes.n0,
            "n": sizes.n,
            "imagenet_n_timed": sizes.imagenet_n,
            "inputs": sizes.inputs,
            "sequential_inputs": sizes.sequential_inputs,
            "batch": sizes.batch or "auto",
            "k": sizes.k,
            "max_image_side": sizes.max_side,
        },
        "certify_s_per_input": {
            name: certify.certify_figures(arch, dataset, sizes, device)
            for name, arch, dataset in certify.MODELS
            if name in sections
        },
    }
    if "sequential" in sections:
        figures["sequential_resnet110"] = sequential.sequential_figures(sizes, device)
    if "algorithm1" in sections:
        figures["algorithm1_resnet110"] = algorithm1.algorithm1_figures(sizes, device)
    if "training" in sections:
        figures["training_resnet18"] = training.training_figures(sizes, device, workers)
    if "macer" in sections:
        figures["macer_memory_resnet18"] = macer.macer_memory(sizes, device)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__,
        epilog="\n".join(section.__doc__ for section in (certify, sequential, algorithm1, training, macer)),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, …")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, no compilation (automatic without CUDA)")
    parser.add_argument(
        "--n", type=int, help="CERTIFY's estimation draws, the sequential mode's cap (default: 100,000; quick: 4)"
    )
    parser.add_argument("--imagenet-n", type=int, help="ImageNet's draws, scaled to --n (default: 10,000; quick: 4)")
    parser.add_argument("--k", type=int, help="Algorithm 1's steps (default: 1500; quick: 2)")
    parser.add_argument("--sigma-batch", type=int, help="Algorithm 1's inputs per batch now (default: 1024; quick: 2)")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=SECTIONS, help="the figures to measure")
    parser.add_argument(
        "--train-steps", type=int, help=f"batches per training epoch (default: {CIFAR10_EPOCH_STEPS}; quick: 2)"
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="training DataLoader workers (default: 0 quick, else 7)"
    )
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    add_json_option(parser)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = select_device(args.device)
    quick = args.quick or device.type != "cuda"
    workers = args.workers if args.workers is not None else (0 if quick else 7)
    sizes = Sizes.for_run(quick, args.n, args.k, args.imagenet_n, args.sigma_batch, args.train_steps)
    figures = run(quick, device, sizes, workers, tuple(args.sections))
    for name, values in figures["certify_s_per_input"].items():
        print(name, {key: (round(value, 4) if isinstance(value, float) else value) for key, value in values.items()})
    for section in ("sequential_resnet110", "algorithm1_resnet110", "training_resnet18", "macer_memory_resnet18"):
        if section in figures:
            print(section, figures[section])
    write_report("gpu_throughput", figures, args.json, threads=torch.get_num_threads())


if __name__ == "__main__":
    main()
