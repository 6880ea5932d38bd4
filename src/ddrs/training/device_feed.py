"""The ``device`` feed (``TrainConfig.feed``): the whole training split held on the training device.

Each epoch the split is augmented there in one batched pass, in the epoch's order, so a training
step's batch is a slice of one tensor: no DataLoader, no host-to-device copy and no per-image work
while the GPU trains (the DataLoader's host work was the larger part of the trainer's gap to a
plain loop over batches already on the GPU: ``benchmarks/measured/README.md``, "Throughput on one GPU").

Input ``idx``'s augmentation in epoch ``e`` is a pure function of ``(seed, e, idx)``: its uniforms
are Philox4x32-10 (:mod:`ddrs.core.philox`) under the key derived from ``(seed, AUGMENT, e)`` at counter
``idx``, the same bits on every device. An epoch plan's later visit ``v`` of an input draws at
counter ``idx + v·N`` (N inputs; :func:`~ddrs.training.loader_feed.visit_numbers`), a crop of its
own. So an epoch's batches do not depend on how its pass is chunked, nor on where an interrupted
run resumed; the order is :class:`EpochSampler`'s, as for the DataLoader feed
(:mod:`ddrs.training.loader_feed`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset

from ddrs.core.device import copy_to
from ddrs.core.philox import keyed_uniforms, split_key
from ddrs.core.seeds import TrainingStream, derived_seed
from ddrs.core.settings import resolve_memory_format
from ddrs.data import TensorImages, get_info, load_dataset
from ddrs.data.augmentation import CropFlip
from ddrs.training.config import TrainConfig
from ddrs.training.loader_feed import EpochSampler, EpochView, training_loader, visit_numbers

#: inputs augmented per pass: bounds the padded copies a pass holds
CHUNK = 4096


class DeviceFeed:
    """Batches ``(x, y, idx)`` of ``batch_size`` over ``dataset`` (unaugmented), held on ``device``
    and augmented there by ``augmentation`` (``None``: not at all); ``sampler.set_epoch`` before
    each epoch, as for the DataLoader feed. ``channels_last`` lays the batches out for the model."""

    def __init__(
        self,
        dataset: Dataset,
        augmentation: CropFlip | None,
        *,
        seed: int,
        batch_size: int,
        device: torch.device,
        channels_last: bool = False,
        num_workers: int = 0,
    ):
        images, labels = _stacked(dataset, num_workers)
        self.images, self.labels = copy_to(images, device), copy_to(labels, device)
        self.augmentation, self.seed, self.batch_size = augmentation, seed, batch_size
        self.memory_format = torch.channels_last if channels_last and images.ndim == 4 else torch.contiguous_format
        self.sampler = EpochSampler(len(labels), seed)

    @classmethod
    def for_config(cls, dataset: Dataset, config: TrainConfig, device: torch.device) -> DeviceFeed:
        """The feed of a run of ``config`` over its training split ``dataset``: the dataset's
        augmentation unless ``config.augment`` is off, batches laid out in ``config.memory_format``."""
        return cls(
            dataset,
            get_info(config.dataset).augmentation if config.augment else None,
            seed=config.run_seed,
            batch_size=config.batch_size,
            device=device,
            channels_last=resolve_memory_format(config.memory_format, device.type) == "channels_last",
            num_workers=config.num_workers,
        )

    def __len__(self) -> int:
        return -(-len(self.sampler) // self.batch_size)

    def __iter__(self) -> Iterator[tuple[Tensor, Tensor, Tensor]]:
        order = self.sampler.order()
        rows = copy_to(order, self.images.device)
        visits = visit_numbers(rows)
        images, labels = self.augmented(self.sampler.epoch, rows, visits), self.labels[rows]
        for start in range(0, len(order), self.batch_size):
            end = start + self.batch_size
            yield images[start:end], labels[start:end], order[start:end]

    def augmented(self, epoch: int, indices: Tensor, visits: Tensor | None = None) -> Tensor:
        """Inputs ``indices`` (an index tensor on any device) as epoch ``epoch`` augments them, in
        that order, at their ``visits`` (default: each a first visit)."""
        indices = indices.to(self.images.device)
        counters = indices if visits is None else indices + visits.to(indices.device) * len(self.labels)
        out = torch.empty(
            (len(indices), *self.images.shape[1:]),
            dtype=self.images.dtype,
            device=self.images.device,
            memory_format=self.memory_format,
        )
        key = torch.tensor(split_key(derived_seed(self.seed, TrainingStream.AUGMENT, epoch)), device=self.images.device)
        for start in range(0, len(indices), CHUNK):
            rows = indices[start : start + CHUNK]
            images = self.images[rows]
            if self.augmentation is not None:
                uniforms = keyed_uniforms(key, counters[start : start + CHUNK], self.augmentation.draws)
                images = self.augmentation.apply(images, uniforms)
            out[start : start + CHUNK] = images
        return out

    def epoch_view(self, epoch: int) -> Dataset:
        """Every input as epoch ``epoch`` augments it, by index, on the CPU: what the method's epoch
        plan scores (:class:`~ddrs.training.loader_feed.EpochView` for the DataLoader feed)."""
        everyone = torch.arange(len(self.labels))
        return TensorImages(self.augmented(epoch, everyone).cpu(), self.labels.cpu())


def _stacked(dataset: Dataset, num_workers: int) -> tuple[Tensor, Tensor]:
    """All of ``dataset``'s images stacked, and its labels, read once through a DataLoader."""
    batches = list(DataLoader(dataset, batch_size=1024, num_workers=num_workers))
    return torch.cat([x for x, _ in batches]), torch.cat([torch.as_tensor(y) for _, y in batches])


def training_feed(
    config: TrainConfig, device: torch.device
) -> tuple[Dataset, DataLoader | DeviceFeed, Callable[[int], Dataset]]:
    """A run's training split; its one source of batches (``config.feed``): a DataLoader over the
    split as augmented per image, or the split held on the device; and the split as an epoch
    augments it (for the epoch plan)."""
    train_set = load_dataset(
        config.dataset,
        "train",
        root=config.data_root,
        seed=config.seed,
        augment=config.augmented_by == "loader",
    )
    if config.resolved_feed == "device":
        feed = DeviceFeed.for_config(train_set, config, device)
        return train_set, feed, feed.epoch_view
    return train_set, training_loader(train_set, config, device), partial(EpochView, train_set, config.run_seed)
