"""A training run's checkpoint: what it saves every epoch, when it may resume, and fine-tuning's start.

The checkpoint holds the weights with the optimiser, scheduler and gradient-scaler states, the
per-example σ table of Algorithm 2 (DDRS §3.6), the epoch plan's state and the history, so a
resumed run continues bit-identically. It is written in ddrs's own format and read back with
``torch.load(weights_only=True)`` (:mod:`ddrs.models.checkpoint`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import Tensor, nn

from ddrs.errors import CheckpointError
from ddrs.models import load_checkpoint, save_checkpoint
from ddrs.training.config import TrainConfig
from ddrs.training.data_dependent import SigmaTable

#: options that may change between a run and its resumption: they do not change what is trained.
#: ``memory_format`` changes float rounding only. ``device`` changes the rounding and also the
#: smoothing noise's draws (CPU and CUDA generators give different streams for one seed), so a run
#: moved to another device trains the same method from the same seed but not bit-identically to
#: one that stayed. ``feed`` matters only through the augmentation draws, which
#: :func:`check_resumable` compares by themselves
RUNTIME_FIELDS = frozenset(
    {"epochs", "device", "memory_format", "feed", "num_workers", "pin_memory", "activation_checkpoints", "data_root"}
)


def initial_weights(config: TrainConfig) -> dict[str, Tensor]:
    """The weights of ``config.init``, the checkpoint to fine-tune from (DDRS §4.1, §4.2); it must
    hold the run's architecture for the run's dataset."""
    try:
        initial, _ = load_checkpoint(config.init, arch=config.arch, dataset=config.dataset)
    except CheckpointError as error:
        raise CheckpointError(
            f"cannot fine-tune {config.arch!r} on {config.dataset!r} from init checkpoint {config.init}: {error}"
        ) from error
    return initial.state_dict()


def resume_source(out: Path, partial: Path) -> Path | None:
    """The checkpoint a run resumes from: its ``.partial`` file, else a finished one, else none."""
    return next((path for path in (partial, out) if path.is_file()), None)


#: options added after checkpoints were first written, each at the value that trains as the code
#: did before the option existed: what a checkpoint that lacks the option was trained with
LEGACY_OPTIONS = {"sigma_model_mode": "eval", "lr_drop": "paper", "replicate": 0}
#: the same for a method's hyper-parameters, by method
LEGACY_METHOD_OPTIONS = {"macer": {"form": "zhai"}, "stability": {"divergence": "kl"}}


def with_legacy_options(saved: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint's saved config with the options it predates filled in (:data:`LEGACY_OPTIONS`)."""
    saved = {**LEGACY_OPTIONS, **saved}
    if isinstance(saved.get("params"), dict):
        saved["params"] = {**LEGACY_METHOD_OPTIONS.get(saved.get("method"), {}), **saved["params"]}
    return saved


def check_resumable(config: TrainConfig, path: Path, meta: dict[str, Any]) -> None:
    """Refuse to resume from a checkpoint trained with other options, from another init, or past the end."""
    saved, wanted = with_legacy_options(meta.get("config", {})), config.to_dict()
    differing = sorted(
        key for key in set(saved) | set(wanted) if key not in RUNTIME_FIELDS and saved.get(key) != wanted.get(key)
    )
    if differing:
        details = ", ".join(f"{key}: {saved.get(key)!r} there, {wanted.get(key)!r} now" for key in differing)
        raise CheckpointError(f"cannot resume from {path}: it was trained with other options ({details})")
    # checkpoints written before the device feed existed were augmented by the DataLoader
    if "augmented_by" in meta:
        saved_by = meta["augmented_by"]
    else:
        saved_by = None if config.augmented_by is None else "loader"
    if saved_by != config.augmented_by:
        raise CheckpointError(
            f"cannot resume from {path}: its inputs were augmented by the {saved_by} feed, whose draws "
            f"differ from the {config.augmented_by} feed's; set feed: {saved_by} to resume it"
        )
    if meta.get("init") != config.init:
        raise CheckpointError(f"cannot resume from {path}: it was initialised from {meta.get('init')!r}")
    if meta["epoch"] > config.epochs:
        raise ValueError(f"{path} already holds {meta['epoch']} epochs, more than the {config.epochs} asked for")


@dataclass
class RunState:
    """What a training run carries from epoch to epoch beside the weights, and resumes from its
    checkpoint: the optimiser, its learning-rate schedule and loss scale, σᵢ of every training input
    (Algorithm 2), the history of finished epochs, the epochs done and the epoch plan's state."""

    optimizer: Any
    scheduler: Any
    scaler: Any
    table: SigmaTable
    epoch_plan: Any = None
    history: list[dict[str, Any]] = field(default_factory=list)
    epoch: int = 0

    def restore(self, source: Path, config: TrainConfig, model: nn.Module) -> None:
        """Load the checkpoint at ``source`` into ``model`` and this state, if this run may resume
        from it; else a :class:`CheckpointError` that names the file and how to start over."""
        try:
            saved, meta = load_checkpoint(source, arch=config.arch, dataset=config.dataset)
            check_resumable(config, source, meta)
        except CheckpointError as error:
            raise CheckpointError(
                f"{error}. This run resumes from {source}: to train from scratch instead, delete or move "
                "it, or write the run to another output"
            ) from error
        if len(meta["sigma_table"]) != len(self.table):
            raise CheckpointError(
                f"{source} has {len(meta['sigma_table'])} σᵢ but the training set has {len(self.table)} examples"
            )
        model.load_state_dict(saved.state_dict())
        self.optimizer.load_state_dict(meta["optimizer"])
        self.scheduler.load_state_dict(meta["scheduler"])
        if meta["scaler"]:  # empty when saved by a disabled scaler (fp16 begun off CUDA): a fresh scale
            self.scaler.load_state_dict(meta["scaler"])
        self.table = SigmaTable(meta["sigma_table"])
        self.history, self.epoch = list(meta["history"]), meta["epoch"]
        if self.epoch_plan is not None:
            self.epoch_plan.load_state_dict(meta.get("epoch_plan", {}))

    def save(self, path: Path, config: TrainConfig, model: nn.Module) -> None:
        """Write the checkpoint after :attr:`epoch` epochs."""
        states = {
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
        }
        if self.epoch_plan is not None:
            states["epoch_plan"] = self.epoch_plan.state_dict()
        save_checkpoint(
            path,
            model,
            arch=config.arch,
            dataset=config.dataset,
            method=config.method,
            train_mode=config.train_mode,
            sigma=float(config.sigma),
            noise=config.noise_name,
            scale=config.initial_sigma,
            epoch=self.epoch,
            config=config.to_dict(),
            init=config.init,
            augmented_by=config.augmented_by,
            sigma_table=self.table.values.clone(),
            history=self.history,
            **states,
        )
