"""What exact tails cost on the CPU: a certification pass's noise with and without the tail refinement.

One input's stream draws ``--draws`` noise samples per call, as CERTIFY's forward passes do: torch's
``randn`` as it is (the baseline), and :class:`ddrs.core.streams.GeneratorStreams`, which refines the
radius of each Box–Muller pair beyond 3.72 (:mod:`ddrs.core.gaussian_tail`). Both run alternately,
one thread, each timed ``--repeats`` times, beside the forward pass of the default's 784-256-256-10
MLP on the same batch, so the cost reads against the whole pass. Prints milliseconds per call and
the ratios.

    PYTHONPATH=src .venv/bin/python benchmarks/gaussian_tail_cost.py [--draws 1000] [--repeats 30]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from _report import add_json_option, write_report
from torch import nn

from ddrs.core.noise import get_noise
from ddrs.core.streams import GeneratorStreams


def milliseconds(run, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        run()
        times.append((time.perf_counter() - began) * 1e3)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000, help="noise samples per call (a forward batch)")
    parser.add_argument("--pixels", type=int, default=784, help="values per sample (784: MNIST)")
    parser.add_argument("--repeats", type=int, default=30)
    add_json_option(parser)
    args = parser.parse_args()
    torch.set_num_threads(1)
    gaussian, sample = get_noise("gaussian"), torch.zeros(1, args.pixels)
    raw_generator = torch.Generator().manual_seed(0)
    streams = GeneratorStreams([torch.Generator().manual_seed(0)])
    mlp = nn.Sequential(nn.Linear(args.pixels, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    batch = torch.randn(args.draws, args.pixels)
    runs = {
        "randn": lambda: torch.randn(args.draws, args.pixels, generator=raw_generator),
        "exact_tails": lambda: streams.draw(gaussian, [(0, args.draws)], sample),
        "mlp_forward": lambda: mlp(batch).argmax(dim=1),
    }
    times = {name: [] for name in runs}
    with torch.inference_mode():
        for run in runs.values():  # warm-up
            milliseconds(run, 3)
        for _ in range(args.repeats):  # alternate, so a shared CPU's load falls on all three alike
            for name, run in runs.items():
                times[name] += milliseconds(run, 1)
    median = {name: statistics.median(values) for name, values in times.items()}
    figures = {
        "draws": args.draws,
        "pixels": args.pixels,
        **{f"{name}_ms": round(value, 3) for name, value in median.items()},
        "exact_tails_over_randn": round(median["exact_tails"] / median["randn"], 3),
        "pass_exact_over_randn": round(
            (median["exact_tails"] + median["mlp_forward"]) / (median["randn"] + median["mlp_forward"]), 3
        ),
    }
    print(
        f"{args.draws} draws of {args.pixels} values, one thread, medians of {args.repeats}: randn "
        f"{figures['randn_ms']} ms, with exact tails {figures['exact_tails_ms']} ms "
        f"({figures['exact_tails_over_randn']}x); MLP forward {figures['mlp_forward_ms']} ms, so a pass "
        f"(noise + forward) costs {figures['pass_exact_over_randn']}x"
    )
    write_report("gaussian_tail_cost", figures, args.json, threads=1)


if __name__ == "__main__":
    main()
