"""Consistency regularization of the m noisy predictions (Jeong & Shin 2020), alone and with SmoothAdv.

The loss over m noisy copies x + δᵢ of each input, with p̂ᵢ = softmax f(x + δᵢ) and p̄ their mean:

    (1/m) Σᵢ CE(f(x + δᵢ), y)  +  λ · consistency(p̂₁, …, p̂ₘ)  +  η · H(p̄)

as in their code (``consistency.py``, ``loss='default'``: "All the values in the paper are
reproducible with this option"). ``consistency`` is named by what it computes:

- ``mean_kl``: (1/m) Σᵢ KL(p̄ ‖ p̂ᵢ). With η > 0 this is their ``default`` loss, which the
  supplement's Table 4 files under "Cross-entropy" (MNIST σ = 1.0, λ = 5: ACR 1.740, the main
  table's + Consistency value; its λ rows equal Table 6's); with η = 0 their ``kl`` option,
  Table 4's "KL-divergence" rows;
- ``mean_cross_entropy``: (1/m) Σᵢ −Σ_c p̄_c log p̂ᵢ,c = ``mean_kl`` + H(p̄); with η = 0 their
  ``xent`` option, i.e. ``mean_kl`` with η = λ;
- ``pairwise_mse``: the squared ℓ2 distance ‖p̂ᵢ − p̂ⱼ‖² averaged over the pairs i < j — their
  ``mse`` (Table 4's "MSE") compares the first two draws, which is the same for m = 2.

Nothing is detached: p̄ carries gradients, as in their code. Every term is averaged over the batch.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from ddrs.methods import DIVERGENCES, ConsistencyParams, SmoothAdvConsistencyParams
from ddrs.training.losses import (
    GAUSSIAN,
    chunked_copies_logits,
    copies_cross_entropy,
    noise_copies,
    noisy_copies,
    smoothadv_attack,
    smoothadv_radius,
)


def mean_prediction_entropy(logits: Tensor) -> Tensor:
    """H(p̄) per input for ``(B, m, C)`` logits, with log p̄ clamped at 1e-20 as in their ``entropy``."""
    mean = F.softmax(logits, dim=-1).mean(dim=1)
    return -(mean * mean.clamp_min(1e-20).log()).sum(dim=1)


def consistency_term(logits: Tensor, divergence: str) -> Tensor:
    """The consistency of the m predictions per input, ``(B,)``, for ``(B, m, C)`` logits (module docstring)."""
    log_probs = F.log_softmax(logits, dim=-1)
    if divergence == "mean_kl":
        # KL(p̄ ‖ p̂ᵢ) from log p̄ = logsumexp_i log p̂ᵢ − log m: a class whose p̄ underflows to 0 adds 0
        # with a finite gradient, where kl_div on p̄ itself differentiates 0·log 0 to NaN
        log_mean = torch.logsumexp(log_probs, dim=1, keepdim=True) - math.log(logits.shape[1])
        divergences = F.kl_div(log_probs, log_mean.expand_as(log_probs), reduction="none", log_target=True)
        return divergences.sum(dim=-1).mean(dim=1)
    probs = F.softmax(logits, dim=-1)
    mean = probs.mean(dim=1, keepdim=True)
    if divergence == "mean_cross_entropy":
        return -(mean * log_probs).sum(dim=-1).mean(dim=1)
    if divergence == "pairwise_mse":
        m = logits.shape[1]
        if m < 2:
            raise ValueError("the pairwise_mse consistency term needs m >= 2 noisy draws")
        first, second = torch.triu_indices(m, m, offset=1, device=logits.device)
        return (probs[:, first] - probs[:, second]).pow(2).sum(dim=-1).mean(dim=1)
    raise ValueError(f"unknown divergence {divergence!r}; choose one of {list(DIVERGENCES)}")


def consistency_objective(logits: Tensor, y: Tensor, lam: float, eta: float, divergence: str) -> Tensor:
    """Mean CE over the copies + λ·consistency + η·H(p̄), from ``(B, m, C)`` logits."""
    regularizer = lam * consistency_term(logits, divergence) + eta * mean_prediction_entropy(logits)
    return copies_cross_entropy(logits, y) + regularizer.mean()


def consistency_loss(model, x, y, sigma, generator, params: ConsistencyParams, epoch=0) -> Tensor:
    """Gaussian + Consistency (Jeong & Shin 2020): m draws at σᵢ per input."""
    points = noisy_copies(GAUSSIAN, x, sigma, params.m, generator)
    logits = chunked_copies_logits(model, points, params.draws_per_pass)
    return consistency_objective(logits, y, params.lam, params.eta, params.divergence)


def smoothadv_consistency_loss(model, x, y, sigma, generator, params: SmoothAdvConsistencyParams, epoch=0) -> Tensor:
    """SmoothAdv + Consistency (Jeong & Shin 2020, their ``train_consistency.py --adv-training``):
    SmoothAdv's attack with the m draws as their ``SmoothAdv_PGD`` steps (radius warmed up as
    SmoothAdv's), then the consistency loss on the adversarial point with the same draws."""
    noise = noise_copies(GAUSSIAN, x, sigma, params.m, generator)
    radius = smoothadv_radius(params, epoch)
    adversarial = smoothadv_attack(model, x, y, noise, radius, params.steps, generator, rule="jeong_shin")
    logits = chunked_copies_logits(model, adversarial.unsqueeze(1) + noise, params.draws_per_pass)
    return consistency_objective(logits, y, params.lam, params.eta, params.divergence)
