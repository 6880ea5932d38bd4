"""The resumable certification loop: CERTIFY over a test set, written as a Cohen-format log.

Rows go to ``<out>.partial`` through :class:`ddrs.logs.LogWriter` as soon as they are certified; a
rerun skips the ``idx`` already there, and the finished log is renamed into place. Every input's
noise comes from its own generator seeded from ``(seed, idx)``, so a row never depends on how the
run was batched or where it was interrupted: a resumed run writes the rows an uninterrupted one
would have written.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.utils.data import Dataset
from tqdm.auto import tqdm

from ddrs.errors import LogFormatError
from ddrs.logs import COHEN_COLUMNS, LogWriter
from ddrs.noise import get_noise
from ddrs.seeds import Stream, input_generators
from ddrs.smoothing import certify_batch, validate_certify_args

#: columns our logs add after Cohen's
EXTRA_COLUMNS = ("scale", "p_a_lower", "noise", "precision")


def read_sigma_log(path: str | os.PathLike, k: int | None = None, *, column: str | None = None) -> dict[int, float]:
    """Per-input scales from a σ log (``idx  c_a  sigma_K0  sigma_K100 ...``): idx → scale.

    Give the Algorithm-1 step ``k`` (column ``sigma_K{k}``) or any other ``column`` (e.g. the
    grid baseline's ``sigma_grid_n{n}``). Raises :class:`LogFormatError` naming the file when the
    column is absent or a value is not a positive number.
    """
    if (k is None) == (column is None):
        raise ValueError("read_sigma_log needs exactly one of k and column")
    path = Path(path)
    column = f"sigma_K{k}" if column is None else column
    try:
        frame = pd.read_csv(path, sep="\t")
    except FileNotFoundError:
        raise
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise LogFormatError(f"{path}: not a tab-separated σ log ({error})") from None
    if "idx" not in frame.columns or column not in frame.columns:
        available = sorted(c for c in frame.columns if str(c).startswith("sigma_K"))
        raise LogFormatError(f"{path}: no column {'idx' if 'idx' not in frame.columns else column}; has {available}")
    idx = pd.to_numeric(frame["idx"], errors="coerce")
    scale = pd.to_numeric(frame[column], errors="coerce")
    bad = idx.isna() | (idx != idx.round()) | ~(scale > 0) | ~np.isfinite(scale)
    if bad.any():
        row = bad.idxmax()
        raise LogFormatError(
            f"{path}: row {row + 1} has idx {frame['idx'][row]!r}, {column} {frame[column][row]!r}; "
            "expected an integer idx and a positive scale"
        )
    if idx.duplicated().any():
        raise LogFormatError(f"{path}: duplicate idx {int(idx[idx.duplicated()].iloc[0])}")
    return dict(zip(idx.astype(int).tolist(), scale.astype(float).tolist(), strict=True))


def _scale_lookup(scales: float | Mapping[int, float], indices: Sequence[int]) -> dict[int, float]:
    """One positive scale per listed input, checked before any work starts."""
    if isinstance(scales, Mapping):
        missing = [i for i in indices if i not in scales]
        if missing:
            raise ValueError(f"no scale for test input idx {missing[0]} ({len(missing)} of {len(indices)} missing)")
        lookup = {i: float(scales[i]) for i in indices}
    else:
        lookup = dict.fromkeys(indices, float(scales))
    bad = [(i, s) for i, s in lookup.items() if not s > 0 or not math.isfinite(s)]
    if bad:
        raise ValueError(f"scale must be positive, got {bad[0][1]} for idx {bad[0][0]}")
    return lookup


def certify_dataset(
    model: nn.Module,
    dataset: Dataset,
    indices: Sequence[int],
    scales: float | Mapping[int, float],
    *,
    num_classes: int,
    noise: str,
    n0: int,
    n: int,
    alpha: float,
    batch_size: int,
    seed: int,
    out_path: str | os.PathLike,
    precision: str = "fp32",
    device: str | torch.device = "cpu",
    inputs_per_call: int | None = None,
    progress: bool = True,
    extra_columns: Mapping[str, object] | None = None,
    provenance: Mapping[str, object] | None = None,
) -> Path:
    """Certify ``dataset[idx]`` for every ``idx`` in ``indices`` and write the log ``out_path``.

    ``scales`` is one σ/λ for all inputs or a mapping idx → scale (data-dependent certification,
    e.g. :func:`read_sigma_log`). Rows are in increasing ``idx``; columns are Cohen's
    (``time`` = seconds per input, amortised over each call) then ``scale p_a_lower noise
    precision`` and the constant ``extra_columns`` (e.g. ``{"k": 100}``). ``inputs_per_call``
    inputs share each :func:`~ddrs.smoothing.certify_batch` call (default: enough to fill one
    forward batch with selection draws). ``model`` must already be on ``device``. ``provenance``
    (e.g. the checkpoint's digest) joins the settings that decide whether a partial log resumes.
    Returns the finished log's path; after a failure only ``<out_path>.partial`` exists.
    """
    validate_certify_args(n0=n0, n=n, alpha=alpha, batch_size=batch_size)
    noise = get_noise(noise).name
    device = torch.device(device)
    if len(set(indices)) != len(indices):
        raise ValueError("indices contain duplicates")
    indices = sorted(int(i) for i in indices)
    scale_of = _scale_lookup(scales, indices)
    extra_columns = dict(extra_columns or {})
    clash = set(extra_columns) & set(COHEN_COLUMNS + EXTRA_COLUMNS)
    if clash:
        raise ValueError(f"extra_columns {sorted(clash)} would overwrite standard log columns")
    if inputs_per_call is None:
        inputs_per_call = max(1, math.ceil(batch_size / min(n0, n)))
    elif inputs_per_call <= 0:
        raise ValueError(f"inputs_per_call must be positive, got {inputs_per_call}")

    settings = {
        "noise": noise,
        "n0": n0,
        "n": n,
        "alpha": alpha,
        "seed": seed,
        "precision": precision,
        "scales": sorted(scale_of.items()) if isinstance(scales, Mapping) else float(scales),
        **extra_columns,
        **(provenance or {}),
    }
    writer = LogWriter(out_path, COHEN_COLUMNS + EXTRA_COLUMNS + tuple(extra_columns), settings)
    todo = [i for i in indices if i not in writer.done]
    model.eval()
    with tqdm(
        total=len(indices),
        initial=len(indices) - len(todo),
        disable=not progress,
        desc=f"certify {Path(out_path).name}",
        unit="input",
    ) as bar:
        for start in range(0, len(todo), inputs_per_call):
            group = todo[start : start + inputs_per_call]
            images, labels = zip(*(dataset[i] for i in group), strict=True)
            x = torch.stack(images)
            if device.type == "cuda":
                x = x.pin_memory()
            x = x.to(device, non_blocking=True)
            scale = torch.tensor([scale_of[i] for i in group], dtype=x.dtype)
            generators = input_generators(seed, group, Stream.CERTIFY, device)
            started = time.perf_counter()
            result = certify_batch(
                model,
                x,
                scale,
                num_classes=num_classes,
                noise=noise,
                n0=n0,
                n=n,
                alpha=alpha,
                batch_size=batch_size,
                generator=generators,
                precision=precision,
            )
            seconds = (time.perf_counter() - started) / len(group)
            for i, label, predict, radius, p_a_lower in zip(
                group,
                labels,
                result.predict.tolist(),
                result.radius.tolist(),
                result.p_a_lower.tolist(),
                strict=True,
            ):
                writer.write(
                    {
                        "idx": i,
                        "label": int(label),
                        "predict": predict,
                        "radius": radius,
                        "correct": int(predict == int(label)),
                        "time": seconds,
                        "scale": scale_of[i],
                        "p_a_lower": p_a_lower,
                        "noise": noise,
                        "precision": precision,
                        **extra_columns,
                    }
                )
            bar.update(len(group))
    return writer.finish()
