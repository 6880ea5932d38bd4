"""Dataset registry: images in [0, 1] of a fixed shape, labels as ints.

Normalisation is *not* applied here: it is the first layer of every model (``ddrs.models``), so
smoothing noise is added in pixel space and radii are measured there (Cohen et al. 2019, §4).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor
from torch.utils.data import Dataset

SPLITS = ("train", "test")


@dataclass(frozen=True)
class DatasetInfo:
    """What a model needs to know about a dataset: classes, input shape, channel statistics."""

    name: str
    num_classes: int
    input_shape: tuple[int, int, int]
    mean: tuple[float, ...]
    std: tuple[float, ...]


DATASETS: dict[str, DatasetInfo] = {
    info.name: info
    for info in (
        # pixel mean / std of all 1797 scikit-learn digits scaled to [0, 1]
        DatasetInfo("digits", 10, (1, 8, 8), (0.3053,), (0.3760,)),
        DatasetInfo("mnist", 10, (1, 28, 28), (0.1307,), (0.3081,)),
        # Cohen et al.'s constants (locuslab/smoothing code/datasets.py), so their checkpoints map over
        DatasetInfo("cifar10", 10, (3, 32, 32), (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)),
        DatasetInfo("imagenet", 1000, (3, 224, 224), (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    )
}

#: share of the 1797 digits held out as the test split (→ 540 test images)
DIGITS_TEST_SHARE = 0.3


def get_info(name: str) -> DatasetInfo:
    """Look up a dataset by name; an unknown name lists the choices."""
    try:
        return DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; choose one of {sorted(DATASETS)}") from None


class TensorImages(Dataset):
    """In-memory images ``(N, C, H, W)`` with integer labels, yielding ``(x, int(y))`` like torchvision."""

    def __init__(self, images: Tensor, labels: Tensor):
        if len(images) != len(labels):
            raise ValueError(f"{len(images)} images but {len(labels)} labels")
        self.images = images
        self.targets = [int(label) for label in labels]

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[Tensor, int]:
        return self.images[index], self.targets[index]


def load_dataset(name: str, split: str, root: str | Path = "data", seed: int = 0, augment: bool = True) -> Dataset:
    """The ``split`` (``train`` or ``test``) of dataset ``name`` as ``(x in [0,1], int label)`` pairs.

    ``root`` is torchvision's download directory for ``mnist`` / ``cifar10`` (archives are fetched
    once and checked against torchvision's md5 sums) and holds ``imagenet/train/`` and
    ``imagenet/val/`` for ImageNet; ``digits`` ships inside scikit-learn and ignores it. ``seed`` fixes
    the stratified digits split. ``augment`` enables the training-split augmentation (CIFAR-10:
    random crop with padding 4 and horizontal flip; ImageNet: random resized crop and flip, as in
    Cohen et al.'s code); test splits are never augmented.
    """
    get_info(name)
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r} for dataset {name!r}; choose one of {list(SPLITS)}")
    augment = augment and split == "train"
    return _LOADERS[name](split, Path(root), seed, augment)


def _digits(split: str, root: Path, seed: int, augment: bool) -> Dataset:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = torch.as_tensor(digits.images, dtype=torch.float32).div_(16.0).unsqueeze(1)
    labels = torch.as_tensor(digits.target, dtype=torch.long)
    train_idx, test_idx = train_test_split(
        range(len(labels)), test_size=DIGITS_TEST_SHARE, stratify=digits.target, random_state=seed
    )
    chosen = torch.as_tensor(train_idx if split == "train" else test_idx)
    return TensorImages(images[chosen], labels[chosen])


def _mnist(split: str, root: Path, seed: int, augment: bool) -> Dataset:
    from torchvision import datasets, transforms

    return datasets.MNIST(str(root), train=split == "train", download=True, transform=transforms.ToTensor())


def _cifar10(split: str, root: Path, seed: int, augment: bool) -> Dataset:
    from torchvision import datasets, transforms

    steps = [transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip()] if augment else []
    transform = transforms.Compose([*steps, transforms.ToTensor()])
    return datasets.CIFAR10(str(root), train=split == "train", download=True, transform=transform)


def _imagenet(split: str, root: Path, seed: int, augment: bool) -> Dataset:
    from torchvision import datasets, transforms

    folder = root / "imagenet" / ("train" if split == "train" else "val")
    if not folder.is_dir():
        raise FileNotFoundError(
            f"ImageNet {split} images expected in {folder} (one sub-directory per class); "
            "ImageNet cannot be downloaded automatically"
        )
    if augment:
        steps = [transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip()]
    else:
        steps = [transforms.Resize(256), transforms.CenterCrop(224)]
    return datasets.ImageFolder(str(folder), transform=transforms.Compose([*steps, transforms.ToTensor()]))


_LOADERS = {"digits": _digits, "mnist": _mnist, "cifar10": _cifar10, "imagenet": _imagenet}


def subsample_indices(length: int, skip: int = 1, max: int | None = None) -> list[int]:  # noqa: A002
    """Indices of the test inputs Cohen's ``certify.py`` visits with ``--skip`` / ``--max``.

    Every ``skip``-th index from 0, stopping at index ``max`` (Cohen's loop ``if i % skip != 0:
    continue; if i == max: break``), so ``max`` bounds the index range, not the count.
    """
    if skip < 1:
        raise ValueError(f"skip must be >= 1, got {skip}")
    if max is not None and max < 0:
        raise ValueError(f"max must be >= 0 (or None for no limit), got {max}")
    stop = length if max is None else min(length, max)
    return list(range(0, stop, skip))
