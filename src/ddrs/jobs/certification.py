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
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor
from torch.utils.data import Dataset
from tqdm.auto import tqdm

from ddrs.core.device import BaseClassifier, copy_to
from ddrs.core.noise import get_noise
from ddrs.core.seeds import Stream
from ddrs.core.sequential_pool import certify_sequentially
from ddrs.core.settings import CertifySettings
from ddrs.core.smoothing import certify_batch
from ddrs.core.streams import input_streams, stream_settings
from ddrs.logs.certification_log import COHEN_COLUMNS, LogWriter

#: columns our logs add after Cohen's
EXTRA_COLUMNS = ("scale", "p_a_lower", "noise", "precision")

#: columns a sequential certification log adds after those: forward passes spent on the input,
#: selection included, and whether every radius of the grid was decided before the cap
SEQUENTIAL_COLUMNS = ("draws", "decided")


def _per_input(sigmas: float | Mapping[int, float], indices: Sequence[int]) -> dict[int, float]:
    """idx → σ for every listed input (one σ for all, or a σ log's), each checked positive before any work starts."""
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


@dataclass(frozen=True)
class LogInputs:
    """The test inputs one log certifies: ``dataset[idx]`` for every ``idx`` in ``indices``, at ``sigmas``
    (one σ, λ for uniform noise, or idx → σ from :func:`ddrs.logs.sigma_log.read_sigma_log`)."""

    dataset: Dataset
    indices: Sequence[int]
    sigmas: float | Mapping[int, float]


@dataclass(frozen=True)
class LogFile:
    """What :func:`certify_dataset` writes: the log at ``path``, with the constant ``extra_columns`` after
    ours, and the ``provenance`` (the checkpoint's digest) that, with the settings, decides whether a
    partial log resumes."""

    path: str | os.PathLike
    extra_columns: Mapping[str, object] = field(default_factory=dict)
    provenance: Mapping[str, object] = field(default_factory=dict)


def certify_dataset(classifier: BaseClassifier, inputs: LogInputs, settings: CertifySettings, log: LogFile) -> Path:
    """Certify the test ``inputs`` with CERTIFY's ``settings`` (Cohen et al. 2019, §3.2.2) and write ``log``.

    ``classifier`` is what :func:`ddrs.core.device.prepare_certification` returned at the job's entry.
    Rows are in increasing ``idx``: Cohen's columns (``time`` = seconds per input), then ``scale
    p_a_lower noise precision`` and the log's ``extra_columns``, and in sequential mode
    (:func:`ddrs.core.sequential_pool.certify_sequentially`) :data:`SEQUENTIAL_COLUMNS`. The settings
    and the log's ``provenance`` decide whether a partial log resumes; after a failure only
    ``<path>.partial`` exists (:func:`~ddrs.logs.certification_log.kept_partials`). A progress bar
    shows on stderr (``TQDM_DISABLE=1`` hides it).
    """
    device_settings = classifier.device_settings
    if not device_settings.resolved:
        raise ValueError(f"{device_settings} is not resolved: see ddrs.core.device.prepare_certification")
    if len(set(inputs.indices)) != len(inputs.indices):
        raise ValueError("indices contain duplicates")
    indices = sorted(int(i) for i in inputs.indices)
    one_sigma = None if isinstance(inputs.sigmas, Mapping) else float(inputs.sigmas)
    sigmas = _per_input(inputs.sigmas, indices)
    extra_columns = dict(log.extra_columns)
    if clash := set(extra_columns) & set(COHEN_COLUMNS + EXTRA_COLUMNS + SEQUENTIAL_COLUMNS):
        raise ValueError(f"extra_columns {sorted(clash)} would overwrite standard log columns")
    noise = get_noise(settings.noise).name
    resume_settings = {
        **settings.resume_settings(),
        "memory_format": device_settings.memory_format,
        "compile": device_settings.compile,
        "noise": noise,
        **stream_settings(classifier.device),
        "scales": sorted(sigmas.items()) if one_sigma is None else one_sigma,
        **extra_columns,
        **log.provenance,
    }
    sequential = settings.mode == "sequential"
    columns = COHEN_COLUMNS + EXTRA_COLUMNS + tuple(extra_columns) + (SEQUENTIAL_COLUMNS if sequential else ())
    writer = LogWriter(log.path, columns, resume_settings, indices=indices)
    todo = [i for i in indices if i not in writer.done]
    rows = _Rows(sigmas, {"noise": noise, "precision": settings.precision, **extra_columns}, writer)
    classifier.model.eval()
    job = _Certification(classifier, inputs.dataset, settings, rows)
    with tqdm(
        total=len(indices), initial=len(indices) - len(todo), desc=f"certify {Path(log.path).name}", unit="input"
    ) as bar:
        (_certify_in_pool if sequential else _certify_in_groups)(job, todo, bar)
    return writer.finish()


@dataclass(frozen=True)
class _Rows:
    """Writes a certified input's row: its idx, label, prediction, radius and time, with its σ and the
    log's constant columns."""

    sigmas: Mapping[int, float]
    constant: Mapping[str, object]
    writer: LogWriter

    def write(self, i: int, label, predict: int, radius: float, p_a_lower: float, seconds: float, **more) -> None:
        correct = int(predict == int(label))
        cohen = {"idx": i, "label": int(label), "predict": predict, "radius": radius, "correct": correct}
        self.writer.write(
            {**cohen, "time": seconds, "scale": self.sigmas[i], "p_a_lower": p_a_lower, **self.constant, **more}
        )


@dataclass(frozen=True)
class _Certification:
    """What every group of one :func:`certify_dataset` call shares: the base classifier as prepared for its
    device, the test inputs, CERTIFY's statistics, and the rows' writer (with σ per idx)."""

    classifier: BaseClassifier
    dataset: Dataset
    settings: CertifySettings
    rows: _Rows

    def inputs(self, indices: Sequence[int]) -> tuple[Tensor, Tensor, tuple]:
        """The images of ``indices`` (on the host), their σ (float64) and their labels."""
        images, labels = zip(*(self.dataset[i] for i in indices), strict=True)
        return torch.stack(images), torch.tensor([self.rows.sigmas[i] for i in indices], dtype=torch.float64), labels

    def streams(self, indices: Sequence[int]):
        """The inputs' noise streams, keyed ``(seed, CERTIFY, idx)`` (:func:`ddrs.core.streams.input_streams`)."""
        return input_streams(self.settings.seed, indices, Stream.CERTIFY, self.classifier.device)


def _certify_in_groups(job: _Certification, todo: list[int], bar: tqdm) -> None:
    """Fixed-n CERTIFY of the ``todo`` inputs, ``inputs_per_call`` of the device settings at a time
    (default: as many as fill a batch of the smaller of n0 and n), each from its own stream."""
    settings, device_settings = job.settings, job.classifier.device_settings
    per_call = device_settings.inputs_per_call or max(
        1, math.ceil(device_settings.batch_size / min(settings.n0, settings.n))
    )
    for start in range(0, len(todo), per_call):
        group = todo[start : start + per_call]
        images, sigma, labels = job.inputs(group)
        x = copy_to(images, job.classifier.device)
        started = time.perf_counter()
        result = certify_batch(job.classifier, x, sigma.to(x.dtype), settings, generator=job.streams(group))
        seconds = (time.perf_counter() - started) / len(group)
        found = zip(result.predict.tolist(), result.radius.tolist(), result.p_a_lower.tolist(), strict=True)
        for i, label, (predict, radius, p_a_lower) in zip(group, labels, found, strict=True):
            job.rows.write(i, label, predict, radius, p_a_lower, seconds)
        bar.update(len(group))


def _certify_in_pool(job: _Certification, todo: list[int], bar: tqdm) -> None:
    """Sequential CERTIFY of the ``todo`` inputs through one pool, rows written in ``idx`` order.

    An input that stops early waits until every input before it has stopped, so the log keeps the
    contract's order; a resumed run recomputes the waiting ones, which get the same rows from their
    own streams. ``time`` is the wall time since the previous row was written, so that, as in
    fixed mode, the rows' times add up to the job's and their mean is the seconds per input.
    """
    if not todo:
        return
    x, sigma, labels = job.inputs(todo)
    waiting: dict[int, object] = {}
    next_row = 0
    written = time.perf_counter()
    for position, result in certify_sequentially(job.classifier, x, sigma, job.settings, streams=job.streams(todo)):
        waiting[position] = result
        while next_row in waiting:
            done = waiting.pop(next_row)
            now = time.perf_counter()
            seconds, written = now - written, now
            job.rows.write(
                todo[next_row], labels[next_row], done.predict, done.radius, done.p_a_lower, seconds,
                draws=done.draws, decided=int(done.decided),
            )  # fmt: skip
            next_row += 1
            bar.update(1)
