"""Import of the published checkpoints of Cohen et al. (2019), SmoothAdv (Salman et al. 2019)
and MACER (Zhai et al. 2020).

Layouts (read from the authors' code):

* Cohen (``locuslab/smoothing``, ``train.py``): ``{'arch', 'state_dict', 'optimizer', 'epoch'}`` of
  ``Sequential(NormalizeLayer(mean, std), net)``, the ImageNet net wrapped in ``DataParallel``
  (keys ``1.conv1.weight`` or ``1.module.conv1.weight``). ``NormalizeLayer`` keeps its statistics
  as plain attributes, so no ``0.*`` keys are stored.
* SmoothAdv (``Hadisalman/smoothing-adversarial``): the same file layout, but the first layer is
  ``InputCenterLayer(mean)``: it subtracts the mean and does *not* divide by the std.
* MACER (``RuntianZ/macer``, ``main.py``): ``{'net': state_dict, 'epoch'}`` of the bare network,
  which sees inputs in [0, 1] with no normalisation.

Each file may also carry a ``module.`` prefix from ``DataParallel`` anywhere in its keys.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ddrs.data import get_info
from ddrs.errors import CheckpointError
from ddrs.models.checkpoint import load_state_strictly, read_checkpoint_file
from ddrs.models.registry import build_model

#: the first layer each source trained behind: mean/std standardisation, centring only, or nothing
SOURCES: dict[str, str] = {"cohen": "standardize", "smoothadv": "center", "macer": "none"}

#: our architecture name → the ``arch`` string the Cohen / SmoothAdv training scripts store
PUBLISHED_ARCH_NAMES = {"resnet110": "cifar_resnet110", "resnet50": "resnet50"}

#: names under which a normaliser might store its statistics as ``0.<name>``
_NORMALISER_KEYS = {"mean": "mean", "means": "mean", "std": "std", "sds": "std"}


def _state_dict_of(content: Any, path: Path) -> dict[str, Tensor]:
    """The weights inside a published file: ``state_dict`` (Cohen, SmoothAdv), ``net`` (MACER), or the file itself."""
    if isinstance(content, dict):
        for key in ("state_dict", "net"):
            if isinstance(content.get(key), dict):
                return content[key]
        if content and all(isinstance(v, Tensor) for v in content.values()):
            return content
        keys = sorted(map(str, content))[:8]
        raise CheckpointError(f"{path} has no 'state_dict' or 'net' entry (top-level keys {keys})")
    raise CheckpointError(f"{path} holds a {type(content).__name__}, not a checkpoint dict")


def _without_data_parallel(key: str) -> str:
    """``1.module.conv1.weight`` → ``1.conv1.weight`` (drop every ``module`` path component)."""
    return ".".join(part for part in key.split(".") if part != "module")


def _normaliser_stats(source: str, dataset: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    info = get_info(dataset)
    channels = info.input_shape[0]
    kind = SOURCES[source]
    mean = info.mean if kind in ("standardize", "center") else (0.0,) * channels
    std = info.std if kind == "standardize" else (1.0,) * channels
    return mean, std


def import_published(
    path: str | os.PathLike, arch: str, dataset: str, source: str = "cohen"
) -> tuple[nn.Module, dict[str, Any]]:
    """Load a published ``source`` checkpoint (cohen, smoothadv, macer) into ``build_model(arch, dataset)``.

    The normaliser is set to what ``source`` trained behind (see the module docstring); weights
    load strictly, and any mismatch raises ``CheckpointError`` naming the file and the first
    missing / unexpected keys. Files are read with ``torch.load(weights_only=True)`` only.
    Returns the model in eval mode on the CPU and metadata for :func:`save_checkpoint`.
    """
    if source not in SOURCES:
        raise ValueError(f"unknown checkpoint source {source!r}; choose one of {sorted(SOURCES)}")
    path = Path(path)
    model = build_model(arch, dataset)
    content = read_checkpoint_file(path)
    state = _state_dict_of(content, path)

    published_arch = content.get("arch")  # content is a dict once _state_dict_of accepted it
    if isinstance(published_arch, str) and published_arch != PUBLISHED_ARCH_NAMES.get(arch, arch):
        raise CheckpointError(f"{path} was trained as architecture {published_arch!r}, not {arch!r}")

    state = {_without_data_parallel(key): value for key, value in state.items()}
    mean, std = (torch.tensor(v, dtype=torch.float32) for v in _normaliser_stats(source, dataset))
    if all(key.split(".", 1)[0] in ("0", "1") for key in state):  # Sequential(normaliser, net)
        net_state = {key[2:]: value for key, value in state.items() if key.startswith("1.")}
        for key, value in state.items():
            if not key.startswith("0."):
                continue
            name = _NORMALISER_KEYS.get(key[2:])
            if name is None:
                raise CheckpointError(f"{path} has an unknown normaliser entry {key!r}")
            if name == "mean":
                mean = value.float().flatten()
            else:
                std = value.float().flatten()
    else:  # the bare network (MACER)
        net_state = state

    load_state_strictly(model[1], net_state, path, f"architecture {arch!r} on {dataset!r}")
    normaliser = model[0]
    if mean.numel() != normaliser.mean.numel() or std.numel() != normaliser.std.numel():
        raise CheckpointError(
            f"{path} normalises {mean.numel()} channels, but {dataset!r} images have {normaliser.mean.numel()}"
        )
    normaliser.mean.copy_(mean.view_as(normaliser.mean))
    normaliser.std.copy_(std.view_as(normaliser.std))

    epoch = content.get("epoch")
    meta = {
        "arch": arch,
        "dataset": dataset,
        "method": source,
        "train_mode": "fs",
        "source": source,
        "published_file": str(path),
        "published_arch": published_arch if isinstance(published_arch, str) else None,
        "epoch": epoch if isinstance(epoch, int) else None,
    }
    return model.eval(), meta
