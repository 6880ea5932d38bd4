"""Import of the published checkpoints of Cohen et al. (2019), SmoothAdv (Salman et al. 2019),
MACER (Zhai et al. 2020) and Yang et al. (2020, ``rs4a``; the uniform-noise models of DDRS Table 4).

Layouts (read from the authors' code):

* Cohen (``locuslab/smoothing``, ``train.py``): ``{'arch', 'state_dict', 'optimizer', 'epoch'}`` of
  ``Sequential(NormalizeLayer(mean, std), net)``, the ImageNet net wrapped in ``DataParallel``
  (keys ``1.conv1.weight`` or ``1.module.conv1.weight``). ``NormalizeLayer`` keeps its statistics
  as plain attributes, so no ``0.*`` keys are stored.
* SmoothAdv (``Hadisalman/smoothing-adversarial``): the same file layout, but the first layer is
  ``InputCenterLayer(mean)``: it subtracts the mean and does *not* divide by the std.
* MACER (``RuntianZ/macer``, ``main.py``): ``{'net': state_dict, 'epoch'}`` of the bare network,
  which sees inputs in [0, 1] with no normalisation.
* rs4a (``tonyduan/rs4a``, ``src/train.py``): ``model.state_dict()`` of the ``src.models.ResNet`` /
  ``WideResNet`` wrapper, whose ``norm`` is a ``DataParallel(NormalizeLayer)`` computing
  ``(x − mu) / exp(log_sig)`` with ``mu`` and ``log_sig`` stored as ``(C, 1, 1)`` parameters, and whose
  ``model`` is the ``DataParallel`` network (torchvision's ``resnet50`` on ImageNet): keys
  ``norm.module.mu``, ``norm.module.log_sig``, ``model.module.*``.

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

#: the first layer each source trained behind: mean/std standardisation, centring only, nothing, or
#: the statistics stored in the file
SOURCES: dict[str, str] = {"cohen": "standardize", "smoothadv": "center", "macer": "none", "rs4a": "stored"}

#: our architecture name → the ``arch`` string the Cohen / SmoothAdv training scripts store
PUBLISHED_ARCH_NAMES = {"resnet110": "cifar_resnet110", "resnet50": "resnet50"}

#: names under which a normaliser might store its statistics as ``0.<name>``
_NORMALISER_KEYS = {"mean": "mean", "means": "mean", "std": "std", "sds": "std"}

#: rs4a's normaliser parameters without ``DataParallel``'s ``module.`` → as the file names them
_RS4A_NORMALISER_KEYS = {"norm.mu": "norm.module.mu", "norm.log_sig": "norm.module.log_sig"}


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


def _normaliser_stats(source: str, dataset: str) -> tuple[Tensor, Tensor]:
    """The mean and std of the first layer ``source`` trained behind, for a file that does not store them."""
    info = get_info(dataset)
    channels = info.input_shape[0]
    kind = SOURCES[source]
    mean = info.mean if kind in ("standardize", "center") else (0.0,) * channels
    std = info.std if kind == "standardize" else (1.0,) * channels
    return torch.tensor(mean, dtype=torch.float32), torch.tensor(std, dtype=torch.float32)


def _split_sequential(
    state: dict[str, Tensor], path: Path, source: str, mean: Tensor, std: Tensor
) -> tuple[dict[str, Tensor], Tensor, Tensor]:
    """Cohen / SmoothAdv ``Sequential(normaliser, net)`` (keys ``0.*``, ``1.*``) or MACER's bare network,
    whichever ``source`` wrote: a file of the other layout is refused, since its network would
    run behind another normaliser than the one it was trained behind.

    Returns the network's weights and the normaliser's mean and std: ``mean`` / ``std`` unless the
    file stores them as ``0.<name>``.
    """
    wrapped = all(key.split(".", 1)[0] in ("0", "1") for key in state)
    if wrapped != (SOURCES[source] != "none"):
        found, other = ("Sequential(normaliser, net)", "cohen or smoothadv") if wrapped else ("bare network", "macer")
        raise CheckpointError(
            f"{path} holds a {found}, the layout of {other} checkpoints, not of {source}'s: "
            f"import it as its own source (--method or --source), or its network runs behind the wrong normaliser"
        )
    if not wrapped:  # MACER's bare network
        return state, mean, std
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
    return {key[2:]: value for key, value in state.items() if key.startswith("1.")}, mean, std


def _split_rs4a(
    state: dict[str, Tensor], path: Path, shape: tuple[int, ...]
) -> tuple[dict[str, Tensor], Tensor, Tensor]:
    """rs4a's ``norm`` / ``model`` wrapper (``module.`` already dropped): the network's weights, ``mu``
    and ``exp(log_sig)``, so that our ``(x − mean) / std`` computes rs4a's ``(x − mu) / exp(log_sig)``.

    ``shape`` is the ``(C, 1, 1)`` shape rs4a's ``NormalizeLayer`` has for the dataset's images.
    """
    missing = [stored for key, stored in _RS4A_NORMALISER_KEYS.items() if key not in state]
    foreign = sorted(key for key in state if key not in _RS4A_NORMALISER_KEYS and not key.startswith("model."))
    if missing or foreign:
        raise CheckpointError(
            f"{path} is not an rs4a checkpoint (keys norm.module.mu, norm.module.log_sig, model.module.*): "
            f"missing {missing}, unexpected keys {foreign[:5]}"
        )
    for key, stored in _RS4A_NORMALISER_KEYS.items():
        if tuple(state[key].shape) != shape:
            raise CheckpointError(
                f"{path} stores {stored} of shape {tuple(state[key].shape)}, "
                f"but rs4a's NormalizeLayer for these images has shape {shape}"
            )
    net_state = {key.removeprefix("model."): value for key, value in state.items() if key.startswith("model.")}
    return net_state, state["norm.mu"].float(), state["norm.log_sig"].float().exp()


def import_published(
    path: str | os.PathLike, arch: str, dataset: str, source: str = "cohen"
) -> tuple[nn.Module, dict[str, Any]]:
    """Load a published ``source`` checkpoint (cohen, smoothadv, macer, rs4a) into ``build_model(arch, dataset)``.

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
    normaliser = model[0]
    if SOURCES[source] == "stored":
        net_state, mean, std = _split_rs4a(state, path, tuple(normaliser.mean.shape))
    else:
        net_state, mean, std = _split_sequential(state, path, source, *_normaliser_stats(source, dataset))

    load_state_strictly(model[1], net_state, path, f"architecture {arch!r} on {dataset!r}")
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
