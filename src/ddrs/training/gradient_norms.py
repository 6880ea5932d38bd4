"""Per-input loss-gradient norms of easy and hard training inputs (Sun et al. 2024, §4.3, Table 1).

Sun et al. take the mean ℓ2 norm of the gradient of a training input's loss with respect to the
model's parameters as the weight a training algorithm gives that input, and compare easy inputs
(p_A > 0.5) with hard ones (p_A < 0.5), p_A being the fraction of noisy copies the base classifier
labels correctly: Gaussian training gives easy inputs 0.45 times the weight of hard ones at σ = 0.5
on CIFAR-10, CAT-RS 4.28 times. Their Table 1 measures "the relative weight ... indicated by each
training algorithm", i.e. each algorithm's own training loss; any registry loss can be measured
(its hyper-parameters and epoch given), Gaussian cross-entropy (``cohen``) being the reference.
Inputs with p_A exactly 0.5 are neither easy nor hard.

Each input's loss is taken alone (a batch of one) with the model in eval mode, so batch-norm uses
its running statistics and a norm never depends on which inputs share a batch. Every noise draw
is seeded per input from ``(seed, idx)``, so a subset of inputs gets the values the whole set would.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
from torch import Tensor, nn
from torch.utils.data import Dataset

from ddrs.core.certificate import EASY_ABOVE
from ddrs.core.device import autocast, make_generator, select_device
from ddrs.core.seeds import StudyStream, derived_seed
from ddrs.core.settings import PRECISIONS
from ddrs.data import load_dataset, subsample_indices
from ddrs.io import atomic_path
from ddrs.methods import get_method
from ddrs.models import load_checkpoint
from ddrs.training.correctness import correct_counts
from ddrs.training.losses import TrainingLoss

#: the leading columns of :func:`write_gradient_norms`'s row; :data:`SUMMARY_COLUMNS` follow
ROW_COLUMNS = ("method", "sigma", "split", "draws")
#: columns of :func:`summarize`'s row
SUMMARY_COLUMNS = (
    "inputs",
    "easy_inputs",
    "hard_inputs",
    "easy_grad_norm",
    "hard_grad_norm",
    "easy_over_hard",
)


@dataclass(frozen=True)
class LossAt:
    """A training method's loss at its hyper-parameters and epoch: what Sun et al. take the gradient of,
    "the relative weight ... indicated by each training algorithm" (§4.3)."""

    loss: TrainingLoss
    params: Any
    epoch: int

    def __call__(self, model: nn.Module, x: Tensor, y: Tensor, sigma: Tensor, generator: torch.Generator) -> Tensor:
        return self.loss(model, x, y, sigma, generator, self.params, self.epoch)


def _generators(seed: int, indices: Sequence[int], stream: StudyStream, device: torch.device) -> list[torch.Generator]:
    return [make_generator(derived_seed(seed, stream, idx), device) for idx in indices]


def per_input_gradient_norms(
    model: nn.Module,
    dataset: Dataset,
    indices: Sequence[int],
    sigma: float,
    *,
    loss: LossAt,
    seed: int,
    device: torch.device,
    precision: str = "fp32",
) -> Tensor:
    """‖∇_θ loss(model, x, y, σ)‖₂ for every ``dataset[idx]`` (float64, CPU, aligned with ``indices``)."""
    weights = [parameter for parameter in model.parameters() if parameter.requires_grad]
    if not weights:
        raise ValueError("the model has no parameter that requires a gradient")
    generators = _generators(seed, indices, StudyStream.GRADIENT, device)
    was_training = model.training
    model.eval()
    norms = torch.empty(len(indices), dtype=torch.float64)
    try:
        for k, idx in enumerate(indices):
            x, y = dataset[idx]
            x, y = x.unsqueeze(0).to(device), torch.tensor([int(y)], device=device)
            with autocast(device, precision):
                value = loss(model, x, y, torch.full((1,), float(sigma), device=device), generators[k])
            grads = torch.autograd.grad(value, weights, allow_unused=True)
            norms[k] = torch.stack([g.double().pow(2).sum() for g in grads if g is not None]).sum().sqrt().item()
    finally:
        model.train(was_training)
    return norms


def summarize(p_a: Tensor, norms: Tensor) -> dict[str, float | int]:
    """Counts and mean gradient norms of easy (p_A > 0.5) and hard (p_A < 0.5) inputs, and their ratio
    (NaN where a group is empty)."""
    easy, hard = p_a > EASY_ABOVE, p_a < EASY_ABOVE

    def mean(group: Tensor) -> float:
        return float(norms[group].mean()) if bool(group.any()) else math.nan

    easy_norm, hard_norm = mean(easy), mean(hard)
    return {
        "inputs": len(p_a),
        "easy_inputs": int(easy.sum()),
        "hard_inputs": int(hard.sum()),
        "easy_grad_norm": easy_norm,
        "hard_grad_norm": hard_norm,
        "easy_over_hard": easy_norm / hard_norm if hard_norm > 0 else math.nan,
    }


def gradient_norm_table(
    model: nn.Module,
    dataset: Dataset,
    indices: Sequence[int],
    sigma: float,
    *,
    loss: LossAt,
    draws: int,
    noise: str,
    batch_size: int,
    seed: int,
    device: torch.device,
    precision: str = "fp32",
) -> tuple[pd.DataFrame, dict[str, float | int]]:
    """Per-input ``idx, label, p_correct, grad_norm`` and the :func:`summarize` row of those inputs."""
    run = {"device": device, "precision": precision}
    sigmas = torch.full((len(indices),), float(sigma))
    generators = _generators(seed, indices, StudyStream.P_CORRECT, device)
    counts = correct_counts(
        model, dataset, indices, sigmas, draws, noise=noise, generator=generators, batch_size=batch_size, **run
    )
    p_a = counts.double() / draws  # p_A of each input's label: the fraction of noisy copies labelled correctly
    norms = per_input_gradient_norms(model, dataset, indices, sigma, loss=loss, seed=seed, **run)
    per_input = pd.DataFrame(
        {
            "idx": list(indices),
            "label": [int(dataset[idx][1]) for idx in indices],
            "p_correct": p_a.numpy(),
            "grad_norm": norms.numpy(),
        }
    )
    return per_input, summarize(p_a, norms)


def write_gradient_norms(
    *,
    checkpoint: str,
    out: str,
    dataset: str,
    sigma: float,
    method: str = "cohen",
    epoch: int | None = None,
    split: str = "train",
    draws: int = 100,
    skip: int = 1,
    max_index: int | None = None,
    batch: int = 400,
    seed: int = 0,
    data_root: str = "data",
    device: str = "auto",
    precision: str = "fp32",
    per_input: str | None = None,
) -> None:
    """Sun et al. (2024) Table 1 for one model (``ddrs gradient-norms``, the ``gradient_norms`` kind of
    ``ddrs job``): the gradient norms of its own loss at ``sigma`` on its easy and hard ``split`` inputs →
    the one-row table ``out`` (:data:`ROW_COLUMNS`, then :data:`SUMMARY_COLUMNS`)."""
    if not sigma > 0:
        raise ValueError(f"--sigma must be > 0, got {sigma}")
    if draws < 1 or batch < 1:
        raise ValueError(f"--draws and --batch must be >= 1, got {draws}, {batch}")
    if precision not in PRECISIONS:
        raise ValueError(f"unknown --precision {precision!r}; choose one of {sorted(PRECISIONS)}")
    trained_method = get_method(method)
    chosen = select_device(device)
    model, meta = load_checkpoint(checkpoint, dataset=dataset, device=chosen)
    trained_with = meta.get("config") if meta.get("method") == trained_method.name else None
    params = trained_method.make_params(trained_with["params"] if trained_with else None, source=str(checkpoint))
    epoch = epoch if epoch is not None else max(0, (meta.get("epoch") or 1) - 1)
    examples = load_dataset(dataset, split, root=data_root, seed=seed, augment=False)
    indices = subsample_indices(len(examples), skip, max_index)
    per_input_table, summary = gradient_norm_table(
        model,
        examples,
        indices,
        sigma,
        loss=LossAt(trained_method.load_loss(), params, epoch),
        draws=draws,
        noise=trained_method.noise,
        seed=seed,
        batch_size=batch,
        device=chosen,
        precision=precision,
    )
    row = dict(zip(ROW_COLUMNS, (method, sigma, split, draws), strict=True)) | summary
    with atomic_path(out) as tmp:
        pd.DataFrame([row]).to_csv(tmp, sep="\t", index=False, na_rep="nan")
    if per_input:
        with atomic_path(per_input) as tmp:
            per_input_table.to_csv(tmp, sep="\t", index=False)
    print(
        f"gradient-norms: {summary['inputs']} {split} inputs, {trained_method.name} loss at σ = {sigma}: "
        f"easy {summary['easy_grad_norm']:.4g} ({summary['easy_inputs']}), hard {summary['hard_grad_norm']:.4g} "
        f"({summary['hard_inputs']}), easy/hard {summary['easy_over_hard']:.4g} -> {out}"
    )
