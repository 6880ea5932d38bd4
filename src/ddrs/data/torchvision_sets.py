"""Datasets read through torchvision from a directory: MNIST and CIFAR-10 (downloaded once, md5-checked), ImageNet.

Each loader takes ``(split, root, augment)`` and returns a map-style dataset of ``(x in [0, 1], int
label)`` pairs; torch and torchvision are imported only when one is called.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ddrs.data import augmentation

if TYPE_CHECKING:
    from torch.utils.data import Dataset


def mnist(split: str, root: Path, augment: bool) -> Dataset:
    from torchvision import datasets, transforms

    return datasets.MNIST(str(root), train=split == "train", download=True, transform=transforms.ToTensor())


def cifar10(split: str, root: Path, augment: bool) -> Dataset:
    """Training augmentation: random crop with padding 4 and horizontal flip
    (:data:`ddrs.data.augmentation.CIFAR10`)."""
    from torchvision import datasets, transforms

    steps = augmentation.CIFAR10.transforms() if augment else []
    transform = transforms.Compose([*steps, transforms.ToTensor()])
    return datasets.CIFAR10(str(root), train=split == "train", download=True, transform=transform)


def imagenet(split: str, root: Path, augment: bool) -> Dataset:
    """``root/imagenet/{train,val}/<class>/``; training: random resized crop and flip, else resize 256, crop 224."""
    from torchvision import datasets, transforms

    folder = root / "imagenet" / ("train" if split == "train" else "val")
    if not folder.is_dir():
        raise FileNotFoundError(
            f"ImageNet {split} images expected in {folder} (one sub-directory per class); "
            "ImageNet cannot be downloaded automatically"
        )
    if augment:
        steps = augmentation.IMAGENET.transforms()
    else:
        steps = [transforms.Resize(256), transforms.CenterCrop(224)]
    return datasets.ImageFolder(str(folder), transform=transforms.Compose([*steps, transforms.ToTensor()]))
