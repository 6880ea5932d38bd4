"""The resumable certification loop: CERTIFY over a test set, written as a Cohen-format log.

Rows go to ``<out>.partial`` through :class:`ddrs.logs.certification_log.LogWriter` as soon as they are certified; a
rerun skips the ``idx`` already there, and the finished log is renamed into place. Every input's
noise comes from its own stream keyed by ``(seed, idx)`` (:mod:`ddrs.core.streams`), so a row never depends on how the
run was batched or where it was interrupted: a resumed run writes the rows an uninterrupted one
would have written.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import Dataset
from tqdm.auto import tqdm

from ddrs.core.device import copy_to, prepare_certification
from ddrs.core.noise import get_noise
from ddrs.core.seeds import Stream
from ddrs.core.sequential_pool import certify_sequentially
from ddrs.core.settings import CertifySettings, DeviceSettings
from ddrs.core.smoothing import certify_batch
from ddrs.core.streams import input_streams, stream_settings
from ddrs.logs.certification_log import COHEN_COLUMNS, LogWriter

#: columns our logs add after Cohen's
EXTRA_COLUMNS = ("scale", "p_a_lower", "noise", "precision")

#: columns a sequential certification log adds after those: forward passes spent on the input,
#: selection included, and whether every radius of the grid was decided before the cap
SEQUENTIAL_COLUMNS = ("draws", "decided")


def _sigma_lookup(sigmas: float | Mapping[int, float], indices: Sequence[int]) -> dict[int, float]:
    """One positive σ per listed input, checked before any work starts."""
    if isinstance(sigmas, Mapping):
        missing = [i for i in indices if i not in sigmas]
        if missing:
            raise ValueError(f"no sigma for test input idx {missing[0]} ({len(missing)} of {len(indices)} missing)")
        lookup = {i: float(sigmas[i]) for i in indices}
    else:
        lookup = dict.fromkeys(indices, float(sigmas))
    bad = [(i, s) for i, s in lookup.items() if not s > 0 or not math.isfinite(s)]
    if bad:
        raise ValueError(f"sigma must be positive, got {bad[0][1]} for idx {bad[0][0]}")
    return lookup


def certify_dataset(
    model: nn.Module,
    dataset: Dataset,
    indices: Sequence[int],
    sigmas: float | Mapping[int, float],
    out_path: str | os.PathLike,
    settings: CertifySettings,
    *,
    device_settings: DeviceSettings | None = None,
    num_classes: int,
    device: str | torch.device = "cpu",
    extra_columns: Mapping[str, object] | None = None,
    provenance: Mapping[str, object] | None = None,
    progress: bool = True,
) -> Path:
    """Certify ``dataset[idx]`` for every ``idx`` in ``indices`` and write the log ``out_path``.

    ``sigmas`` is one σ (λ for uniform noise) for all inputs or a mapping idx → σ (data-dependent certification,
    e.g. :func:`ddrs.logs.sigma_log.read_sigma_log`); ``settings`` are CERTIFY's. Rows are in
    increasing ``idx``; columns are Cohen's (``time`` = seconds per input, amortised over each
    call) then ``scale p_a_lower noise precision`` and the constant ``extra_columns`` (e.g.
    ``{"k": 100}``). In ``settings.mode == "sequential"`` each input draws until its radii are decided
    (:func:`ddrs.core.sequential_pool.certify_sequentially`), ``time`` is the wall time between rows and
    :data:`SEQUENTIAL_COLUMNS` come last. ``model`` must already be on ``device``. ``device_settings``
    (default: :class:`~ddrs.core.settings.DeviceSettings`'s) say how fast CERTIFY runs there: when not
    yet resolved, they are resolved here for this log (:func:`ddrs.core.device.prepare_certification`
    lays out and compiles ``model``, and probes the batch); resolved ones (a job's, for all its logs)
    come with the model that function returned, run as given. The log's settings record the
    precision, memory format and compilation used. The settings and ``provenance``
    (e.g. the checkpoint's digest) decide whether a partial log resumes. Returns the finished
    log's path; after a failure only ``<out_path>.partial`` exists (inside
    :func:`ddrs.logs.certification_log.kept_partials`, after success too).
    """
    noise = get_noise(settings.noise).name
    device = torch.device(device)
    if len(set(indices)) != len(indices):
        raise ValueError("indices contain duplicates")
    indices = sorted(int(i) for i in indices)
    sigma_of = _sigma_lookup(sigmas, indices)
    extra_columns = dict(extra_columns or {})
    clash = set(extra_columns) & set(COHEN_COLUMNS + EXTRA_COLUMNS + SEQUENTIAL_COLUMNS)
    if clash:
        raise ValueError(f"extra_columns {sorted(clash)} would overwrite standard log columns")
    model.eval()
    classifier, device_settings = model, device_settings or DeviceSettings()
    if not device_settings.resolved:
        sample_shape = tuple(dataset[indices[0]][0].shape) if indices else None
        classifier, device_settings = prepare_certification(
            model, device, device_settings, sample_shape=sample_shape, precision=settings.precision,
            cap=max(settings.n0, settings.n),
        )  # fmt: skip
    batch_size = device_settings.batch_size
    inputs_per_call = device_settings.inputs_per_call or max(1, math.ceil(batch_size / min(settings.n0, settings.n)))

    resume_settings = {
        **settings.resume_settings(),
        "memory_format": device_settings.memory_format,
        "compile": device_settings.compile,
        "noise": noise,
        **stream_settings(device),
        "scales": sorted(sigma_of.items()) if isinstance(sigmas, Mapping) else float(sigmas),
        **extra_columns,
        **(provenance or {}),
    }
    sequential = settings.mode == "sequential"
    columns = COHEN_COLUMNS + EXTRA_COLUMNS + tuple(extra_columns) + (SEQUENTIAL_COLUMNS if sequential else ())
    writer = LogWriter(out_path, columns, resume_settings, indices=indices)
    todo = [i for i in indices if i not in writer.done]

    def row(i: int, label, predict: int, radius: float, p_a_lower: float, seconds: float) -> dict[str, object]:
        return {
            "idx": i,
            "label": int(label),
            "predict": predict,
            "radius": radius,
            "correct": int(predict == int(label)),
            "time": seconds,
            "scale": sigma_of[i],
            "p_a_lower": p_a_lower,
            "noise": noise,
            "precision": settings.precision,
            **extra_columns,
        }

    with tqdm(
        total=len(indices),
        initial=len(indices) - len(todo),
        disable=not progress,
        desc=f"certify {Path(out_path).name}",
        unit="input",
    ) as bar:
        if sequential:
            _certify_in_pool(
                classifier, dataset, todo, sigma_of, settings, device_settings, num_classes, device, writer, row, bar
            )
            return writer.finish()
        for start in range(0, len(todo), inputs_per_call):
            group = todo[start : start + inputs_per_call]
            images, labels = zip(*(dataset[i] for i in group), strict=True)
            x = copy_to(torch.stack(images), device)
            sigma = torch.tensor([sigma_of[i] for i in group], dtype=x.dtype)
            streams = input_streams(settings.seed, group, Stream.CERTIFY, device)
            started = time.perf_counter()
            result = certify_batch(
                classifier, x, sigma, settings, device_settings=device_settings, num_classes=num_classes,
                generator=streams,
            )  # fmt: skip
            seconds = (time.perf_counter() - started) / len(group)
            for i, label, predict, radius, p_a_lower in zip(
                group,
                labels,
                result.predict.tolist(),
                result.radius.tolist(),
                result.p_a_lower.tolist(),
                strict=True,
            ):
                writer.write(row(i, label, predict, radius, p_a_lower, seconds))
            bar.update(len(group))
    return writer.finish()


def _certify_in_pool(
    classifier, dataset, todo, sigma_of, settings, device_settings, num_classes, device, writer, row, bar
) -> None:
    """Sequential CERTIFY of the ``todo`` inputs through one pool, rows written in ``idx`` order.

    An input that stops early waits until every input before it has stopped, so the log keeps the
    contract's order; a resumed run recomputes the waiting ones, which get the same rows from their
    own streams. ``time`` is the wall time since the previous row was written, so that, as in
    fixed mode, the rows' times add up to the job's and their mean is the seconds per input.
    """
    if not todo:
        return
    images, labels = zip(*(dataset[i] for i in todo), strict=True)
    x = torch.stack(images)
    sigma = torch.tensor([sigma_of[i] for i in todo], dtype=torch.float64)
    streams = input_streams(settings.seed, todo, Stream.CERTIFY, device)
    waiting: dict[int, object] = {}
    next_row = 0
    written = time.perf_counter()
    for position, result in certify_sequentially(
        classifier,
        x,
        sigma,
        settings,
        device_settings=device_settings,
        num_classes=num_classes,
        streams=streams,
        device=device,
    ):
        waiting[position] = result
        while next_row in waiting:
            done = waiting.pop(next_row)
            now = time.perf_counter()
            seconds, written = now - written, now
            i = todo[next_row]
            fields = row(i, labels[next_row], done.predict, done.radius, done.p_a_lower, seconds)
            writer.write({**fields, "draws": done.draws, "decided": int(done.decided)})
            next_row += 1
            bar.update(1)
