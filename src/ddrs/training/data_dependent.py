"""Data-dependent training (DDRS Algorithm 2, §3.6): a σ per training example, carried across epochs.

The σ table is indexed by dataset index, initialised to σ₀ and updated at every batch by K steps
of Algorithm 1 started from the stored σᵢ ("we initialize σ_xi at each epoch with σ*_xi computed
at the previous epoch"). The method's loss then trains with the updated σᵢ.

Algorithm 1 needs c_A, the class whose radius it enlarges; it never sees the label. Two rules:
``clean`` takes the base classifier's argmax on the clean input — the σ₀ → 0 limit DDRS §3.4
allows ("σ₀ can be zero reducing the smooth classifier to f_θ") and one forward pass;
``smoothed`` takes the smoothed prediction at the stored σᵢ from ``n0`` noisy draws.
"""

from __future__ import annotations

import os

import torch
from torch import Tensor, nn

from ddrs.core.device import autocast
from ddrs.core.sigma import optimize_sigma, smoothed_top_class
from ddrs.io import atomic_path
from ddrs.training.config import TrainConfig


class SigmaTable:
    """σᵢ for every training example (float32 on the CPU), indexed by dataset index."""

    def __init__(self, values: Tensor):
        if values.ndim != 1 or not bool(torch.all(values > 0)):
            raise ValueError("a σ table must be a 1-d tensor of positive σ")
        self.values = values.detach().to(torch.float32).cpu().clone()

    @classmethod
    def constant(cls, size: int, sigma: float) -> SigmaTable:
        return cls(torch.full((size,), float(sigma)))

    def __len__(self) -> int:
        return len(self.values)

    def gather(self, indices: Tensor) -> Tensor:
        return self.values[indices.cpu()]

    def update(self, indices: Tensor, sigmas: Tensor) -> None:
        self.values[indices.cpu()] = sigmas.detach().to(torch.float32).cpu()

    def summary(self) -> dict[str, float]:
        """Mean, min and max σᵢ (for the per-epoch log)."""
        return {
            "sigma_mean": float(self.values.mean()),
            "sigma_min": float(self.values.min()),
            "sigma_max": float(self.values.max()),
        }

    def write_tsv(self, path: str | os.PathLike) -> None:
        """``idx<TAB>sigma`` one row per training example, written atomically."""
        lines = ["idx\tsigma", *(f"{i}\t{s:.9g}" for i, s in enumerate(self.values.tolist()))]
        with atomic_path(path) as tmp:
            tmp.write_text("\n".join(lines) + "\n")


def top_class(
    model: nn.Module,
    x: Tensor,
    sigma: Tensor,
    *,
    rule: str,
    num_classes: int,
    noise: str,
    n0: int,
    generator: torch.Generator,
    precision: str = "fp32",
) -> Tensor:
    """c_A for training-time Algorithm 1, label-free (see the module docstring for the rules)."""
    if rule == "clean":
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad(), autocast(x.device, precision):
                return model(x).argmax(dim=1)
        finally:
            model.train(was_training)
    if rule == "smoothed":
        return smoothed_top_class(
            model,
            x,
            sigma,
            num_classes=num_classes,
            noise=noise,
            n0=n0,
            batch_size=n0,
            generator=generator,
            precision=precision,
        )
    raise ValueError(f"unknown c_A rule {rule!r}; choose 'clean' or 'smoothed'")


def optimize_batch_sigma(
    model: nn.Module,
    x: Tensor,
    sigma: Tensor,
    config: TrainConfig,
    *,
    num_classes: int,
    generator: torch.Generator,
) -> Tensor:
    """σ*ᵢ for one batch: ``config.k`` steps of Algorithm 1 from the stored ``sigma`` (DDRS Algorithm 2).

    Uses the config's n, step α (``sigma_lr``), objective and clamp (:func:`ddrs.core.sigma.radius_objective`),
    lower bound, c_A rule (``fixed_class`` only), precision and the model's mode (``sigma_model_mode``).
    Takes no labels, so σ can never depend on them. K = 0 returns ``sigma`` unchanged (the
    fixed-σ warm-up epochs).
    """
    if config.k == 0:
        return sigma
    c_a = None
    if config.sigma_objective == "fixed_class":
        c_a = top_class(
            model,
            x,
            sigma,
            rule=config.c_a,
            num_classes=num_classes,
            noise=config.noise_name,
            n0=config.c_a_n0,
            generator=generator,
            precision=config.precision,
        )
    snapshots = optimize_sigma(
        model,
        x,
        config.algorithm1,
        c_a,
        generator=generator,
        sigma0=sigma,
        batch_statistics=config.sigma_model_mode == "train",
    )
    return snapshots[-1].detach()
