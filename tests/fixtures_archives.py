"""Tiny datasets written in the real on-disk formats torchvision reads, so loaders run offline.

* CIFAR-10: ``cifar-10-batches-py/`` with pickled ``data_batch_1..5``, ``test_batch`` and
  ``batches.meta`` (torchvision checks their md5 against hard-coded sums: tests patch the class's
  ``train_list`` / ``test_list`` / ``meta`` to the sums returned here).
* MNIST: the big-endian idx files ``MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte`` and,
  as torchvision keeps them after a download, their ``.gz`` archives (tests patch ``MNIST.resources``
  to the archives' md5 sums).
* ImageFolder: ``<root>/<split>/<class>/<n>.png`` (tests patch the registry's ImageNet
  ``num_classes`` to the number of class folders).
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import pickle
import struct
from pathlib import Path

import numpy as np

CIFAR_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def write_cifar10(root: Path, per_batch: int = 3, seed: int = 0) -> dict:
    """Write a CIFAR-10 python archive with ``per_batch`` images in each of the 6 batches.

    Returns ``{"train_list", "test_list", "meta", "train_images", "train_labels", "test_images",
    "test_labels"}``: the md5 lists in torchvision's attribute format and the uint8 HWC images.
    """
    rng = np.random.default_rng(seed)
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    images: dict[str, np.ndarray] = {}
    labels: dict[str, list[int]] = {}
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for name in names:
        data = rng.integers(0, 256, size=(per_batch, 3 * 32 * 32), dtype=np.uint8)  # CHW rows, as in CIFAR
        batch_labels = rng.integers(0, 10, size=per_batch).tolist()
        with open(folder / name, "wb") as f:
            pickle.dump({"batch_label": name, "labels": batch_labels, "data": data}, f)
        images[name], labels[name] = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), batch_labels
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({"label_names": CIFAR_CLASSES, "num_vis": 3072}, f)
    train = names[:5]
    return {
        "train_list": [[name, _md5(folder / name)] for name in train],
        "test_list": [["test_batch", _md5(folder / "test_batch")]],
        "meta": {"filename": "batches.meta", "key": "label_names", "md5": _md5(folder / "batches.meta")},
        "train_images": np.concatenate([images[name] for name in train]),
        "train_labels": sum((labels[name] for name in train), []),
        "test_images": images["test_batch"],
        "test_labels": labels["test_batch"],
    }


def install_cifar10(root: Path, monkeypatch, per_batch: int = 3) -> dict:
    """:func:`write_cifar10` under ``root``, with torchvision's md5 lists patched to accept it."""
    from torchvision.datasets import CIFAR10

    written = write_cifar10(root, per_batch)
    for attribute in ("train_list", "test_list", "meta"):
        monkeypatch.setattr(CIFAR10, attribute, written[attribute])
    return written


def _idx(array: np.ndarray) -> bytes:
    """Big-endian idx encoding of a uint8 array (magic 0x0000 08 <ndim>, then the sizes)."""
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(np.uint8).tobytes()


def write_mnist(root: Path, n_train: int = 5, n_test: int = 4, seed: int = 0) -> dict:
    """Write ``MNIST/raw`` idx files and their ``.gz`` archives.

    Returns the uint8 images ``(N, 28, 28)`` and labels per split, and ``"resources"``: the archives'
    md5 list in the format of torchvision's ``MNIST.resources``.
    """
    rng = np.random.default_rng(seed)
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True)
    written: dict = {"resources": []}
    for split, prefix, count in (("train", "train", n_train), ("test", "t10k", n_test)):
        images = rng.integers(0, 256, size=(count, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, size=count).astype(np.uint8)
        for name, array in ((f"{prefix}-images-idx3-ubyte", images), (f"{prefix}-labels-idx1-ubyte", labels)):
            (raw / name).write_bytes(_idx(array))
            (raw / f"{name}.gz").write_bytes(gzip.compress(_idx(array), mtime=0))
            written["resources"].append((f"{name}.gz", _md5(raw / f"{name}.gz")))
        written[split] = (images, labels.tolist())
    return written


def install_mnist(root: Path, monkeypatch, n_train: int = 5, n_test: int = 4) -> dict:
    """:func:`write_mnist` under ``root``, with torchvision's md5 list patched to accept it."""
    from torchvision.datasets import MNIST

    written = write_mnist(root, n_train, n_test)
    monkeypatch.setattr(MNIST, "resources", written["resources"])
    return written


def write_image_folder(root: Path, classes=("cat", "dog"), per_class: int = 2, size=(300, 260)) -> None:
    """Write ``root/{train,val}/<class>/<n>.png``: solid-colour RGB images of ``size`` (width, height)."""
    from PIL import Image

    for split in ("train", "val"):
        for label, name in enumerate(classes):
            folder = root / split / name
            folder.mkdir(parents=True)
            for n in range(per_class):
                colour = (40 * label + 10 * n, 100, 200 - 50 * label)
                Image.new("RGB", size, colour).save(folder / f"{n}.png")


def imagenet_classes(monkeypatch, num_classes: int) -> None:
    """Patch the registry's ImageNet entry and its loader's class count to ``num_classes`` classes,
    for a folder of a few."""
    from ddrs.data import DATASETS, torchvision_sets

    monkeypatch.setattr(torchvision_sets, "IMAGENET_CLASSES", num_classes)
    monkeypatch.setitem(DATASETS, "imagenet", dataclasses.replace(DATASETS["imagenet"], num_classes=num_classes))
