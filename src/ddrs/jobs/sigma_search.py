"""Writing the σ log: σ*ₓ of every test input, by Algorithm 1 or the grid search (its format and
readers: :mod:`ddrs.logs.sigma_log`).

Rows go through :class:`ddrs.logs.certification_log.LogWriter`, so an interrupted run resumes. Input ``idx`` draws
its noise from streams keyed by ``(seed, stream, idx)`` (:func:`ddrs.core.streams.input_streams`), so a
resumed run equals an uninterrupted one and a row does not depend on which inputs shared its batch.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import torch
from torch import Tensor, nn
from tqdm import tqdm

from ddrs.core.device import prepare_classifier
from ddrs.core.noise import get_noise
from ddrs.core.seeds import Stream
from ddrs.core.settings import SIGMA_BATCH, Algorithm1Settings, GridSearchSettings, SigmaSettings
from ddrs.core.sigma import grid_search_sigma, optimize_sigma, smoothed_top_class
from ddrs.core.streams import InputStreams, input_streams, stream_settings
from ddrs.logs.certification_log import LogWriter
from ddrs.logs.sigma_log import KEY_COLUMNS, TIME_COLUMN, grid_column, sigma_column

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
    batch: int,
    num_classes: int,
    device: torch.device | str,
    provenance: Mapping[str, object] | None,
) -> Path:
    """Shared resumable loop: c_A from σ₀-smoothing, then ``solve`` → one row per input.

    ``batch`` inputs are solved together (speed only); c_A is counted ``max(n0, batch · n)`` noisy
    images per forward pass. The settings and ``provenance`` (e.g. the checkpoint's digest)
    decide whether a partial σ log from an earlier run resumes, with the kind of random stream the
    device draws from (:func:`ddrs.core.streams.stream_settings`).
    """
    if int(batch) != batch or batch < 1:
        raise ValueError(f"batch must be an integer >= 1, got {batch}")
    noise = get_noise(settings.noise)
    device = torch.device(device)
    resume_settings = {**settings.resume_settings(), **stream_settings(device), **(provenance or {})}
    writer = LogWriter(out_path, (*KEY_COLUMNS, *columns, TIME_COLUMN), resume_settings, indices=indices)
    todo = [idx for idx in indices if idx not in writer.done]
    # channels_last weights on CUDA: cuDNN then runs every convolution channels-last (the inputs follow)
    model = prepare_classifier(model.to(device), device, memory_format="auto", compile=False)
    for start in tqdm(range(0, len(todo), batch), desc=Path(out_path).name, disable=None):
        chunk = todo[start : start + batch]
        started = time.perf_counter()
        x = torch.stack([dataset[idx][0] for idx in chunk]).to(device, non_blocking=True)
        c_a = smoothed_top_class(
            model,
            x,
            settings.sigma0,
            num_classes=num_classes,
            noise=noise,
            n0=settings.n0,
            batch_size=max(settings.n0, batch * settings.n),
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


def sigma_log_dataset(
    model: nn.Module,
    dataset,
    indices: Sequence[int],
    out_path: str | os.PathLike,
    settings: Algorithm1Settings | GridSearchSettings,
    *,
    batch: int = SIGMA_BATCH,
    num_classes: int,
    device: torch.device | str = "cpu",
    provenance: Mapping[str, object] | None = None,
) -> Path:
    """σ*ₓ of ``dataset[idx]`` for every idx → the σ log: by Algorithm 1 (a ``sigma_K{K}`` column per
    K) for :class:`Algorithm1Settings`, by the Appendix B grid search (one ``sigma_grid_n{n}``
    column) for :class:`GridSearchSettings`.

    ``batch`` inputs are solved together (speed only). ``provenance`` (e.g. the checkpoint's digest)
    joins the settings that decide whether a partial σ log resumes.
    """
    if isinstance(settings, GridSearchSettings):
        columns = [grid_column(settings.n)]

        def solve(x, c_a, generators):
            return grid_search_sigma(model, x, settings, _held_class(settings, c_a), generator=generators).unsqueeze(0)

    else:
        columns = [sigma_column(k) for k in settings.steps]

        def solve(x, c_a, generators):
            return optimize_sigma(model, x, settings, _held_class(settings, c_a), generator=generators)

    return _run_dataset(
        model,
        dataset,
        indices,
        out_path,
        columns,
        solve,
        settings,
        batch=batch,
        num_classes=num_classes,
        device=device,
        provenance=provenance,
    )
