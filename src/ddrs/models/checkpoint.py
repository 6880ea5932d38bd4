"""Our checkpoint format: weights, the normaliser, and plain metadata, loadable with ``weights_only=True``."""

from __future__ import annotations

import os
import pickle
import re
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ddrs.core.device import select_device
from ddrs.errors import CheckpointError
from ddrs.io import atomic_path
from ddrs.models.registry import build_model

FORMAT = "ddrs-checkpoint"
VERSION = 1
_PLAIN = (str, int, float, bool, type(None), Tensor)


def unwrap(model: nn.Module) -> nn.Module:
    """The module under ``DataParallel`` / ``DistributedDataParallel`` / ``torch.compile`` wrappers."""
    while True:
        if isinstance(model, (nn.DataParallel, nn.parallel.DistributedDataParallel)):
            model = model.module
        elif hasattr(model, "_orig_mod"):
            model = model._orig_mod
        else:
            return model


def _check_plain(value: Any, where: str) -> None:
    """Refuse metadata that ``torch.load(weights_only=True)`` could not read back."""
    if isinstance(value, _PLAIN):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, (str, int)):
                raise ValueError(f"checkpoint metadata {where} has a key of type {type(key).__name__}")
            _check_plain(item, f"{where}[{key!r}]")
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_plain(item, f"{where}[{i}]")
        return
    raise ValueError(
        f"checkpoint metadata {where} is a {type(value).__name__}; only str/int/float/bool/None, tensors, "
        "and lists/tuples/dicts of them can be loaded with weights_only=True"
    )


def save_checkpoint(path: str | os.PathLike, model: nn.Module, **meta: Any) -> None:
    """Write ``model``'s weights and ``meta`` to ``path`` atomically.

    ``meta`` must name ``arch`` and ``dataset`` (to rebuild the model); the other usual entries are
    ``method``, ``train_mode``, ``sigma``, ``epoch``, ``config``; anything else of plain types
    (e.g. an optimizer ``state_dict`` for resuming) is kept as well.
    """
    for key in ("arch", "dataset"):
        if not isinstance(meta.get(key), str):
            raise ValueError(f"save_checkpoint({str(path)!r}) needs meta {key}=<str>, got {meta.get(key)!r}")
    _check_plain(meta, "meta")
    state = {k: v.detach().cpu() for k, v in unwrap(model).state_dict().items()}
    with atomic_path(path) as tmp:
        torch.save({"format": FORMAT, "version": VERSION, "state_dict": state, "meta": meta}, tmp)


#: what to do with a checkpoint that cannot be read
REPLACE_IT = "replace it with an intact copy (download it again, or rerun the job that wrote it)"


def read_checkpoint_file(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> Any:
    """``torch.load(path, weights_only=True)``, turning every failure into an error naming the file.

    A file that pickles Python objects beyond tensors and plain containers (old publication
    checkpoints sometimes store e.g. the ``argparse.Namespace``) is refused, never unpickled unsafely.
    """
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"checkpoint {path} is a directory, not a file: name the checkpoint file inside it")
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        refused = re.search(r"Unsupported global: GLOBAL (\S+)", str(error))
        if refused is None:  # torch's own text here advises weights_only=False: not repeated
            raise CheckpointError(
                f"cannot read checkpoint {path}: it is corrupt or not a PyTorch checkpoint (a failed download "
                f"saves e.g. an HTML page); {REPLACE_IT}"
            ) from error
        raise CheckpointError(
            f"cannot read checkpoint {path} with torch.load(weights_only=True): it pickles the Python object "
            f"{refused.group(1)}, which is never unpickled unsafely; in an environment you trust, re-save only "
            "its tensors, e.g. torch.save({'state_dict': checkpoint['state_dict']}, ...)"
        ) from error
    except Exception as error:  # torch raises RuntimeError, EOFError, … for truncated or foreign files
        raise CheckpointError(
            f"cannot read checkpoint {path}: it is truncated or corrupt ({type(error).__name__}: "
            f"{_first_line(error)}); {REPLACE_IT}"
        ) from error


def _first_line(error: BaseException) -> str:
    return next((line.strip() for line in str(error).splitlines() if line.strip()), "")


def load_state_strictly(module: nn.Module, state: dict[str, Tensor], path: Path, what: str) -> None:
    """``module.load_state_dict(state, strict=True)`` with an error naming the file and the first bad keys."""
    expected, found = set(module.state_dict()), set(state)
    missing, unexpected = sorted(expected - found), sorted(found - expected)
    if missing or unexpected:
        raise CheckpointError(
            f"{path} does not fit {what}: {len(missing)} missing keys {missing[:5]}, "
            f"{len(unexpected)} unexpected keys {unexpected[:5]}"
        )
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as error:  # same names, different shapes
        raise CheckpointError(f"{path} does not fit {what}: {error}") from error


def load_checkpoint(
    path: str | os.PathLike,
    arch: str | None = None,
    dataset: str | None = None,
    device: str | torch.device = "cpu",
) -> tuple[nn.Module, dict[str, Any]]:
    """Rebuild the model saved by :func:`save_checkpoint`, in eval mode on ``device``, and its metadata.

    ``arch`` / ``dataset``, when given, must match the checkpoint's; a mismatch, a corrupt or
    truncated file, or a file that is not one of our checkpoints raises ``CheckpointError`` naming
    the file.
    """
    path = Path(path)
    device = select_device(device) if isinstance(device, str) else device
    content = read_checkpoint_file(path)
    if not (isinstance(content, dict) and content.get("format") == FORMAT):
        kind = (
            f"a dict with keys {sorted(map(str, content))[:8]}" if isinstance(content, dict) else type(content).__name__
        )
        raise CheckpointError(
            f"{path} is not a ddrs checkpoint (it holds {kind}); published Cohen / SmoothAdv / MACER / rs4a "
            "checkpoints are converted with `ddrs import-checkpoint`"
        )
    if content.get("version") != VERSION:
        raise CheckpointError(f"{path} has checkpoint format version {content.get('version')!r}, expected {VERSION}")
    meta = content["meta"]
    for key, wanted in (("arch", arch), ("dataset", dataset)):
        if wanted is not None and meta[key] != wanted:
            raise CheckpointError(
                f"{path} holds a {meta['arch']!r} model for dataset {meta['dataset']!r}, "
                f"but {key} {wanted!r} was requested"
            )
    model = build_model(meta["arch"], meta["dataset"])
    load_state_strictly(model, content["state_dict"], path, f"architecture {meta['arch']!r} on {meta['dataset']!r}")
    return model.to(device).eval(), meta
