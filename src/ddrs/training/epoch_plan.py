"""The epoch-level hook a registry entry may name (``Method.epoch_plan``): which inputs an epoch visits.

A method such as Sun et al.'s (2024, §5) does not only change the loss: it drops training inputs
and samples the rest with weights. The trainer stays method-agnostic: before every epoch it asks
the method's plan for the dataset indices to visit, and it saves the plan's state in the training
checkpoint so that a resumed run visits exactly what an uninterrupted one would.
"""

from __future__ import annotations

from typing import Any, Protocol

from torch import Tensor, nn
from torch.utils.data import Dataset


class EpochPlan(Protocol):
    """Built once per training run as ``Plan(params, config, device)`` (the method's hyper-parameters,
    the :class:`~ddrs.training.config.TrainConfig`, the training device)."""

    def plan(self, epoch: int, model: nn.Module, dataset: Dataset, sigmas: Tensor, seed: int) -> Tensor | None:
        """The dataset indices 0-based ``epoch`` visits, in order (repeats allowed), or ``None`` for
        one shuffled pass over the whole training set.

        ``sigmas`` holds every training input's current σᵢ (σ₀ everywhere at fixed σ); every random
        draw must come from ``seed`` (the trainer derives it from the run's seed and ``epoch``, and
        seeds torch's global generator with it around the call).
        """

    def state_dict(self) -> dict[str, Any]:
        """What the plan carries across epochs: tensors, plain values or ``None`` (checkpoint metadata)."""

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` when a run resumes."""
