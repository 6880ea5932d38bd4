"""The training loops the GPU training figures compare (``gpu_throughput.py``, ``training_loader_cost.py``).

ResNet-18 Gaussian augmentation (Cohen et al. 2019) on in-memory CIFAR-shaped images: an epoch of
the trainer's own loop (``Trainer.train_epoch``) over the feed a run builds, or over any other
batches; and a plain loop of the same steps (same model, loss, precision and memory format) over
batches already on the device, the most a feed could let the trainer reach.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

import torch
from _measure import SIGMA
from torch import nn
from torch.utils.data import DataLoader

from ddrs.core.device import autocast, prepare_classifier, select_device
from ddrs.core.settings import resolve_memory_format
from ddrs.data import TensorImages
from ddrs.methods import get_method
from ddrs.models import build_model
from ddrs.training import DeviceFeed, SigmaTable, TrainConfig, Trainer, training_loader
from ddrs.training.trainer import build_optimizer

#: batches of 256 in one CIFAR-10 training epoch (50,000 images): a training figure's epoch, so the
#: DataLoader's start of epoch weighs what it weighs in a real run
CIFAR10_EPOCH_STEPS = 196


def resnet18_config(
    device: torch.device, batch_size: int, precision: str, memory_format: str, num_workers: int
) -> TrainConfig:
    """The training run every figure times: ResNet-18 on CIFAR-10, Gaussian augmentation at σ = 0.25."""
    return TrainConfig(
        dataset="cifar10",
        arch="resnet18",
        method="cohen",
        sigma=SIGMA,
        batch_size=batch_size,
        lr=0.01,
        device=str(device),
        precision=precision,
        memory_format=memory_format,
        num_workers=num_workers,
    )


def cifar_like(count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` random 3×32×32 images and labels of 10 classes, the same on every call."""
    images = torch.rand(count, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    labels = torch.randint(10, (count,), generator=torch.Generator().manual_seed(3))
    return images, labels


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
    table = SigmaTable.constant(len(images), config.initial_sigma)
    if batches is None:
        batches = run_feed(config, images, labels, trainer.device)
    return lambda: trainer.train_epoch(model, batches, table, optimizer, scaler, 0)


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
            sigma = torch.full((len(x),), config.initial_sigma, device=device)
            with autocast(device, config.precision):
                loss = loss_fn(model, x, y, sigma, noise, config.params, 0)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

    return epoch
