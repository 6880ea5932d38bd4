"""Device and precision selection shared by certification, Algorithm 1 and training."""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass, replace

import torch
from torch import nn

from ddrs.core.gpu_slots import claim_gpu
from ddrs.core.settings import (  # PRECISIONS: also imported from here by training
    DEFAULT_CERTIFY_BATCH,
    PRECISIONS,
    CertifySettings,
    DeviceSettings,
    check_precision,
    resolve_memory_format,
)

#: the autocast dtype of each name in :data:`ddrs.core.settings.PRECISIONS` (None: no autocast)
PRECISION_DTYPES = dict(zip(PRECISIONS, (None, torch.bfloat16, torch.float16), strict=True))


def at_least_float32(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` widened to float32 if narrower: the bf16/fp16 outputs of an autocast region go
    into softmaxes and losses in float32, and a float64 model's outputs keep their precision."""
    return tensor.to(torch.promote_types(tensor.dtype, torch.float32))


def select_device(name: str = "auto") -> torch.device:
    """``auto`` picks CUDA when present, else the CPU; any torch device string is accepted.

    ``auto`` or ``cuda`` without an index on a machine with several visible GPUs claims a free one
    (:func:`ddrs.core.gpu_slots.claim_gpu`) and makes it the current device, so concurrent jobs get
    their own GPU; an explicit ``cuda:<i>`` is used as given.
    """
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ValueError(f"unknown device {name!r}; choose auto, cpu, cuda or cuda:<index>") from None
    if device.type != "cuda":
        return device
    if not torch.cuda.is_available():
        raise ValueError(f"device {name!r} requested but CUDA is not available")
    if device.index is None:
        count = torch.cuda.device_count()
        index = claim_gpu(count) if count > 1 else 0
        torch.cuda.set_device(index)
        device = torch.device("cuda", index)
    return device


def autocast(device: torch.device, precision: str = "fp32") -> contextlib.AbstractContextManager:
    """Mixed-precision context for the base classifier's forward pass.

    A reduced-precision base classifier is still a fixed function, so its smoothed certificate
    stays sound as long as selection, estimation and Algorithm 1 all use the same precision.
    """
    dtype = PRECISION_DTYPES[check_precision(precision)]
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def make_generator(seed: int, device: torch.device) -> torch.Generator:
    """A generator on ``device`` seeded from the config, so every draw is reproducible."""
    generator = torch.Generator(device=device)
    generator.manual_seed(int(seed))
    return generator


def copy_to(host: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``host`` on ``device`` through a non-blocking copy, page-locked first on CUDA so the copy
    overlaps the work already queued there."""
    if device.type == "cuda":
        host = host.pin_memory()
    return host.to(device, non_blocking=True)


#: the compiled wrapper of each model compiled in this process, so a job compiles its model once
_COMPILED: weakref.WeakKeyDictionary[nn.Module, nn.Module] = weakref.WeakKeyDictionary()


def forked_devices(device: torch.device) -> list[int]:
    """The CUDA devices whose generators ``torch.random.fork_rng`` must save and restore for work on
    ``device`` (none on the CPU)."""
    if device.type != "cuda":
        return []
    return [torch.cuda.current_device() if device.index is None else device.index]


def prepare_classifier(model: nn.Module, device: torch.device, *, memory_format: str, compile: bool) -> nn.Module:
    """The base classifier as CERTIFY runs it: in ``memory_format`` (resolved on ``device``), compiled if asked.

    ``channels_last`` converts the weights in place (the function they compute is unchanged).
    ``compile`` wraps ``model`` in ``torch.compile`` once per process: a later call with the same
    model (the next K snapshot, the next log of the job) returns the same compiled module.
    """
    if resolve_memory_format(memory_format, device.type) == "channels_last":
        model.to(memory_format=torch.channels_last)
    if not compile:
        return model
    if model not in _COMPILED:
        _COMPILED[model] = torch.compile(model)
    return _COMPILED[model]


def batch_for_memory(free_bytes: int, bytes_per_draw: float, *, fraction: float, cap: int, multiple: int = 64) -> int:
    """The largest forward batch using ``fraction`` of ``free_bytes``: a multiple of ``multiple``, in [1, cap]."""
    if bytes_per_draw <= 0:
        raise ValueError(f"bytes_per_draw must be positive, got {bytes_per_draw}")
    batch = int(fraction * free_bytes / bytes_per_draw)
    if batch >= multiple:
        batch -= batch % multiple
    return max(1, min(batch, cap))


def auto_batch_size(
    model: nn.Module,
    sample_shape: tuple[int, ...],
    device: torch.device,
    *,
    precision: str = "fp32",
    memory_format: str = "auto",
    cap: int = 100_000,
    fraction: float = 0.5,
    probe: int = 64,
) -> int:
    """CERTIFY's forward batch when the user gives none: from free memory on CUDA, else Cohen's 400 (as before).

    On CUDA one probe forward pass of ``probe`` noisy copies measures the peak memory per copy; the
    batch then fills ``fraction`` of the free memory (:func:`batch_for_memory`), at most ``cap``.
    """
    if device.type != "cuda":
        return DEFAULT_CERTIFY_BATCH
    channels_last = resolve_memory_format(memory_format, device.type) == "channels_last" and len(sample_shape) == 3
    x = torch.zeros((probe, *sample_shape), device=device)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    with torch.inference_mode(), autocast(device, precision):
        model(x)
    torch.cuda.synchronize(device)
    per_draw = max(torch.cuda.max_memory_allocated(device) - before, 1) / probe
    free, _ = torch.cuda.mem_get_info(device)
    return batch_for_memory(free, per_draw, fraction=fraction, cap=cap)


@dataclass(frozen=True)
class BaseClassifier:
    """The base classifier f of CERTIFY (Cohen et al. 2019, §3.2) as a job runs it: the ``model`` on
    ``device``, the ``num_classes`` it scores, and the :class:`~ddrs.core.settings.DeviceSettings` it runs
    under. :func:`prepare_certification` lays the model out and resolves the settings for ``device``; the
    layers below a job's entry take the record it returns as it is."""

    model: nn.Module
    num_classes: int
    device: torch.device
    device_settings: DeviceSettings


def prepare_certification(
    classifier: BaseClassifier, settings: CertifySettings, sample_shape: tuple[int, ...] | None
) -> BaseClassifier:
    """``classifier`` with its device settings resolved once for its device, at a job's entry.

    The memory format becomes concrete and the model is laid out in it, compiled if asked
    (:func:`prepare_classifier`); a batch of None is probed from free memory with the laid-out,
    uncompiled model on inputs of ``sample_shape`` in ``settings.precision`` (:func:`auto_batch_size`,
    at most max(n0, n) of ``settings``; :data:`~ddrs.core.settings.DEFAULT_CERTIFY_BATCH` when there
    are no inputs). Returns ``classifier`` with the model to run and the resolved settings
    (:attr:`~ddrs.core.settings.DeviceSettings.resolved`).
    """
    model, device, device_settings = classifier.model, classifier.device, classifier.device_settings
    memory_format = resolve_memory_format(device_settings.memory_format, device.type)
    prepared = prepare_classifier(model, device, memory_format=memory_format, compile=device_settings.compile)
    batch_size = device_settings.batch_size
    if batch_size is None:
        batch_size = DEFAULT_CERTIFY_BATCH
        if sample_shape is not None:  # ``model`` is laid out in place; ``prepared`` may be its compiled wrapper
            batch_size = auto_batch_size(
                model, sample_shape, device, precision=settings.precision, memory_format=memory_format,
                cap=max(settings.n0, settings.n),
            )  # fmt: skip
    resolved = replace(device_settings, batch_size=batch_size, memory_format=memory_format)
    return replace(classifier, model=prepared, device_settings=resolved)
