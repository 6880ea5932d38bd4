"""ACR-focused Gaussian training (Sun et al. 2024, "Average Certified Radius is a Poor Metric", §5).

Gaussian training with m noise draws per input (Cohen et al. 2019) until E_t, then three
components, each switchable for the ablation of their Table 3. Where E_t falls is
``params.schedule`` (:func:`first_focus_epoch`):

- ``code`` (the default), as their ``code/train.py`` runs it: 0-based epochs (``for epoch in
  range(starting_epoch, args.epochs)``, ``starting_epoch = 0``), the components from epoch
  ``--ds_epoch`` = E_t on (``ds_epochs = [args.ds_epoch]``; ``--ds_epoch 70``: 70 plain epochs), and
  without discarding (their ablation without ``--ds_hard``: ``ds_epochs = [0]``) every component,
  and the sampling with replacement, from the first epoch;
- ``paper``, their Algorithm 2 ("if epoch < E_t … else if epoch = E_t then discard"), epochs counted
  from 1: epochs 1 … E_t − 1 plain, every component from epoch E_t.

The components:

- discard hard inputs (§5.1): once, at epoch E_t, drop the inputs whose p_A — the fraction of
  N = 100 noisy copies labelled correctly — is below p_t;
- reweigh by certified radius (§5.2): at E_t and every 10 epochs after ("every 10 epoch after E_t
  (including E_t)"; their code's ``range(ds_epochs[-1], args.epochs, args.dataset_weight_epoch)``), p̂_A =
  LowerConfBound(C, N = 16, 1 − α) with α = 0.1 (CERTIFY's Clopper–Pearson bound) and weight
  w = max(1, Φ⁻¹(p̂_A) / Φ⁻¹(p̂_min)), where p̂_min is the bound at p_A = p_min = 0.75, i.e. at
  ⌊p_min·N⌋ correct draws. The paper prints Φ⁻¹(p_min); its Figure 4 ("radius divided by the
  value at p_A = 0.75") and its code (``norm.ppf(proportion_confint(clip(p, 0.75, 1)·N, …))``)
  divide by the estimated radius at p_min, which we follow — with the literal Φ⁻¹(0.75) only 15 or
  16 correct draws out of 16 would weigh more than 1;
- every epoch from E_t visits |D| inputs drawn with replacement from the kept ones, uniformly or
  with these weights (Algorithm 2; their ``RandomSampler(replacement=True, num_samples=dataset_num)``
  or ``WeightedRandomSampler``), so the number of gradient steps per epoch does not change (under
  ``paper``, only while discarding or reweighing);
- adaptive attack on the sphere (§5.3, Algorithm 1): each noise draw takes up to T ℓ2 PGD steps of
  size ε on the cross-entropy, stops as soon as the base classifier misclassifies, and is projected
  back to its own norm after every step.

The epoch-level part is :class:`EasyFocusPlan` (the registry's ``epoch_plan``); the attack is in
:func:`easy_focus_loss`. The trainer counts epochs from 0, as their code does.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.data import Dataset

from ddrs.core.device import make_generator
from ddrs.core.seeds import derived_seed
from ddrs.core.smoothing import lower_confidence_bound
from ddrs.methods import EasyFocusParams
from ddrs.training.config import TrainConfig
from ddrs.training.correctness import correct_counts
from ddrs.training.losses import GAUSSIAN, copies_cross_entropy, copies_logits, noise_copies


def adaptive_attack(model: nn.Module, x: Tensor, y: Tensor, noise: Tensor, steps: int, step_size: float) -> Tensor:
    """AdaptiveAdv (Sun et al. 2024, Algorithm 1) on every one of the m noise draws of each input.

    ``noise`` is ``(B, m, *x.shape[1:])``. Each draw δ takes at most ``steps`` steps
    δ ← δ + ε·∇/‖∇‖₂ of the cross-entropy of f(x + δ) and y, each followed by the projection
    δ ← ‖δ₀‖₂·δ/‖δ‖₂ onto the sphere of its original norm (their Appendix A.2); a draw stops, and is
    returned as it is, as soon as f(x + δ) ≠ y. The model runs in eval mode and its parameters
    receive no gradient; returns the attacked noise, detached.
    """
    batch, m = noise.shape[:2]
    per_draw = (batch, m, *([1] * (noise.ndim - 2)))
    radius = noise.flatten(2).norm(dim=2).view(per_draw)
    labels = y.view(-1, 1).expand(batch, m)
    delta = noise.detach()
    active = torch.ones(batch, m, dtype=torch.bool, device=noise.device)
    was_training = model.training
    model.eval()
    try:
        for _ in range(steps):
            delta.requires_grad_(True)
            logits = copies_logits(model, x.unsqueeze(1) + delta)
            active &= logits.argmax(dim=-1) == labels
            if not bool(active.any()):
                break
            loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="sum")
            (grad,) = torch.autograd.grad(loss, delta)
            stepped = delta.detach() + step_size * grad / grad.flatten(2).norm(dim=2).clamp_min(1e-12).view(per_draw)
            stepped = stepped * radius / stepped.flatten(2).norm(dim=2).clamp_min(1e-12).view(per_draw)
            delta = torch.where(active.view(per_draw), stepped, delta.detach())
    finally:
        model.train(was_training)
    return delta.detach()


def first_focus_epoch(params: EasyFocusParams) -> int:
    """The 0-based epoch from which the components are on (see the module docstring):

    - ``code``: E_t with discarding (their ``ds_epochs = [args.ds_epoch]``, 0-based), else 0
      (``ds_epochs = [0]``);
    - ``paper``: E_t − 1, Algorithm 2's epoch E_t counted from 1.
    """
    if params.schedule == "paper":
        return params.start_epoch - 1
    return params.start_epoch if params.discard else 0


def focus_started(params: EasyFocusParams, epoch: int) -> bool:
    """Whether 0-based ``epoch`` trains with the components on (:func:`first_focus_epoch`)."""
    return epoch >= first_focus_epoch(params)


def easy_focus_loss(model, x, y, sigma, generator, params: EasyFocusParams, epoch=0) -> Tensor:
    """Gaussian training with m draws per input at σᵢ, cross-entropy averaged over the draws;
    from epoch E_t on the draws are first attacked by :func:`adaptive_attack` (when ``params.attack``)."""
    noise = noise_copies(GAUSSIAN, x, sigma, params.m, generator)
    if params.attack and focus_started(params, epoch):
        noise = adaptive_attack(model, x, y, noise, params.steps, params.epsilon)
    return copies_cross_entropy(copies_logits(model, x.unsqueeze(1) + noise), y)


def reference_lower_bound(p_min: float, draws: int, alpha: float) -> float:
    """p̂_min: the (1 − α) lower bound on p_A from ⌊p_min·draws⌋ correct draws out of ``draws``.

    It must exceed ½ (a positive certified radius) to normalise the weights; Sun et al. chose
    p_min = 0.75 as the smallest p_A with a positive radius at N = 16, α = 0.1 (bound 0.561).
    """
    count = torch.tensor([math.floor(p_min * draws + 1e-9)])
    bound = float(lower_confidence_bound(count, draws, alpha)[0])
    if not bound > 0.5:
        raise ValueError(
            f"p_min = {p_min} with {draws} draws at α = {alpha} gives a lower bound {bound:.4f} <= 0.5 on p_A, "
            "hence no positive certified radius to normalise the weights by; raise p_min or reweigh_draws"
        )
    return bound


def radius_weights(p_a_lower: Tensor, reference: float) -> Tensor:
    """w = max(1, Φ⁻¹(p̂_A) / Φ⁻¹(p̂_min)) per input (Sun et al. 2024, §5.2), in float64; p̂_A ≤ ½ gives 1."""
    reference_radius = torch.special.ndtri(torch.tensor(reference, dtype=torch.float64))
    return (torch.special.ndtri(p_a_lower.double()) / reference_radius).clamp_min(1.0)


class EasyFocusPlan:
    """Discarding (§5.1) and reweighing (§5.2) as the method's epoch plan (see the module docstring).

    State carried across epochs (and saved in the training checkpoint): ``kept``, the boolean mask of
    the inputs left after discarding, and ``weights``, the sampling weight of every training input
    (0 for discarded ones) from the last update.
    """

    def __init__(self, params: EasyFocusParams, config: TrainConfig, device: torch.device):
        self.params, self.config, self.device = params, config, device
        self.reference = (
            reference_lower_bound(params.p_min, params.reweigh_draws, params.reweigh_alpha) if params.reweigh else None
        )
        self.kept: Tensor | None = None
        self.weights: Tensor | None = None

    def plan(self, epoch: int, model: nn.Module, dataset: Dataset, sigmas: Tensor, seed: int) -> Tensor | None:
        """``None`` (a plain shuffled pass) before E_t, or under the ``paper`` schedule with both
        components off; from E_t on, |D| indices drawn with replacement from the kept inputs,
        uniformly or by weight (under ``code`` uniformly from all inputs when both are off: their
        ``RandomSampler(replacement=True)`` from ``ds_epochs[-1]`` on)."""
        params, size = self.params, len(dataset)
        if not focus_started(params, epoch):
            return None
        if not (params.discard or params.reweigh):
            if params.schedule == "paper":
                return None
            sampler = torch.Generator().manual_seed(derived_seed(seed, 1))
            return torch.randint(size, (size,), generator=sampler)
        noise = make_generator(derived_seed(seed, 0), self.device)
        if self.kept is None:
            everyone = torch.ones(size, dtype=torch.bool)
            if params.discard:
                correct = self._counts(model, dataset, sigmas, everyone, params.discard_draws, noise)
                self.kept = correct.double() / params.discard_draws >= params.threshold
            else:
                self.kept = everyone
            if not bool(self.kept.any()):
                raise ValueError(
                    f"easy_focus discarded every training input at epoch {epoch + 1}: none has p_A >= "
                    f"threshold = {params.threshold} (train longer before start_epoch, or lower the threshold)"
                )
        if len(self.kept) != size:
            raise ValueError(f"the easy_focus state covers {len(self.kept)} inputs, the training set has {size}")
        since = epoch - first_focus_epoch(params)
        if params.reweigh and (self.weights is None or since % params.reweigh_every == 0):
            counts = self._counts(model, dataset, sigmas, self.kept, params.reweigh_draws, noise)
            lower = lower_confidence_bound(counts, params.reweigh_draws, params.reweigh_alpha)
            self.weights = torch.zeros(size, dtype=torch.float64)
            self.weights[self.kept] = radius_weights(lower, self.reference)
        probabilities = self.weights if params.reweigh else self.kept.double()
        sampler = torch.Generator().manual_seed(derived_seed(seed, 1))
        return torch.multinomial(probabilities, size, replacement=True, generator=sampler)

    def _counts(self, model, dataset, sigmas: Tensor, among: Tensor, draws: int, generator) -> Tensor:
        """Correct draws out of ``draws`` for the inputs where ``among`` is true (in index order)."""
        indices = among.nonzero().squeeze(1)
        return correct_counts(
            model,
            dataset,
            indices.tolist(),
            sigmas[indices],
            draws,
            noise=self.config.noise_name,
            generator=generator,
            batch_size=self.config.batch_size,
            device=self.device,
            precision=self.config.precision,
            num_workers=self.config.num_workers,
        )

    def state_dict(self) -> dict[str, Any]:
        return {"kept": self.kept, "weights": self.weights}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.kept, self.weights = state.get("kept"), state.get("weights")
