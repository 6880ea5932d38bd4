"""The memory job (DDRS Algorithm 3 on a certification log): read the log, run
:func:`ddrs.core.memory.memory_certify` over the certified split's inputs in ``idx`` order, write
the memory log atomically with what the memory did to each row."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ddrs.core.memory import NORM_OF_NOISE, memory_certify
from ddrs.io import atomic_path
from ddrs.logs.certification_log import read_log


def memory_certify_log(
    log_path: str | os.PathLike,
    images: Sequence,
    out_path: str | os.PathLike,
    *,
    labels: Sequence[int] | None = None,
    norm: int | None = None,
    block: int = 1024,
) -> dict[str, int]:
    """Run Algorithm 3 on a certification log and write the memory log atomically.

    Rows are processed in ``idx`` order with the inputs ``images[idx]`` of the certified split:
    a dataset of ``(image, label)`` pairs (e.g. :func:`ddrs.data.load_dataset`), or images by index
    (e.g. :func:`ddrs.data.load_images`, no torch) with that split's ``labels`` by index
    (:func:`ddrs.data.load_labels`). Every row's label must be the split's: Algorithm 3's regions
    are balls around the certified inputs (DDRS §3.5), so a log of another split (another seed)
    would be made "sound" against the wrong images. The output keeps the input log's columns,
    recomputes ``correct`` from the new prediction, and adds ``memory_action`` and
    ``radius_before``. ``norm`` defaults to the log's ``noise`` column (gaussian → 2, uniform → 1).
    Returns how many rows were kept / moved_in / shrunk.
    """
    frame = read_log(log_path)
    if "memory_action" in frame.columns:
        raise ValueError(f"{log_path} is already a memory-certified log")
    if norm is None:  # a log of no rows has no noise to name and no ball to draw
        norm = _norm_of(frame, log_path) if len(frame) else 2
    frame = frame.sort_values("idx", kind="stable").reset_index(drop=True)
    if len(frame) and (frame["idx"].min() < 0 or frame["idx"].max() >= len(images)):
        raise ValueError(f"{log_path}: idx outside the dataset's {len(images)} inputs")
    items = [images[int(idx)] for idx in frame["idx"]]
    pairs = bool(items) and isinstance(items[0], tuple)
    if labels is None and not pairs and items:
        raise ValueError("give the split's labels with its images (labels=), so the log is checked against the split")
    expected = [int(item[1]) for item in items] if pairs else [int(labels[int(idx)]) for idx in frame["idx"]]
    _check_labels(frame, np.array(expected, dtype=np.int64), log_path)
    points = np.stack([_image(item) for item in items]) if items else np.zeros((0, 1))
    result = memory_certify(points, frame["predict"].to_numpy(), frame["radius"].to_numpy(), norm, block=block)
    frame["predict"] = result.predict
    frame["radius"] = result.radius
    frame["correct"] = (frame["predict"] == frame["label"]).astype(int)
    frame["memory_action"] = result.action
    frame["radius_before"] = result.radius_before
    with atomic_path(out_path) as tmp:
        # full float precision: a radius rounded up could make two regions overlap again
        frame.to_csv(tmp, sep="\t", index=False, float_format="%.17g")
    return result.counts()


def _check_labels(frame: pd.DataFrame, expected: np.ndarray, log_path) -> None:
    """Refuse a log whose labels are not the split's at its ``idx``: it certifies other images."""
    wrong = frame["label"].to_numpy() != expected
    if wrong.any():
        first = frame["idx"][wrong].tolist()[:5]
        raise ValueError(
            f"{log_path}: {int(wrong.sum())} of {len(frame)} rows have another label than the split's input at "
            f"their idx (idx {first}): it certifies another split; use the dataset and seed it was certified with"
        )


def _image(item) -> np.ndarray:
    """An image, from an image or from a dataset's ``(image, label)`` pair."""
    return np.asarray(item[0] if isinstance(item, tuple) else item)


def _norm_of(frame: pd.DataFrame, log_path) -> int:
    if "noise" not in frame.columns:
        raise ValueError(f"{log_path} has no noise column; pass the norm (2 for gaussian, 1 for uniform)")
    names = set(frame["noise"])
    if len(names) != 1 or next(iter(names)) not in NORM_OF_NOISE:
        held = sorted(map(str, names))  # an empty field reads as NaN, a float
        raise ValueError(f"{log_path}: noise column holds {held}; expected one of {sorted(NORM_OF_NOISE)}")
    return NORM_OF_NOISE[next(iter(names))]
