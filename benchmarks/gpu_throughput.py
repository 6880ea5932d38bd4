"""Paper-scale throughput on a GPU (issue 18): CERTIFY, Algorithm 1 and training against their ceilings.

Random weights (speed does not depend on training). Every figure is seconds per input (CERTIFY,
Algorithm 1), best of two timed runs after one warm-up, or images per second (training):

  certify     for CIFAR ResNet-110, CIFAR ResNet-18 and ImageNet ResNet-50, n0 = 100 and n draws:
              ddrs ``certify_batch`` (per-input streams, as ``certify_dataset``) in fp32 and bf16,
              eager and ``torch.compile``d (:func:`ddrs.core.device.prepare_classifier`), and compiled
              bf16 with one ``torch.Generator`` per input instead of Philox streams; a Cohen-style
              per-input fp32 loop at batch 400 (``core.Smooth``: repeat, randn, forward, argmax,
              bincount on the host); and the raw ceiling (noise, forward, argmax, bincount on the
              device, bf16 channels_last, compiled), with the ratios the issue's targets name.
              Seconds are per input at n = 100,000: ImageNet is timed at ``--imagenet-n`` draws
              and scaled (the work is linear in n);
  algorithm1  DDRS Algorithm 1 (``ddrs.core.sigma.optimize_sigma``) on CIFAR ResNet-110, n = 1, per input
              at K = ``--k``: timed over ``--k-timed`` steps and scaled (each step is the same
              work). "today" is one ``torch.Generator`` per input at the paper config's batch 64
              with a contiguous model, "now" Philox streams at ``--sigma-batch`` inputs with the
              model laid out as ``ddrs.jobs.sigma_log`` lays it out (channels_last on CUDA);
  training    ResNet-18 Gaussian augmentation epochs of ``--train-steps`` batches (default: one
              CIFAR-10 epoch, 196 batches of 256) of the trainer's own loop and the feed a run
              builds by default (``feed: auto``, the device feed for CIFAR-10; no crops, as the
              plain loop has none; ``benchmarks/training_loader_cost.py`` times the others) in
              fp32 with the default layout (channels_last on CUDA, contiguous elsewhere) and in
              bf16 + channels_last, against the same steps on batches already on the device, the
              two taking turns for five rounds after a warm-up (target: a median ratio of 0.85,
              with the rounds' lowest and highest); and the DataLoader alone, its batches copied
              to the device, as the most a DataLoader-fed trainer could reach;
  macer       peak memory and seconds of one MACER step, batch 256 and m = 64 (target: 40 GB),
              with all draws in one pass, 16 at a time (``draws_per_pass``), and in one pass with
              activations recomputed in backward after 10 cuts (``activation_checkpoints``, every
              piece of ResNet-18 its own run; also under bf16 autocast), and each variant's
              gradient difference from the one-pass step.

On CUDA the sizes are the paper's (n = 100,000, K = 1500, batch 256). Without CUDA, or with
``--quick``, the sizes are tiny and compilation is skipped (it alone takes longer than the run),
so CI exercises every path in well under a minute; those figures say nothing about a GPU.
``--sections`` runs some of the figures (a full CUDA run takes longer than ten minutes).
Run:  python benchmarks/gpu_throughput.py [--quick] [--device cuda] [--sections ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import torch
from _report import add_json_option, write_report
from torch import nn
from torch.utils.data import DataLoader

from ddrs.core.device import autocast, prepare_classifier, select_device
from ddrs.core.seeds import Stream
from ddrs.core.settings import Algorithm1Settings, CertifySettings, resolve_memory_format
from ddrs.core.sigma import optimize_sigma
from ddrs.core.smoothing import certify_batch
from ddrs.core.streams import input_streams
from ddrs.data import TensorImages, get_info
from ddrs.methods import get_method
from ddrs.models import build_model
from ddrs.training import DeviceFeed, SigmaTable, TrainConfig, Trainer, training_loader
from ddrs.training.recompute import with_recomputation
from ddrs.training.trainer import build_optimizer

SIGMA, N0, ALPHA, COHEN_BATCH = 0.25, 100, 0.001, 400
#: (name, arch, dataset) of the base classifiers certified
MODELS = (
    ("cifar_resnet110", "resnet110", "cifar10"),
    ("cifar_resnet18", "resnet18", "cifar10"),
    ("imagenet_resnet50", "resnet50", "imagenet"),
)


#: CERTIFY's seconds per input are quoted at this many estimation draws
QUOTED_N = 100_000
#: batches of 256 in one CIFAR-10 training epoch (50,000 images): a training figure's epoch, so the
#: DataLoader's start of epoch weighs what it weighs in a real run
CIFAR10_EPOCH_STEPS = 196


@dataclass(frozen=True)
class Sizes:
    """How much work each figure times."""

    n: int
    imagenet_n: int  # ImageNet's draws, scaled to n (a 224² forward pass is 50× a CIFAR one)
    n0: int
    inputs: int
    batch: int | None  # ddrs's forward batch; None: chosen from free memory
    k: int
    k_timed: int
    sigma_batch_today: int
    sigma_batch: int
    train_batch: int
    train_steps: int
    macer_batch: int
    macer_m: int
    macer_chunk: int  # draws_per_pass
    macer_cuts: int  # activation_checkpoints
    repeats: int
    training_rounds: int  # the training figures' interleaved rounds
    compile: bool
    max_side: int | None  # quick: images no larger than this (ImageNet's 224 shrinks)

    @staticmethod
    def for_run(
        quick: bool,
        n: int | None,
        k: int | None,
        imagenet_n: int | None,
        sigma_batch: int | None,
        train_steps: int | None = None,
    ) -> Sizes:
        if quick:
            return Sizes(
                n=n or 4, imagenet_n=imagenet_n or 4, n0=2, inputs=1, batch=4,
                k=k or 2, k_timed=1, sigma_batch_today=1, sigma_batch=sigma_batch or 2,
                train_batch=4, train_steps=train_steps or 2, macer_batch=2, macer_m=4, macer_chunk=2,
                macer_cuts=3,
                repeats=1, training_rounds=1, compile=False, max_side=32,
            )  # fmt: skip
        return Sizes(
            n=n or QUOTED_N, imagenet_n=imagenet_n or 10_000, n0=N0, inputs=2, batch=None,
            k=k or 1500, k_timed=50, sigma_batch_today=64, sigma_batch=sigma_batch or 1024,
            train_batch=256, train_steps=train_steps or CIFAR10_EPOCH_STEPS,
            macer_batch=256, macer_m=64, macer_chunk=16, macer_cuts=10,
            repeats=2, training_rounds=5, compile=True, max_side=None,
        )  # fmt: skip


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def best_seconds(run: Callable[[], object], device: torch.device, repeats: int) -> float:
    """The fastest of ``repeats`` timed runs, after one untimed warm-up (compilation, cuDNN choice)
    unless a single run is asked for (quick mode)."""
    return min(interleaved_seconds({"run": run}, device, repeats)["run"])


def interleaved_seconds(runs: dict[str, Callable[[], object]], device: torch.device, rounds: int) -> dict[str, list]:
    """Each run's seconds in each of ``rounds`` rounds, the runs taking turns within a round (after
    one untimed warm-up each, unless a single round is asked for), so that a drift in the machine's
    speed (clocks, other load) falls on all of them alike and their ratio is paired per round."""
    if rounds > 1:
        for run in runs.values():
            run()
        _sync(device)
    seconds: dict[str, list] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            _sync(device)
            seconds[name].append(time.perf_counter() - start)
    return seconds


def ddrs_certify(
    model, x, sizes: Sizes, n: int, precision: str, device: torch.device, streams: str | None = None
) -> None:
    settings = CertifySettings(n0=sizes.n0, n=n, alpha=ALPHA, batch_size=sizes.batch, precision=precision)
    generator = input_streams(0, range(len(x)), Stream.CERTIFY, device, kind=streams)
    certify_batch(model, x, SIGMA, settings, num_classes=_classes(model, x), generator=generator)


def cohen_certify(model, x, sizes: Sizes, n: int) -> None:
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
        int(sample(image, n)[c_a])


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
    figures["cohen_fp32_batch400"] = per_input(lambda: cohen_certify(plain, x, sizes, n))
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


def algorithm1_figures(sizes: Sizes, device: torch.device) -> dict[str, float]:
    """Seconds per input to K = sizes.k, timed over sizes.k_timed steps: today's streams and batch, and now's."""
    torch.manual_seed(0)
    today = build_model("resnet110", "cifar10").to(device).eval()
    now = prepare_classifier(
        copy.deepcopy(today), device, memory_format="auto", compile=False
    )  # as ddrs.jobs.sigma_log
    x = torch.rand(sizes.sigma_batch, 3, 32, 32, generator=torch.Generator().manual_seed(1)).to(device)
    figures: dict[str, float] = {}
    runs = (("today", today, sizes.sigma_batch_today, "generator"), ("now", now, sizes.sigma_batch, None))
    for label, model, batch, streams in runs:
        for precision in ("fp32", "bf16"):
            settings = Algorithm1Settings(sigma0=SIGMA, n=1, steps=(sizes.k_timed,), lr=1e-4, precision=precision)

            def solve(model=model, settings=settings, inputs=x[:batch], streams=streams):
                generator = input_streams(0, range(len(inputs)), Stream.OPTIMIZE, device, kind=streams)
                optimize_sigma(model, inputs, settings, generator=generator)

            seconds = best_seconds(solve, device, sizes.repeats)
            figures[f"{label}_{precision}_s_per_input"] = seconds / batch * sizes.k / sizes.k_timed
        figures[f"{label}_batch"] = batch
    figures["speedup_fp32"] = figures["today_fp32_s_per_input"] / figures["now_fp32_s_per_input"]
    figures["speedup_best"] = figures["today_fp32_s_per_input"] / min(
        figures["now_fp32_s_per_input"], figures["now_bf16_s_per_input"]
    )
    figures["k"], figures["k_timed"] = sizes.k, sizes.k_timed
    return figures


#: (precision, memory format) of the training figures: the defaults (``auto``: channels_last on
#: CUDA, as the configs train there), and bf16, the fast setting; each figure is named by the
#: format the run resolved
TRAINING_VARIANTS = (("fp32", "auto"), ("bf16", "channels_last"))


def training_figures(sizes: Sizes, device: torch.device, num_workers: int) -> dict[str, object]:
    """ResNet-18 Gaussian augmentation epochs of the trainer (``Trainer.train_epoch`` fed as a run
    feeds it, :func:`run_feed`) on in-memory CIFAR-shaped images, against a plain loop of the same
    steps over batches already on the device, with the same model, loss, precision and memory
    format. The two take turns for ``training_rounds`` rounds (:func:`interleaved_seconds`); their
    median img/s, and the median, lowest and highest of the rounds' ratios."""
    count = sizes.train_batch * sizes.train_steps
    images = torch.rand(count, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    labels = torch.randint(10, (count,), generator=torch.Generator().manual_seed(3))
    figures: dict[str, object] = {
        "num_workers": num_workers,
        "steps_per_epoch": sizes.train_steps,
        "rounds": sizes.training_rounds,
    }
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
        epochs = {"ddrs": trainer_epoch(config, images, labels), "plain": plain_epoch(config, images, labels)}
        seconds = interleaved_seconds(epochs, device, sizes.training_rounds)
        figures["feed"] = config.resolved_feed
        ratios = [plain / loaded for loaded, plain in zip(seconds["ddrs"], seconds["plain"], strict=True)]
        figures[f"{precision}_{resolve_memory_format(memory_format, device.type)}"] = {
            "ddrs_img_per_s": count / statistics.median(seconds["ddrs"]),
            "plain_on_device_img_per_s": count / statistics.median(seconds["plain"]),
            "ratio": statistics.median(ratios),
            "ratio_min": min(ratios),
            "ratio_max": max(ratios),
        }
    figures["loader_only_img_per_s"] = count / best_seconds(loader_epoch(config, images, labels), device, sizes.repeats)
    return figures


def fresh_model(config: TrainConfig, device: torch.device) -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = build_model(config.arch, config.dataset).to(device).train()
    model = prepare_classifier(model, device, memory_format=config.memory_format, compile=False)
    return model, build_optimizer(model, config)[0]


def run_feed(config: TrainConfig, images, labels, device: torch.device) -> DataLoader | DeviceFeed:
    """The feed a run of ``config`` builds (``config.feed``) over ``images``, built once as a run
    builds it, without crops (the plain loop has none)."""
    dataset = TensorImages(images, labels)
    if config.resolved_feed == "device":
        return DeviceFeed.for_config(dataset, replace(config, augment=False), device)
    return training_loader(dataset, config, device)


def trainer_epoch(config: TrainConfig, images, labels, batches: Iterable | None = None) -> Callable[[], object]:
    """An epoch of the trainer's loop over the feed a run builds (:func:`run_feed`), or over
    ``batches`` (an iterable of ``(x, y, idx)`` with a ``sampler`` taking ``set_epoch``)."""
    trainer = Trainer(config, "unused.pt", progress=False)
    model, optimizer = fresh_model(config, trainer.device)
    scaler = torch.amp.GradScaler(trainer.device.type, enabled=False)
    table = SigmaTable.constant(len(images), config.initial_scale)
    if batches is None:
        batches = run_feed(config, images, labels, trainer.device)
    return lambda: trainer.train_epoch(model, batches, table, optimizer, scaler, 0)


def loader_epoch(config: TrainConfig, images, labels) -> Callable[[], object]:
    """An epoch of the trainer's DataLoader alone, each batch copied to the device as the trainer
    copies it: the img/s the trainer could reach with an infinitely fast model."""
    device = select_device(config.device)
    loader = training_loader(TensorImages(images, labels), config, device)

    def epoch() -> None:
        loader.sampler.set_epoch(0)
        for x, y, _ in loader:
            x.to(device, non_blocking=True), y.to(device, non_blocking=True)

    return epoch


def plain_epoch(config: TrainConfig, images, labels) -> Callable[[], object]:
    """The same steps over batches already on the device, laid out in the config's memory format."""
    device = select_device(config.device)
    loss_fn = get_method(config.method).load_loss()
    channels_last = resolve_memory_format(config.memory_format, device.type) == "channels_last"
    batches = [
        (x.contiguous(memory_format=torch.channels_last) if channels_last else x, y)
        for x, y in zip(
            images.to(device).split(config.batch_size), labels.to(device).split(config.batch_size), strict=True
        )
    ]
    model, optimizer = fresh_model(config, device)
    noise = torch.Generator(device=device).manual_seed(0)

    def epoch() -> None:
        for x, y in batches:
            scale = torch.full((len(x),), config.initial_scale, device=device)
            with autocast(device, config.precision):
                loss = loss_fn(model, x, y, scale, noise, config.params, 0)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

    return epoch


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
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
        start = time.perf_counter()
        with autocast(device, precision):
            loss = loss_fn(
                with_recomputation(model, "resnet18", cuts), x, y, scale,
                torch.Generator(device=device).manual_seed(0), params,
            )  # fmt: skip
        loss.backward()
        _sync(device)
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


SECTIONS = (*(name for name, _, _ in MODELS), "algorithm1", "training", "macer")


def run(
    quick: bool,
    device: torch.device,
    sizes: Sizes,
    workers: int = 0,
    sections: tuple[str, ...] = SECTIONS,
) -> dict:
    certify = {
        name: certify_figures(arch, dataset, sizes, device) for name, arch, dataset in MODELS if name in sections
    }
    figures = {
        "device": str(device),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "quick": quick,
        "sizes": {
            "n0": sizes.n0,
            "n": sizes.n,
            "imagenet_n_timed": sizes.imagenet_n,
            "inputs": sizes.inputs,
            "batch": sizes.batch or "auto",
            "k": sizes.k,
            "max_image_side": sizes.max_side,
        },  # fmt: skip
        "certify_s_per_input": certify,
    }
    if "algorithm1" in sections:
        figures["algorithm1_resnet110"] = algorithm1_figures(sizes, device)
    if "training" in sections:
        figures["training_resnet18"] = training_figures(sizes, device, workers)
    if "macer" in sections:
        figures["macer_memory_resnet18"] = macer_memory(sizes, device)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, …")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, no compilation (automatic without CUDA)")
    parser.add_argument("--n", type=int, help="CERTIFY's estimation draws (default: 100,000; quick: 4)")
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
    for section in ("algorithm1_resnet110", "training_resnet18", "macer_memory_resnet18"):
        if section in figures:
            print(section, figures[section])
    write_report("gpu_throughput", figures, args.json, threads=torch.get_num_threads())


if __name__ == "__main__":
    main()
