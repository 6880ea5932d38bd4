"""Device and precision selection shared by certification, Algorithm 1 and training."""

from __future__ import annotations

import contextlib

import torch

from ddrs.gpu_slots import claim_gpu
from ddrs.settings import PRECISIONS, check_precision  # PRECISIONS: also imported from here by training

#: the autocast dtype of each name in :data:`ddrs.settings.PRECISIONS` (None: no autocast)
PRECISION_DTYPES = dict(zip(PRECISIONS, (None, torch.bfloat16, torch.float16), strict=True))


def select_device(name: str = "auto") -> torch.device:
    """``auto`` picks CUDA when present, else the CPU; any torch device string is accepted.

    ``auto`` or ``cuda`` without an index on a machine with several visible GPUs claims a free one
    (:func:`ddrs.gpu_slots.claim_gpu`) and makes it the current device, so concurrent jobs get
    their own GPU; an explicit ``cuda:<i>`` is used as given.
    """
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(name)
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
