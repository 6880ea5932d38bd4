"""The σ log: σ*ₓ of every test input, written by Algorithm 1 or the grid search and read by ``ddrs certify``.

One TSV row per test input in ``idx`` order (docs/architecture.md): ``idx c_a``, the scales, then
``time``. Algorithm 1 writes one column per snapshot K (:func:`sigma_column`: ``sigma_K0
sigma_K100 …``), the Appendix-B grid search one column :func:`grid_column` (``sigma_grid_n{n}``).
``c_a`` is the σ₀-smoothed prediction (DDRS Eq. 2), recorded whichever objective chose the scales;
``time`` is the seconds spent on the input (c_A and the solve, amortised over its batch, as the
certification log's ``time``): Appendix F's cost of choosing σ.

Rows go through :class:`ddrs.logs.LogWriter`, so an interrupted run resumes. Input ``idx`` draws
its noise from generators seeded from ``(seed, idx)`` (:mod:`ddrs.seeds`), so a resumed run
equals an uninterrupted one and a row does not depend on which inputs shared its batch.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn
from tqdm import tqdm

from ddrs.device import prepare_classifier
from ddrs.errors import LogFormatError
from ddrs.logs import LogWriter
from ddrs.noise import get_noise
from ddrs.seeds import Stream
from ddrs.settings import Algorithm1Settings, GridSearchSettings, SigmaSettings
from ddrs.sigma import grid_search_sigma, optimize_sigma, smoothed_top_class
from ddrs.streams import InputStreams, input_streams, stream_settings

#: The columns every σ log starts with; the scale columns follow.
KEY_COLUMNS = ("idx", "c_a")
#: The last column of every σ log: seconds spent choosing the input's scales.
TIME_COLUMN = "time"


def sigma_column(k: int) -> str:
    """Name of the σ-log column holding the scale after K = ``k`` steps of Algorithm 1."""
    return f"sigma_K{k}"


def grid_column(n: int) -> str:
    """Name of the σ-log column holding the grid-search scale chosen with ``n`` samples per point."""
    return f"sigma_grid_n{n}"


def read_sigma_log(path: str | os.PathLike, k: int | None = None, *, column: str | None = None) -> dict[int, float]:
    """Per-input scales from a σ log: idx → scale.

    Give the Algorithm-1 step ``k`` (column :func:`sigma_column`) or any other ``column`` (e.g.
    the grid baseline's :func:`grid_column`). Raises :class:`LogFormatError` naming the file when
    the column is absent or a value is not a positive number.
    """
    if (k is None) == (column is None):
        raise ValueError("read_sigma_log needs exactly one of k and column")
    path = Path(path)
    column = sigma_column(k) if column is None else column
    try:
        frame = pd.read_csv(path, sep="\t")
    except FileNotFoundError:
        raise
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise LogFormatError(f"{path}: not a tab-separated σ log ({error})") from None
    if "idx" not in frame.columns or column not in frame.columns:
        available = sorted(str(c) for c in frame.columns if c not in (*KEY_COLUMNS, TIME_COLUMN))
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


#: ``solve(x, c_a, streams)`` → scales ``(columns, B)`` for a batch of inputs.
Solver = Callable[[Tensor, Tensor, InputStreams], Tensor]


def _run_dataset(
    model: nn.Module,
    dataset,
    indices: Sequence[int],
    out_path: str | os.PathLike,
    columns: Sequence[str],
    solve: Solver,
    settings: SigmaSettings,
    *,
    num_classes: int,
    device: torch.device | str,
    provenance: Mapping[str, object] | None,
) -> Path:
    """Shared resumable loop: c_A from σ₀-smoothing, then ``solve`` → one row per input.

    ``settings.batch`` inputs are solved together; c_A is counted ``max(n0, batch · n)`` noisy
    images per forward pass. The settings and ``provenance`` (e.g. the checkpoint's digest)
    decide whether a partial σ log from an earlier run resumes, with the kind of random stream the
    device draws from (:func:`ddrs.streams.stream_settings`).
    """
    noise = get_noise(settings.noise)
    device = torch.device(device)
    resume_settings = {**settings.resume_settings(), **stream_settings(device), **(provenance or {})}
    writer = LogWriter(out_path, (*KEY_COLUMNS, *columns, TIME_COLUMN), resume_settings)
    todo = [idx for idx in indices if idx not in writer.done]
    # channels_last weights on CUDA: cuDNN then runs every convolution channels-last (the inputs follow)
    model = prepare_classifier(model.to(device), device, memory_format="auto", compile=False)
    for start in tqdm(range(0, len(todo), settings.batch), desc=Path(out_path).name, disable=None):
        chunk = todo[start : start + settings.batch]
        started = time.perf_counter()
        x = torch.stack([dataset[idx][0] for idx in chunk]).to(device, non_blocking=True)
        c_a = smoothed_top_class(
            model,
            x,
            settings.sigma0,
            num_classes=num_classes,
            noise=noise,
            n0=settings.n0,
            batch_size=max(settings.n0, settings.batch * settings.n),
            generator=input_streams(settings.seed, chunk, Stream.SELECTION, device),
            precision=settings.precision,
        )
        sigmas = solve(x, c_a, input_streams(settings.seed, chunk, Stream.OPTIMIZE, device)).cpu()
        seconds = (time.perf_counter() - started) / len(chunk)
        for row, idx in enumerate(chunk):
            scales = dict(zip(columns, sigmas[:, row].tolist(), strict=True))
            writer.write({"idx": idx, "c_a": int(c_a[row]), **scales, TIME_COLUMN: seconds})
    return writer.finish()


def _held_class(settings: SigmaSettings, c_a: Tensor) -> Tensor | None:
    """The c_a argument of the solvers: the σ₀-smoothed class for ``fixed_class``, None for ``released``."""
    return c_a if settings.objective == "fixed_class" else None


def optimize_dataset(
    model: nn.Module,
    dataset,
    indices: Sequence[int],
    out_path: str | os.PathLike,
    settings: Algorithm1Settings,
    *,
    num_classes: int,
    device: torch.device | str = "cpu",
    provenance: Mapping[str, object] | None = None,
) -> Path:
    """Run Algorithm 1 on ``dataset[idx]`` for every idx and write the σ log (a ``sigma_K{K}`` column per K).

    ``provenance`` (e.g. the checkpoint's digest) joins the settings that decide whether a
    partial σ log resumes.
    """

    def solve(x, c_a, generators):
        return optimize_sigma(model, x, settings, _held_class(settings, c_a), generator=generators)

    columns = [sigma_column(k) for k in settings.steps]
    return _run_dataset(
        model,
        dataset,
        indices,
        out_path,
        columns,
        solve,
        settings,
        num_classes=num_classes,
        device=device,
        provenance=provenance,
    )


def grid_search_dataset(
    model: nn.Module,
    dataset,
    indices: Sequence[int],
    out_path: str | os.PathLike,
    settings: GridSearchSettings,
    *,
    num_classes: int,
    device: torch.device | str = "cpu",
    provenance: Mapping[str, object] | None = None,
) -> Path:
    """Run the Appendix B grid search on every idx and write the σ log (one ``sigma_grid_n{n}`` column)."""

    def solve(x, c_a, generators):
        return grid_search_sigma(model, x, settings, _held_class(settings, c_a), generator=generators).unsqueeze(0)

    return _run_dataset(
        model,
        dataset,
        indices,
        out_path,
        [grid_column(settings.n)],
        solve,
        settings,
        num_classes=num_classes,
        device=device,
        provenance=provenance,
    )
