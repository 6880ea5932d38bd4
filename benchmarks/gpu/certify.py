"""certify: CERTIFY's seconds per input against Cohen's loop and the raw ceiling (Cohen et al. 2019, Section 3.2).

For CIFAR ResNet-110, CIFAR ResNet-18 and ImageNet ResNet-50, n0 = 100 and n draws: ddrs
``certify_batch`` (per-input streams, as ``certify_dataset``) in fp32 and bf16, eager and
``torch.compile``d (:func:`ddrs.core.device.prepare_classifier`), and compiled bf16 with one
``torch.Generator`` per input instead of Philox streams; Cohen et al.'s per-input fp32 loop at
batch 400 (``benchmarks/_cohen.py``: repeat, randn, forward, argmax, counts on the host); and the
raw ceiling (noise, forward, argmax, bincount on the device, bf16 channels_last, compiled), with
the ratios the issue's targets name. Seconds are per input at n = 100,000: ImageNet is timed at
``--imagenet-n`` draws and scaled (the work is linear in n). Best of two timed runs after a warm-up.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from _cohen import cohen_certify
from _measure import SIGMA, best_seconds
from torch import nn

from ddrs.core.device import BaseClassifier, autocast, prepare_classifier
from ddrs.core.seeds import Stream
from ddrs.core.settings import CertifySettings, DeviceSettings, resolve_memory_format
from ddrs.core.smoothing import certify_batch
from ddrs.core.streams import input_streams
from ddrs.data import get_info
from ddrs.models import build_model
from gpu.sizes import ALPHA, COHEN_BATCH, Sizes

#: (name, arch, dataset) of the base classifiers certified
MODELS = (
    ("cifar_resnet110", "resnet110", "cifar10"),
    ("cifar_resnet18", "resnet18", "cifar10"),
    ("imagenet_resnet50", "resnet50", "imagenet"),
)


def ddrs_certify(
    model, x, sizes: Sizes, n: int, precision: str, device: torch.device, streams: str | None = None
) -> None:
    settings = CertifySettings(n0=sizes.n0, n=n, alpha=ALPHA, precision=precision)
    on_device = DeviceSettings(batch_size=sizes.batch, memory_format=resolve_memory_format("auto", device.type))
    generator = input_streams(0, range(len(x)), Stream.CERTIFY, device, kind=streams)
    certify_batch(BaseClassifier(model, _classes(model, x), device, on_device), x, SIGMA, settings, generator=generator)


def ceiling_certify(model, x, sizes: Sizes, n: int, batch: int, precision: str) -> None:
    """The least CERTIFY can do: noise, forward, argmax and counting on the device, one sync at the end."""
    classes = _classes(model, x)
    counts = torch.zeros(len(x), classes, dtype=torch.long, device=x.device)
    with torch.inference_mode(), autocast(x.device, precision):
        for i, image in enumerate(x):
            for num in (sizes.n0, n):
                while num > 0:
                    size = min(batch, num)
                    num -= size
                    noisy = image + SIGMA * torch.randn((size, *image.shape), device=x.device)
                    if noisy.ndim == 4:
                        noisy = noisy.contiguous(memory_format=torch.channels_last)
                    counts[i] += torch.bincount(model(noisy).argmax(1), minlength=classes)
    counts.cpu()


_CLASSES: dict[int, int] = {}


def _classes(model: nn.Module, x: torch.Tensor) -> int:
    key = id(model)
    if key not in _CLASSES:
        with torch.inference_mode():
            _CLASSES[key] = model(x[:1]).shape[1]
    return _CLASSES[key]


def certify_figures(arch: str, dataset: str, sizes: Sizes, device: torch.device) -> dict[str, float | None]:
    torch.manual_seed(0)
    shape = get_info(dataset).input_shape
    if sizes.max_side is not None:  # quick: a smaller image (every model here pools adaptively)
        shape = (shape[0], *(min(side, sizes.max_side) for side in shape[1:]))
    n = sizes.imagenet_n if dataset == "imagenet" else sizes.n
    x = torch.rand(sizes.inputs, *shape, generator=torch.Generator().manual_seed(1)).to(device)
    built = build_model(arch, dataset).eval()

    def fresh(memory_format: str = "auto", compile: bool = False) -> nn.Module:
        if compile:  # a new model of a class compiled before would count towards dynamo's recompile limit
            torch._dynamo.reset()
        model = copy.deepcopy(built).to(device)
        return prepare_classifier(model, device, memory_format=memory_format, compile=compile)

    def per_input(run: Callable[[], object]) -> float:
        """Seconds per input at n = sizes.n (the work beyond n0 is linear in n)."""
        return best_seconds(run, device, sizes.repeats) / sizes.inputs * (sizes.n / n)

    figures: dict[str, float | None] = {}
    for precision in ("fp32", "bf16"):
        for compiled in (False, True):
            name = f"ddrs_{precision}_{'compiled' if compiled else 'eager'}"
            if compiled and not sizes.compile:
                figures[name] = None
                continue
            model = fresh(compile=compiled)
            figures[name] = per_input(lambda m=model, p=precision: ddrs_certify(m, x, sizes, n, p, device))
            if compiled and precision == "bf16":
                figures["ddrs_bf16_compiled_generator_streams"] = per_input(
                    lambda m=model: ddrs_certify(m, x, sizes, n, "bf16", device, streams="generator")
                )
    plain = copy.deepcopy(built).to(device)
    classes = _classes(plain, x)
    figures["cohen_fp32_batch400"] = per_input(
        lambda: cohen_certify(plain, x, SIGMA, sizes.n0, n, ALPHA, COHEN_BATCH, classes)
    )
    ceiling_model = fresh("channels_last", compile=sizes.compile)
    ceiling_batch = sizes.batch or 4096
    figures["ceiling_bf16_channels_last" + ("_compiled" if sizes.compile else "_eager")] = per_input(
        lambda: ceiling_certify(ceiling_model, x, sizes, n, ceiling_batch, "bf16")
    )
    ours = [value for key, value in figures.items() if key.startswith("ddrs_") and value is not None]
    ceiling = next(value for key, value in figures.items() if key.startswith("ceiling_"))
    figures["best_ddrs_over_ceiling"] = min(ours) / ceiling
    figures["cohen_over_best_ddrs"] = figures["cohen_fp32_batch400"] / min(ours)
    figures["n_timed"] = n
    return figures
