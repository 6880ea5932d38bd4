"""The dataset registry: one :class:`DatasetInfo` per dataset, holding its statistics and its loader.

Adding a dataset means adding one entry to :data:`DATASETS`. Normalisation is *not* applied by the
loaders: it is the first layer of every model (``ddrs.models``), so smoothing noise is added in
pixel space and radii are measured there (Cohen et al. 2019, §4).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ddrs.data import augmentation as augmentations
from ddrs.data import embedded, split_cache, torchvision_sets
from ddrs.data.tensors import DatasetImages, TensorImages

if TYPE_CHECKING:
    from torch.utils.data import Dataset

SPLITS = ("train", "test")

#: (split, seed) -> (images float32 (N, C, H, W) in [0, 1], labels int64): data shipped in a package
ArrayLoader = Callable[[str, int], tuple[np.ndarray, np.ndarray]]
#: (split, root, augment) -> map-style dataset of (x in [0, 1], int label): data read through torchvision
TorchvisionLoader = Callable[[str, Path, bool], "Dataset"]


@dataclass(frozen=True)
class DatasetInfo:
    """A dataset: classes, input shape, the channel statistics of its models' normalising first layer
    (mean 0 and std 1: none), and its loader — ``arrays`` or ``torchvision``."""

    name: str
    num_classes: int
    input_shape: tuple[int, int, int]
    mean: tuple[float, ...]
    std: tuple[float, ...]
    #: for datasets shipped inside a package: split arrays without torch (load_arrays)
    arrays: ArrayLoader | None = None
    #: for datasets downloaded to / found under ``root``
    torchvision: TorchvisionLoader | None = None
    #: for datasets no loader can download: (root, split) -> the folder that must hold the split before
    #: any job runs (checked before the DAG is built, :mod:`ddrs.pipeline.missing_inputs`), and how to get it
    local_folder: Callable[[Path, str], Path] | None = None
    obtain: str = ""
    #: the training split's augmentation (:mod:`~ddrs.data.augmentation`); ``None``: never augmented
    augmentation: augmentations.CropFlip | augmentations.ResizedCropFlip | None = None
    #: whether the training split may be held whole on the training device (the ``device`` feed,
    #: :mod:`ddrs.training.device_feed`): small enough, and augmented in batches if at all
    fits_on_device: bool = True
    #: inputs in the test split (the one certified)
    test_size: int = 10_000
    #: the run time a training job asks for (minutes; the SLURM profile turns it into --time)
    train_minutes: int = 30
    #: seconds CERTIFY takes per test input and 100,000 noise draws with the largest architecture
    #: of the dataset here, on the DDRS paper's GPU (a Quadro RTX 6000); a certification job's
    #: run time is estimated from it (:func:`ddrs.pipeline.resources.job_minutes`)
    certify_seconds: float = 2.0

    def __post_init__(self):
        if (self.arrays is None) == (self.torchvision is None):
            raise ValueError(f"dataset {self.name!r}: give exactly one loader, arrays= or torchvision=")
        if not len(self.mean) == len(self.std) == self.input_shape[0]:
            raise ValueError(f"dataset {self.name!r}: one mean and one std per channel of {self.input_shape}")
        if self.fits_on_device and not isinstance(self.augmentation, augmentations.CropFlip | None):
            raise ValueError(f"dataset {self.name!r}: only a batched augmentation (CropFlip) fits on the device")


DATASETS: dict[str, DatasetInfo] = {
    info.name: info
    for info in (
        # pixel mean / std of all 1797 scikit-learn digits scaled to [0, 1]
        DatasetInfo("digits", 10, (1, 8, 8), (0.3053,), (0.3760,), arrays=embedded.digits, test_size=540),
        # MNIST as Jeong & Shin (2020) and MACER set it up: no normaliser (smoothing-consistency
        # code/datasets.py, get_normalize_layer: `elif dataset == "mnist": return torch.nn.Identity()`),
        # the network sees [0, 1] pixels (their supplement A.2: no pre-processing but the scaling to [0, 1])
        DatasetInfo("mnist5k", 10, (1, 28, 28), (0.0,), (1.0,), arrays=embedded.mnist5k, test_size=1000),
        DatasetInfo("mnist", 10, (1, 28, 28), (0.0,), (1.0,), torchvision=torchvision_sets.mnist),
        # Cohen et al.'s constants (locuslab/smoothing code/datasets.py), so their checkpoints map over
        DatasetInfo(
            "cifar10",
            10,
            (3, 32, 32),
            (0.4914, 0.4822, 0.4465),
            (0.2023, 0.1994, 0.2010),
            torchvision=torchvision_sets.cifar10,
            augmentation=augmentations.CIFAR10,
            train_minutes=24 * 60,
            # Appendix F: ResNet-18 1.6 s; ResNet-110 about twice that (1.64 s vs 0.86 s on one H100)
            certify_seconds=3.2,
        ),
        DatasetInfo(
            "imagenet",
            torchvision_sets.IMAGENET_CLASSES,
            (3, torchvision_sets.IMAGENET_SIZE, torchvision_sets.IMAGENET_SIZE),
            (0.485, 0.456, 0.406),
            (0.229, 0.224, 0.225),
            torchvision=torchvision_sets.imagenet,
            local_folder=torchvision_sets.imagenet_folder,
            obtain=torchvision_sets.IMAGENET_OBTAIN,
            augmentation=augmentations.ResizedCropFlip(torchvision_sets.IMAGENET_SIZE),
            fits_on_device=False,
            test_size=50_000,
            train_minutes=24 * 60,
            certify_seconds=109.5,  # Appendix F: ResNet-50
        ),
    )
}


def get_info(name: str) -> DatasetInfo:
    """Look up a dataset by name; an unknown name lists the choices."""
    try:
        return DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; choose one of {sorted(DATASETS)}") from None


def load_arrays(name: str, split: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The ``split`` of a dataset shipped in a package as ``(images float32 (N, C, H, W) in [0, 1], labels int64)``.

    Needs no torch; ``seed`` fixes the stratified train/test split. Datasets read through
    torchvision (mnist, cifar10, imagenet) are refused: use :func:`load_dataset` for those.
    """
    info = _checked(name, split)
    if info.arrays is None:
        embedded_names = sorted(n for n, i in DATASETS.items() if i.arrays is not None)
        raise ValueError(
            f"dataset {name!r} is read through torchvision, not shipped as arrays; use load_dataset "
            f"(array datasets: {embedded_names})"
        )
    return info.arrays(split, seed)


def load_dataset(name: str, split: str, root: str | Path = "data", seed: int = 0, augment: bool = True) -> Dataset:
    """The ``split`` (``train`` or ``test``) of dataset ``name`` as ``(x in [0,1], int label)`` pairs.

    ``root`` is torchvision's download directory for ``mnist`` / ``cifar10`` (archives are fetched
    once and checked against torchvision's md5 sums) and holds ``imagenet/train/`` and
    ``imagenet/val/`` for ImageNet; datasets shipped as arrays (``digits``, ``mnist5k``) are read
    from the split :func:`save_arrays` saved there, else built as by :func:`load_arrays`. ``seed``
    fixes their stratified split. ``augment`` enables
    the training-split augmentation (CIFAR-10: random crop with padding 4 and horizontal flip;
    ImageNet: random resized crop and flip, as in Cohen et al.'s code); test splits are never augmented.
    """
    info = _checked(name, split)
    if info.arrays is not None:
        return TensorImages.from_arrays(*_saved_or_built(info, split, root, seed))
    return info.torchvision(split, Path(root), augment and split == "train")


def load_images(name: str, split: str, root: str | Path = "data", seed: int = 0) -> Sequence[np.ndarray]:
    """The ``split``'s images by index, each float32 ``(C, H, W)`` in [0, 1], never augmented.

    Datasets shipped as arrays come as one array without importing torch; the others are read
    through torchvision one image at a time, on access.
    """
    info = _checked(name, split)
    if info.arrays is not None:
        return _saved_or_built(info, split, root, seed)[0]
    return DatasetImages(load_dataset(name, split, root=root, seed=seed, augment=False))


def load_labels(name: str, split: str, root: str | Path = "data", seed: int = 0) -> np.ndarray:
    """The ``split``'s labels by index (int64), as :func:`load_dataset` pairs them with its images;
    torchvision's datasets give them without reading an image."""
    info = _checked(name, split)
    if info.arrays is not None:
        return np.asarray(_saved_or_built(info, split, root, seed)[1], dtype=np.int64)
    return np.asarray(info.torchvision(split, Path(root), False).targets, dtype=np.int64)


def save_arrays(name: str, root: str | Path = "data", seed: int = 0) -> Path | None:
    """Save both splits of a dataset shipped as arrays under ``root`` (:mod:`~ddrs.data.split_cache`),
    for :func:`load_dataset` and :func:`load_images` to read back; None for the other datasets."""
    info = get_info(name)
    if info.arrays is None:
        return None
    return split_cache.write(root, name, seed, {split: info.arrays(split, seed) for split in SPLITS})


def saved_split(name: str, root: str | Path = "data", seed: int = 0) -> Path | None:
    """The file every job reads a dataset shipped as arrays from (:func:`save_arrays`), None for the
    others (torchvision's checked downloads, ImageNet's folders)."""
    return None if get_info(name).arrays is None else split_cache.cache_path(root, name, seed)


def _saved_or_built(info: DatasetInfo, split: str, root: str | Path, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A split of an array dataset: as saved under ``root`` by :func:`save_arrays`, else built."""
    saved = split_cache.read(root, info.name, seed, split)
    return saved if saved is not None else info.arrays(split, seed)


def _checked(name: str, split: str) -> DatasetInfo:
    info = get_info(name)
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r} for dataset {name!r}; choose one of {list(SPLITS)}")
    return info
