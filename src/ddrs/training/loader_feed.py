"""How the trainer loads its training set: augmentation keyed per input, one DataLoader per run.

Every example's data augmentation (torchvision's random crop and flip draw from torch's global
generator) is seeded from ``(seed, epoch, idx)`` alone (:data:`ddrs.core.seeds.TrainingStream.AUGMENT`),
so the crops of an epoch do not depend on the number of DataLoader workers, on whether they
persist across epochs, or on where an interrupted run resumed. An epoch plan that visits an input
again (Sun et al.'s sampling with replacement, §5.4) gives each later visit its own draws, keyed
by ``(seed, epoch, idx, visit)`` (:func:`visit_numbers`), as a DataLoader re-augmenting every item
it loads would. The sampler yields ``(epoch, idx, visit)`` keys; the DataLoader is built once per
run (its workers persist) and told each epoch's order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, Sampler

from ddrs.core.seeds import TrainingStream, derived_seed
from ddrs.training.config import TrainConfig


def visit_numbers(order: Tensor) -> Tensor:
    """For each entry of ``order`` (dataset indices), how often its index came earlier in ``order``:
    0 for a first visit."""
    ranked, position = order.sort(stable=True)
    step = torch.arange(len(order), device=order.device)
    first = torch.ones_like(ranked, dtype=torch.bool)
    first[1:] = ranked[1:] != ranked[:-1]
    numbers = torch.empty_like(step)
    numbers[position] = step - torch.where(first, step, 0).cummax(dim=0).values
    return numbers


def augmented_item(dataset: Dataset, seed: int, epoch: int, index: int, visit: int = 0) -> Any:
    """``dataset[index]`` with torch's global CPU generator seeded from ``(seed, AUGMENT, epoch,
    index)``, and ``visit`` too for a later visit of the epoch; the caller's generator state is
    restored. The CPU generator alone (what torchvision's transforms draw from):
    ``torch.manual_seed`` and ``fork_rng`` would also visit every accelerator's generators, 65 µs a
    call, which capped a worker near 3,000 images/s."""
    generator = torch.default_generator
    state = generator.get_state()
    generator.manual_seed(derived_seed(seed, TrainingStream.AUGMENT, epoch, index, *([visit] if visit else [])))
    try:
        return dataset[index]
    finally:
        generator.set_state(state)


class IndexedDataset(Dataset):
    """``dataset`` keyed by ``(epoch, idx, visit)``, yielding ``(x, y, idx)`` (so a batch knows its
    rows of the σ table) with the augmentation of :func:`augmented_item`."""

    def __init__(self, dataset: Dataset, seed: int):
        self.dataset, self.seed = dataset, seed

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, key: tuple[int, int, int]) -> tuple[Any, Any, int]:
        epoch, index, visit = key
        x, y = augmented_item(self.dataset, self.seed, epoch, index, visit)
        return x, y, index


class EpochView(Dataset):
    """``dataset`` as epoch ``epoch`` sees it: item ``idx`` is :func:`augmented_item` of that epoch
    (what the method's epoch plan scores)."""

    def __init__(self, dataset: Dataset, seed: int, epoch: int):
        self.dataset, self.seed, self.epoch = dataset, seed, epoch

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Any:
        return augmented_item(self.dataset, self.seed, self.epoch, index)


class EpochSampler(Sampler):
    """The ``(epoch, idx, visit)`` keys of the epoch set by :meth:`set_epoch`: its ``visits`` (the
    method's epoch plan), else a permutation of the training set from ``(seed, SHUFFLE, epoch)``."""

    def __init__(self, size: int, seed: int):
        self.size, self.seed = size, seed
        self.epoch, self.visits = 0, None

    def set_epoch(self, epoch: int, visits: Tensor | None = None) -> None:
        self.epoch, self.visits = epoch, visits

    def __len__(self) -> int:
        return self.size if self.visits is None else len(self.visits)

    def order(self) -> Tensor:
        """The epoch's input indices in the order they are visited."""
        if self.visits is not None:
            return self.visits
        generator = torch.Generator().manual_seed(derived_seed(self.seed, TrainingStream.SHUFFLE, self.epoch))
        # the one draw a per-epoch DataLoader took from this generator before shuffling (its
        # worker base seed), so orders, hence trained weights, match runs of earlier versions
        torch.empty((), dtype=torch.int64).random_(generator=generator)
        return torch.randperm(self.size, generator=generator)

    def __iter__(self) -> Iterator[tuple[int, int, int]]:
        order = self.order()
        return zip([self.epoch] * len(order), order.tolist(), visit_numbers(order).tolist(), strict=True)


def training_loader(dataset: Dataset, config: TrainConfig, device: torch.device) -> DataLoader:
    """The run's DataLoader over ``dataset`` (``sampler.set_epoch`` before each epoch): ``batch_size``,
    ``num_workers`` workers that persist across epochs, pinned memory per ``pin_memory`` (default:
    on CUDA only)."""
    return DataLoader(
        IndexedDataset(dataset, config.run_seed),
        batch_size=config.batch_size,
        sampler=EpochSampler(len(dataset), config.run_seed),
        num_workers=config.num_workers,
        persistent_workers=config.num_workers > 0,
        pin_memory=device.type == "cuda" if config.pin_memory is None else config.pin_memory,
        generator=torch.Generator().manual_seed(derived_seed(config.run_seed, TrainingStream.LOADER)),
    )
