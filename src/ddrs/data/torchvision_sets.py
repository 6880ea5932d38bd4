"""Datasets read through torchvision from a directory: MNIST and CIFAR-10 (downloaded once, md5-checked), ImageNet.

Each loader takes ``(split, root, augment)`` and returns a map-style dataset of ``(x in [0, 1], int
label)`` pairs; torch and torchvision are imported only when one is called. A dataset that is
missing and cannot be downloaded, or whose files fail their check, raises an error naming the
folder and the ``ddrs prepare-data`` command that fetches it.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ddrs.data import augmentation
from ddrs.errors import DataFormatError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from torch.utils.data import Dataset

#: how many missing or extra class folders an error lists
SHOWN = 5
#: ImageNet's classes: the class folders ``imagenet`` expects in each split
IMAGENET_CLASSES = 1000
#: the side of ImageNet's square input: the crop the networks see (Cohen et al.'s code,
#: locuslab/smoothing ``code/datasets.py``: test images resized to 256 = 224·8/7, then centre-cropped)
IMAGENET_SIZE = 224


def mnist(split: str, root: Path, augment: bool) -> Dataset:
    """Before reading, the split's archives in ``root/MNIST/raw`` are checked against torchvision's md5
    list (``MNIST.resources``) and the idx files torchvision reads must be their decompressed content."""
    from torchvision import datasets, transforms

    raw = root / "MNIST" / "raw"
    extracted = [raw / name.removesuffix(".gz") for name, _ in datasets.MNIST.resources]
    if not all(path.is_file() for path in extracted):
        _download("mnist", root, raw, lambda: datasets.MNIST(str(root), download=True))
    prefix = "train" if split == "train" else "t10k"
    for name, md5 in datasets.MNIST.resources:
        if name.startswith(prefix):
            _check_mnist_file(raw / name, md5, root)
    return datasets.MNIST(str(root), train=split == "train", transform=transforms.ToTensor())


def cifar10(split: str, root: Path, augment: bool) -> Dataset:
    """torchvision checks the extracted batches against its md5 list and fetches the archive again
    if they fail. Training augmentation: random crop with padding 4 and horizontal flip
    (:data:`ddrs.data.augmentation.CIFAR10`)."""
    from torchvision import datasets, transforms

    steps = augmentation.CIFAR10.transforms() if augment else []
    transform = transforms.Compose([*steps, transforms.ToTensor()])
    return _download(
        "cifar10",
        root,
        root / datasets.CIFAR10.base_folder,
        lambda: datasets.CIFAR10(str(root), train=split == "train", download=True, transform=transform),
    )


def imagenet(split: str, root: Path, augment: bool) -> Dataset:
    """``root/imagenet/{train,val}/<class>/``; training: random resized crop and flip, else resize 256, crop 224
    (:data:`IMAGENET_SIZE`).

    Each split must hold the dataset's ``num_classes`` class folders, the same in both splits:
    ImageFolder numbers the classes by their sorted folder names.
    """
    from torchvision import datasets, transforms

    folder = imagenet_folder(root, split)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"ImageNet {split} images expected in {folder} (one sub-directory per class); "
            "ImageNet cannot be downloaded automatically"
        )
    _check_class_folders(folder, imagenet_folder(root, "test" if split == "train" else "train"))
    if augment:
        steps = augmentation.ResizedCropFlip(IMAGENET_SIZE).transforms()
    else:
        steps = [transforms.Resize(IMAGENET_SIZE * 8 // 7), transforms.CenterCrop(IMAGENET_SIZE)]
    return datasets.ImageFolder(str(folder), transform=transforms.Compose([*steps, transforms.ToTensor()]))


def imagenet_folder(root: Path, split: str) -> Path:
    """Where ImageNet's ``split`` lies under ``root``: ``imagenet/train``, and ``imagenet/val`` for the test split."""
    return Path(root) / "imagenet" / ("train" if split == "train" else "val")


#: how to get ImageNet, which torchvision cannot download
IMAGENET_OBTAIN = (
    "download ILSVRC2012 from https://image-net.org (free for research) and lay out train/ and val/ as one "
    "folder per class (torchvision's ImageFolder; the val images sorted into their classes)"
)


def _fix(dataset: str, root: Path) -> str:
    return f"`ddrs prepare-data --dataset {dataset} --data-root {root}` on a machine with network"


def _download(dataset: str, root: Path, folder: Path, build: Callable[[], Dataset]) -> Dataset:
    """``build()`` (a torchvision constructor that downloads what is missing), its failures named."""
    try:
        return build()
    except (RuntimeError, OSError) as error:  # URLError is an OSError
        reason = " ".join(str(error).split())
        raise FileNotFoundError(
            f"{dataset} files in {folder} are missing or fail torchvision's md5 check, and could not be "
            f"downloaded ({reason}); run {_fix(dataset, root)}"
        ) from None


def _check_mnist_file(archive: Path, md5: str, root: Path) -> None:
    """``archive`` matches torchvision's ``md5`` and the idx file beside it is its decompressed content."""
    from torchvision.datasets.utils import check_integrity

    extracted = archive.with_suffix("")
    fix = f"delete {archive.parent} and run {_fix('mnist', root)}"
    if not check_integrity(archive, md5):
        state = "fails torchvision's md5 check" if archive.is_file() else "is missing"
        raise DataFormatError(f"{archive}: MNIST archive {state}, so {extracted.name} cannot be verified; {fix}")
    with gzip.open(archive, "rb") as packed, open(extracted, "rb") as plain:
        if _md5(packed) != _md5(plain):
            raise DataFormatError(f"{extracted}: differs from its verified archive {archive.name}; {fix}")


def _md5(stream) -> str:
    digest = hashlib.md5()
    while chunk := stream.read(1 << 20):
        digest.update(chunk)
    return digest.hexdigest()


def _check_class_folders(folder: Path, other: Path) -> None:
    """``folder`` holds the :data:`IMAGENET_CLASSES` class folders, and the same ones as ``other`` if it exists."""
    expected = IMAGENET_CLASSES
    classes = _class_folders(folder)
    if other.is_dir():
        other_classes = _class_folders(other)
        if classes != other_classes:
            raise DataFormatError(
                f"{folder}: class folders differ from {other}'s, so ImageFolder would number their classes "
                f"differently: missing {_few(other_classes - classes)}, extra {_few(classes - other_classes)}; "
                f"both splits need the same {expected} class folders"
            )
    if len(classes) != expected:
        raise DataFormatError(
            f"{folder}: {len(classes)} class folders, expected {expected} for imagenet (one sub-directory per class)"
        )


def _class_folders(folder: Path) -> set[str]:
    """The class folders ImageFolder finds (its ``find_classes``: every sub-directory)."""
    return {entry.name for entry in os.scandir(folder) if entry.is_dir()}


def _few(names: Iterable[str]) -> str:
    names = sorted(names)
    if not names:
        return "none"
    listed = ", ".join(names[:SHOWN])
    return listed if len(names) <= SHOWN else f"{listed}, … ({len(names)} in all)"
