"""Throughput of CERTIFY: our batched ``certify_batch`` against its ceiling and Cohen's loop.

For each base classifier (digits MLP, CIFAR-10 ResNet-18 at 32×32, random weights: speed does
not depend on training) this prints noisy samples per second of

  (a) raw     the base classifier's batched forward + argmax on pre-drawn noisy inputs (ceiling);
  (b) ours    ``ddrs.core.smoothing.certify_batch`` with one generator per input (as certify_dataset);
  (c) cohen   Cohen et al.'s per-input loop (locuslab/smoothing ``core.Smooth.certify``, in
              ``benchmarks/_cohen.py``: repeat, randn, forward, argmax, ``.cpu()`` and the
              Python counting loop ``_count_arr``);
  (c') cohen+ the same loop counting with ``np.bincount`` instead of the Python loop,

and the ratios (b)/(a), (b)/(c), (b)/(c'). Every method draws B·(n0 + n) samples in forward
batches of ``--batch``; each is timed ``--repeats`` times, interleaved, and the best is kept
(the CPU is shared). Run:  .venv/bin/python benchmarks/certify_throughput.py [--threads 1] [--json PATH]
"""

from __future__ import annotations

import argparse
import time

import torch
from _cohen import cohen_certify
from _report import add_json_option, write_report
from tabulate import tabulate
from torch import nn

from ddrs.core.settings import CertifySettings, DeviceSettings
from ddrs.core.smoothing import certify_batch
from ddrs.models import build_model

SIGMA, N0, ALPHA = 0.25, 100, 0.001
#: (arch, dataset, inputs B, n, forward batch): n kept modest so the script takes ~1–2 minutes
CASES = (("mlp", "digits", 8, 20_000, 2_000), ("resnet18", "cifar10", 2, 300, 100))


def raw_forward(model: nn.Module, noisy: list[torch.Tensor]) -> None:
    with torch.inference_mode():
        for batch in noisy:
            model(batch).argmax(1)


def ours(model: nn.Module, x: torch.Tensor, n: int, batch: int, num_classes: int) -> None:
    generators = [torch.Generator().manual_seed(i) for i in range(len(x))]
    settings = CertifySettings(noise="gaussian", n0=N0, n=n, alpha=ALPHA)
    on_cpu = DeviceSettings(batch_size=batch, memory_format="contiguous")
    certify_batch(model, x, SIGMA, settings, device_settings=on_cpu, num_classes=num_classes, generator=generators)


def measure(arch: str, dataset: str, inputs: int, n: int, batch: int, repeats: int) -> dict[str, float]:
    torch.manual_seed(0)
    model = build_model(arch, dataset).eval()
    num_classes = model(torch.zeros(1, *_shape(model, dataset))).shape[1]
    x = torch.rand(inputs, *_shape(model, dataset), generator=torch.Generator().manual_seed(1))
    total = inputs * (N0 + n)
    draws = x.repeat_interleave(N0 + n, dim=0)
    noisy = list((draws + SIGMA * torch.randn_like(draws)).split(batch))
    methods = {
        "raw": lambda: raw_forward(model, noisy),
        "ours": lambda: ours(model, x, n, batch, num_classes),
        "cohen": lambda: cohen_certify(model, x, SIGMA, N0, n, ALPHA, batch, num_classes, python_count=True),
        "cohen+": lambda: cohen_certify(model, x, SIGMA, N0, n, ALPHA, batch, num_classes, python_count=False),
    }
    best = dict.fromkeys(methods, 0.0)
    for _ in range(repeats):
        for name, method in methods.items():
            start = time.perf_counter()
            method()
            best[name] = max(best[name], total / (time.perf_counter() - start))
    return best


def _shape(model: nn.Module, dataset: str) -> tuple[int, ...]:
    from ddrs.data import get_info

    return get_info(dataset).input_shape


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (same for every method)")
    parser.add_argument("--repeats", type=int, default=2)
    add_json_option(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    figures = {}
    for arch, dataset, inputs, n, batch in CASES:
        rate = measure(arch, dataset, inputs, n, batch, args.repeats)
        figures[f"{arch}_{dataset}"] = {"inputs": inputs, "n0": N0, "n": n, "batch": batch, "samples_per_second": rate}
        rows.append(
            [
                f"{arch} ({dataset})",
                f"{inputs}×({N0}+{n})",
                batch,
                *(f"{rate[k]:,.0f}" for k in rate),
                f"{rate['ours'] / rate['raw']:.2f}",
                f"{rate['ours'] / rate['cohen']:.2f}",
                f"{rate['ours'] / rate['cohen+']:.2f}",
            ]
        )
        print(f"done: {arch}", flush=True)
    headers = [
        "model",
        "samples",
        "batch",
        "(a) raw/s",
        "(b) ours/s",
        "(c) cohen/s",
        "(c') cohen+/s",
        "(b)/(a)",
        "(b)/(c)",
        "(b)/(c')",
    ]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), CPU, σ={SIGMA}, n0={N0}, α={ALPHA}")
    print(tabulate(rows, headers=headers))
    write_report("certify_throughput", figures, args.json, threads=torch.get_num_threads())


if __name__ == "__main__":
    main()
