"""Paper-scale throughput on a GPU (issue 18): CERTIFY, Algorithm 1 and training against their ceilings.

Random weights (speed does not depend on training). Every figure is seconds per input (CERTIFY,
Algorithm 1) or images per second (training), best of ``--repeats`` timed runs after one warm-up:

  certify     for CIFAR ResNet-110, CIFAR ResNet-18 and ImageNet ResNet-50, n0 = 100 and ``--n``:
              ddrs ``certify_batch`` (per-input generators, as ``certify_dataset``) in fp32 and bf16,
              eager and ``torch.compile``d (:func:`ddrs.device.prepare_classifier`); a Cohen-style
              per-input fp32 loop at batch 400 (``core.Smooth``: repeat, randn, forward, argmax,
              bincount on the host); and the raw ceiling (noise, forward, argmax, bincount on the
              device, bf16 channels_last, compiled), with the ratios the issue's targets name;
  algorithm1  DDRS Algorithm 1 (``ddrs.sigma.optimize_sigma``) on CIFAR ResNet-110 to K = ``--k``;
  training    ResNet-18 Gaussian augmentation epochs of the trainer's own loop and DataLoader
              (persistent workers, pinned memory, non-blocking copies) in fp32 and in bf16 +
              channels_last, against the same steps on batches already on the device (target: 0.85);
  macer       peak memory of one MACER step, batch 256 and m = 64 (target: 40 GB), with all draws
              in one pass and 16 at a time (``draws_per_pass``), and the gradients' difference.

On CUDA the sizes are the paper's (n = 100,000, K = 1500, batch 256). Without CUDA, or with
``--quick``, the sizes are tiny and compilation is skipped (it alone takes longer than the run),
so CI exercises every path in well under a minute; those figures say nothing about a GPU.
Run:  python benchmarks/gpu_throughput.py [--quick] [--device cuda] [--json PATH]
"""

from __future__ import annotations

import argparse
import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from _report import add_json_option, write_report
from torch import nn

from ddrs.data import TensorImages, get_info
from ddrs.device import autocast, prepare_classifier, select_device
from ddrs.methods import get_method
from ddrs.models import build_model
from ddrs.seeds import Stream, input_generators
from ddrs.settings import Algorithm1Settings, CertifySettings
from ddrs.sigma import optimize_sigma
from ddrs.smoothing import certify_batch
from ddrs.training import SigmaTable, TrainConfig, Trainer, training_loader
from ddrs.training.trainer import build_optimizer

SIGMA, N0, ALPHA, COHEN_BATCH = 0.25, 100, 0.001, 400
#: (name, arch, dataset) of the base classifiers certified
MODELS = (
    ("cifar_resnet110", "resnet110", "cifar10"),
    ("cifar_resnet18", "resnet18", "cifar10"),
    ("imagenet_resnet50", "resnet50", "imagenet"),
)


@dataclass(frozen=True)
class Sizes:
    """How much work each figure times."""

    n: int
    n0: int
    inputs: int
    batch: int | None  # ddrs's forward batch; None: chosen from free memory
    k: int
    sigma_batch: int
    train_batch: int
    train_steps: int
    macer_batch: int
    macer_m: int
    macer_chunk: int  # draws_per_pass
    repeats: int
    compile: bool
    max_side: int | None  # quick: images no larger than this (ImageNet's 224 shrinks)

    @staticmethod
    def for_run(quick: bool, n: int | None, k: int | None) -> Sizes:
        if quick:
            return Sizes(n or 4, 2, 1, 4, k or 1, 1, 4, 2, 2, 4, 2, 1, False, 32)
        return Sizes(n or 100_000, N0, 2, None, k or 1500, 64, 256, 20, 256, 64, 16, 2, True, None)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def best_seconds(run: Callable[[], object], device: torch.device, repeats: int) -> float:
    """The fastest of ``repeats`` timed runs, after one untimed warm-up (compilation, cuDNN choice)
    unless a single run is asked for (quick mode)."""
    if repeats > 1:
        run()
        _sync(device)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        _sync(device)
        best = min(best, time.perf_counter() - start)
    return best


def ddrs_certify(model, x, sizes: Sizes, precision: str, device: torch.device) -> None:
    settings = CertifySettings(n0=sizes.n0, n=sizes.n, alpha=ALPHA, batch_size=sizes.batch, precision=precision)
    generators = input_generators(0, range(len(x)), Stream.CERTIFY, device)
    certify_batch(model, x, SIGMA, settings, num_classes=_classes(model, x), generator=generators)


def cohen_certify(model, x, sizes: Sizes) -> None:
    """Cohen et al.'s ``core.Smooth.certify`` one input at a time: fp32, batch 400, counts on the host."""

    def sample(image: torch.Tensor, num: int) -> torch.Tensor:
        counts = torch.zeros(_classes(model, x), dtype=torch.long)
        with torch.no_grad():
            while num > 0:
                size = min(COHEN_BATCH, num)
                num -= size
                batch = image.repeat((size, 1, 1, 1))
                predictions = model(batch + torch.randn_like(batch) * SIGMA).argmax(1)
                counts += torch.bincount(predictions.cpu(), minlength=len(counts))
        return counts

    for image in x:
        c_a = int(sample(image, sizes.n0).argmax())
        int(sample(image, sizes.n)[c_a])


def ceiling_certify(model, x, sizes: Sizes, batch: int, precision: str) -> None:
    """The least CERTIFY can do: noise, forward, argmax and counting on the device, one sync at the end."""
    classes = _classes(model, x)
    counts = torch.zeros(len(x), classes, dtype=torch.long, device=x.device)
    with torch.inference_mode(), autocast(x.device, precision):
        for i, image in enumerate(x):
            for num in (sizes.n0, sizes.n):
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
    x = torch.rand(sizes.inputs, *shape, generator=torch.Generator().manual_seed(1)).to(device)
    built = build_model(arch, dataset).eval()

    def fresh(memory_format: str = "auto", compile: bool = False) -> nn.Module:
        model = copy.deepcopy(built).to(device)
        return prepare_classifier(model, device, memory_format=memory_format, compile=compile)

    per_input = sizes.inputs
    figures: dict[str, float | None] = {}
    for precision in ("fp32", "bf16"):
        eager = fresh()
        figures[f"ddrs_{precision}_eager"] = (
            best_seconds(lambda m=eager, p=precision: ddrs_certify(m, x, sizes, p, device), device, sizes.repeats)
            / per_input
        )
        if sizes.compile:
            compiled = fresh(compile=True)
            figures[f"ddrs_{precision}_compiled"] = (
                best_seconds(
                    lambda m=compiled, p=precision: ddrs_certify(m, x, sizes, p, device), device, sizes.repeats
                )
                / per_input
            )
        else:
            figures[f"ddrs_{precision}_compiled"] = None
    plain = copy.deepcopy(built).to(device)
    figures["cohen_fp32_batch400"] = (
        best_seconds(lambda: cohen_certify(plain, x, sizes), device, sizes.repeats) / per_input
    )
    ceiling_model = fresh("channels_last", compile=sizes.compile)
    ceiling_batch = sizes.batch or 4096
    figures["ceiling_bf16_channels_last" + ("_compiled" if sizes.compile else "_eager")] = (
        best_seconds(lambda: ceiling_certify(ceiling_model, x, sizes, ceiling_batch, "bf16"), device, sizes.repeats)
        / per_input
    )
    ours = [value for key, value in figures.items() if key.startswith("ddrs_") and value is not None]
    ceiling = next(value for key, value in figures.items() if key.startswith("ceiling_"))
    figures["best_ddrs_over_ceiling"] = min(ours) / ceiling
    figures["cohen_over_best_ddrs"] = figures["cohen_fp32_batch400"] / min(ours)
    return figures


def algorithm1_figures(sizes: Sizes, device: torch.device) -> dict[str, float]:
    torch.manual_seed(0)
    model = build_model("resnet110", "cifar10").to(device).eval()
    x = torch.rand(sizes.sigma_batch, 3, 32, 32, generator=torch.Generator().manual_seed(1)).to(device)
    figures = {}
    for precision in ("fp32", "bf16"):
        settings = Algorithm1Settings(sigma0=SIGMA, n=1, steps=(sizes.k,), lr=1e-4, precision=precision)

        def run(settings=settings):
            generators = input_generators(0, range(len(x)), Stream.OPTIMIZE, device)
            optimize_sigma(model, x, settings, generator=generators)

        figures[f"{precision}_s_per_input"] = best_seconds(run, device, sizes.repeats) / len(x)
    figures["k"] = sizes.k
    figures["batch"] = sizes.sigma_batch
    return figures


#: (precision, memory format) of the training figures: the defaults, and the fast settings
TRAINING_VARIANTS = (("fp32", "contiguous"), ("bf16", "channels_last"))


def training_figures(sizes: Sizes, device: torch.device, num_workers: int) -> dict[str, object]:
    """ResNet-18 Gaussian augmentation epochs of the trainer (``Trainer.train_epoch`` fed by
    ``training_loader``: workers that persist, pinned memory, non-blocking copies) on in-memory
    CIFAR-shaped images, against a plain loop of the same steps over batches already on the
    device, with the same model, loss, precision and memory format; img/s and their ratio."""
    count = sizes.train_batch * sizes.train_steps
    images = torch.rand(count, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    labels = torch.randint(10, (count,), generator=torch.Generator().manual_seed(3))
    figures: dict[str, object] = {"num_workers": num_workers}
    for precision, memory_format in TRAINING_VARIANTS:
        config = TrainConfig(
            dataset="cifar10",
            arch="resnet18",
            method="cohen",
            sigma=SIGMA,
            batch_size=sizes.train_batch,
            lr=0.01,
            device=str(device),
            precision=precision,
            memory_format=memory_format,
            num_workers=num_workers,
        )
        loaded = count / _trainer_epoch_seconds(config, images, labels, sizes.repeats)
        plain = count / _plain_epoch_seconds(config, images, labels, sizes.repeats)
        figures[f"{precision}_{memory_format}"] = {
            "ddrs_img_per_s": loaded,
            "plain_on_device_img_per_s": plain,
            "ratio": loaded / plain,
        }
    return figures


def _fresh_model(config: TrainConfig, device: torch.device) -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = build_model(config.arch, config.dataset).to(device).train()
    model = prepare_classifier(model, device, memory_format=config.memory_format, compile=False)
    return model, build_optimizer(model, config)[0]


def _trainer_epoch_seconds(config: TrainConfig, images, labels, repeats: int) -> float:
    """The trainer's epoch loop over the trainer's DataLoader, built once (as a run builds it)."""
    trainer = Trainer(config, "unused.pt", progress=False)
    model, optimizer = _fresh_model(config, trainer.device)
    scaler = torch.amp.GradScaler(trainer.device.type, enabled=False)
    table = SigmaTable.constant(len(images), config.initial_scale)
    loader = training_loader(TensorImages(images, labels), config, trainer.device)
    return best_seconds(
        lambda: trainer.train_epoch(model, loader, table, optimizer, scaler, 0), trainer.device, repeats
    )


def _plain_epoch_seconds(config: TrainConfig, images, labels, repeats: int) -> float:
    """The same steps over batches already on the device, laid out in the config's memory format."""
    device = select_device(config.device)
    loss_fn = get_method(config.method).load_loss()
    channels_last = config.memory_format == "channels_last"
    batches = [
        (x.contiguous(memory_format=torch.channels_last) if channels_last else x, y)
        for x, y in zip(
            images.to(device).split(config.batch_size), labels.to(device).split(config.batch_size), strict=True
        )
    ]
    model, optimizer = _fresh_model(config, device)
    noise = torch.Generator(device=device).manual_seed(0)

    def epoch() -> None:
        for x, y in batches:
            scale = torch.full((len(x),), config.initial_scale, device=device)
            with autocast(device, config.precision):
                loss = loss_fn(model, x, y, scale, noise, config.params, 0)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

    return best_seconds(epoch, device, repeats)


def macer_memory(sizes: Sizes, device: torch.device) -> dict[str, object]:
    """Peak CUDA memory (GiB) of one MACER step (the registry's loss, ResNet-18 CIFAR) with all m
    draws in one pass and ``draws_per_pass`` at a time, and the relative difference of the two
    gradients. The gradients are compared with batch-norm on its running statistics (eval mode):
    in training mode every chunk is normalised by its own statistics (``chunked_copies_logits``),
    which is not float error. Memory is null off CUDA."""
    method = get_method("macer")
    loss_fn = method.load_loss()
    torch.manual_seed(0)
    model = build_model("resnet18", "cifar10").to(device)
    x = torch.rand(sizes.macer_batch, 3, 32, 32, generator=torch.Generator().manual_seed(5)).to(device)
    y = torch.randint(10, (sizes.macer_batch,), generator=torch.Generator().manual_seed(6)).to(device)
    scale = torch.full((len(x),), SIGMA, device=device)

    def step(draws_per_pass: int, train: bool) -> tuple[float | None, torch.Tensor]:
        params = method.make_params({"m": sizes.macer_m, "draws_per_pass": draws_per_pass}, source="benchmark")
        model.train(train)
        model.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
        loss_fn(model, x, y, scale, torch.Generator(device=device).manual_seed(0), params).backward()
        peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
        return peak, torch.cat([parameter.grad.flatten() for parameter in model.parameters()])

    whole_gib, _ = step(0, train=True)
    chunked_gib, _ = step(sizes.macer_chunk, train=True)
    _, whole_grad = step(0, train=False)
    _, chunked_grad = step(sizes.macer_chunk, train=False)
    return {
        "batch": sizes.macer_batch,
        "m": sizes.macer_m,
        "draws_per_pass": sizes.macer_chunk,
        "whole_peak_gib": whole_gib,
        "chunked_peak_gib": chunked_gib,
        "gradient_relative_difference": float((chunked_grad - whole_grad).norm() / whole_grad.norm()),
    }


def run(quick: bool, device: torch.device, n: int | None = None, k: int | None = None, workers: int = 0) -> dict:
    sizes = Sizes.for_run(quick, n, k)
    certify = {name: certify_figures(arch, dataset, sizes, device) for name, arch, dataset in MODELS}
    return {
        "device": str(device),
        "quick": quick,
        "sizes": {
            "n0": sizes.n0,
            "n": sizes.n,
            "inputs": sizes.inputs,
            "batch": sizes.batch or "auto",
            "k": sizes.k,
            "max_image_side": sizes.max_side,
        },  # fmt: skip
        "certify_s_per_input": certify,
        "algorithm1_resnet110": algorithm1_figures(sizes, device),
        "training_resnet18": training_figures(sizes, device, workers),
        "macer_memory_resnet18": macer_memory(sizes, device),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, …")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, no compilation (automatic without CUDA)")
    parser.add_argument("--n", type=int, help="CERTIFY's estimation draws (default: 100,000; quick: 4)")
    parser.add_argument("--k", type=int, help="Algorithm 1's steps (default: 1500; quick: 1)")
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
    figures = run(quick, device, args.n, args.k, workers)
    for name, values in figures["certify_s_per_input"].items():
        print(name, {key: (round(value, 4) if isinstance(value, float) else value) for key, value in values.items()})
    print("algorithm1", figures["algorithm1_resnet110"])
    print("training", figures["training_resnet18"])
    print("macer memory", figures["macer_memory_resnet18"])
    write_report("gpu_throughput", figures, args.json, threads=torch.get_num_threads())


if __name__ == "__main__":
    main()
