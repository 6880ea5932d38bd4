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
batches of ``--batch``. Each round times every method once, in turn; the table shows each method's
best round and the ratios as the median over rounds of each round's own ratio, with their range: a
shared CPU's speed drifts between rounds (best-of-round ratios moved 0.87–1.63× for the same code),
within one round much less. Run:
.venv/bin/python benchmarks/certify_throughput.py [--threads 1] [--repeats 9] [--cases mlp] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from _cohen import cohen_certify
from _report import add_json_option, write_report
from tabulate import tabulate
from torch import nn

from ddrs.core.device import BaseClassifier
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
    on_cpu = BaseClassifier(
        model, num_classes, torch.device("cpu"), DeviceSettings(batch_size=batch, memory_format="contiguous")
    )
    certify_batch(on_cpu, x, SIGMA, settings, generator=generators)


def measure(arch: str, dataset: str, inputs: int, n: int, batch: int, repeats: int) -> dict[str, list[float]]:
    """Samples per second of every method, one entry per round."""
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
    rates = {name: [] for name in methods}
    for _ in range(repeats):
        for name, method in methods.items():
            start = time.perf_counter()
            method()
            rates[name].append(total / (time.perf_counter() - start))
    return rates


def paired_ratio(rates: dict[str, list[float]], over: str) -> tuple[float, float, float]:
    """Median, least and largest over rounds of ours over ``over`` within each round."""
    ratios = [ours / other for ours, other in zip(rates["ours"], rates[over], strict=True)]
    return statistics.median(ratios), min(ratios), max(ratios)


def _shape(model: nn.Module, dataset: str) -> tuple[int, ...]:
    from ddrs.data import get_info

    return get_info(dataset).input_shape


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (same for every method)")
    parser.add_argument("--repeats", type=int, default=5, help="rounds")
    architectures = [arch for arch, *_ in CASES]
    parser.add_argument("--cases", nargs="+", choices=architectures, default=architectures)
    add_json_option(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    figures = {}
    for arch, dataset, inputs, n, batch in (case for case in CASES if case[0] in args.cases):
        rates = measure(arch, dataset, inputs, n, batch, args.repeats)
        ratios = {over: paired_ratio(rates, over) for over in ("raw", "cohen", "cohen+")}
        ours_over = {over: dict(zip(("median", "least", "largest"), r, strict=True)) for over, r in ratios.items()}
        figures[f"{arch}_{dataset}"] = {
            "inputs": inputs, "n0": N0, "n": n, "batch": batch, "samples_per_second": rates, "ours_over": ours_over,
        }  # fmt: skip
        rows.append(
            [
                f"{arch} ({dataset})",
                f"{inputs}×({N0}+{n})",
                batch,
                *(f"{max(rate):,.0f}" for rate in rates.values()),
                *(f"{median:.2f} ({least:.2f}–{largest:.2f})" for median, least, largest in ratios.values()),
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
        "(b)/(a), median of rounds (range)",
        "(b)/(c)",
        "(b)/(c')",
    ]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), CPU, σ={SIGMA}, n0={N0}, α={ALPHA}")
    print(tabulate(rows, headers=headers))
    write_report("certify_throughput", figures, args.json, threads=torch.get_num_threads())


if __name__ == "__main__":
    main()
