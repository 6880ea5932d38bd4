"""training: epochs of the trainer against a plain loop over batches already on the device (``_train_loops.py``).

ResNet-18 Gaussian augmentation epochs of ``--train-steps`` batches (default: one CIFAR-10 epoch,
196 batches of 256) of the trainer's own loop and the feed a run builds by default (``feed:
auto``, the device feed for CIFAR-10; no crops, as the plain loop has none;
``benchmarks/training_loader_cost.py`` times the others) in fp32 with the default layout
(channels_last on CUDA, contiguous elsewhere) and in bf16 + channels_last, against the same steps
on batches already on the device, the two taking turns for five rounds after a warm-up (target: a
median ratio of 0.85, with the rounds' lowest and highest); and the DataLoader alone, its batches
copied to the device, as the most a DataLoader-fed trainer could reach.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import torch
from _measure import best_seconds, interleaved_seconds, paired_ratios
from _train_loops import cifar_like, plain_epoch, resnet18_config, trainer_epoch

from ddrs.core.device import select_device
from ddrs.core.settings import resolve_memory_format
from ddrs.data import TensorImages
from ddrs.training import TrainConfig, training_loader
from gpu.sizes import Sizes

#: (precision, memory format) of the training figures: the defaults (``auto``: channels_last on
#: CUDA, as the configs train there), and bf16, the fast setting; each figure is named by the
#: format the run resolved
TRAINING_VARIANTS = (("fp32", "auto"), ("bf16", "channels_last"))


def training_figures(sizes: Sizes, device: torch.device, num_workers: int) -> dict[str, object]:
    """ResNet-18 Gaussian augmentation epochs of the trainer (``Trainer.train_epoch`` fed as a run
    feeds it) on in-memory CIFAR-shaped images, against a plain loop of the same steps over batches
    already on the device, with the same model, loss, precision and memory format. The two take
    turns for ``training_rounds`` rounds (:func:`interleaved_seconds`); their median img/s, and the
    median, lowest and highest of the rounds' ratios."""
    count = sizes.train_batch * sizes.train_steps
    images, labels = cifar_like(count)
    figures: dict[str, object] = {
        "num_workers": num_workers,
        "steps_per_epoch": sizes.train_steps,
        "rounds": sizes.training_rounds,
    }
    for precision, memory_format in TRAINING_VARIANTS:
        config = resnet18_config(device, sizes.train_batch, precision, memory_format, num_workers)
        epochs = {"ddrs": trainer_epoch(config, images, labels), "plain": plain_epoch(config, images, labels)}
        seconds = interleaved_seconds(epochs, device, sizes.training_rounds)
        figures["feed"] = config.resolved_feed
        figures[f"{precision}_{resolve_memory_format(memory_format, device.type)}"] = {
            "ddrs_img_per_s": count / statistics.median(seconds["ddrs"]),
            "plain_on_device_img_per_s": count / statistics.median(seconds["plain"]),
            **paired_ratios(seconds["ddrs"], seconds["plain"]),
        }
    figures["loader_only_img_per_s"] = count / best_seconds(loader_epoch(config, images, labels), device, sizes.repeats)
    return figures


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
