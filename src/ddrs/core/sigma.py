"""Per-input smoothing scale: Algorithm 1 of DDRS (§3.4, Appendix A) and the grid-search baseline (Appendix B).

Algorithm 1 ascends, in the scale σ of one input x, the certified-radius surrogate of Eq. 2/3

    R(σ) = σ/2 · (Φ⁻¹(E_A) − Φ⁻¹(E_B)),   ψ(σ) = 1/n Σᵢ softmax f(x + σ ε̂ᵢ),

with the reparameterisation ε = σ ε̂ (Eq. 3) and n fresh draws of ε̂ per step. For uniform noise
the scale is the half-width λ and R(λ) = λ (E_A − E_B) (Eq. 4). Which entries of ψ are E_A and
E_B, and how far from 0 and 1 they are clamped, is the ``objective``
(:data:`ddrs.core.settings.SIGMA_OBJECTIVES`); the clamp is a parameter of its own:

- ``released`` (the default) is what the authors' released ``OptimzeSigma`` computes (the
  implementation of Algorithm 1 given in Appendix A): E_A and E_B are the top two entries of ψ,
  chosen anew at every step as Algorithm 1's pseudo-code recomputes y_A, each clamped to
  [0.02, 0.98]. An input classified beyond the clamp gets zero gradient through the Φ⁻¹ terms
  (torch.clamp's), so only the σ/2 factor acts and σ rises by exactly
  lr·(Φ⁻¹(0.98) − Φ⁻¹(0.02))/2 ≈ 2.054·lr per step. Appendix H
  shows this growth: Cohen-DS² at σ₀ = 0.12, lr = 1e-4 first certifies radius 0.75 at K = 400
  and 1.0 at K = 700, the steps where σ₀ + 2.054·lr·K crosses r / Φ⁻¹(p̲_A) ≈ r / 3.81 (the
  largest p̲_A that n = 100,000 draws allow at α = 0.001).
- Uniform noise's R(λ) has no Φ⁻¹ and is never clamped (:meth:`ddrs.core.noise.Uniform.objective`), as
  Eq. 4 writes it and the public ℓ1 code computes it: a saturated input's λ rises by lr per step.
- ``fixed_class`` is Eq. 2/3 as written: c_A is the σ₀-smoothed prediction (never the label),
  held fixed; E_A = ψ_{c_A}, E_B = max_{c ≠ c_A} ψ_c, clamped to [1e-6, 1 − 1e-6]. The optimised
  scale then serves the prediction it was chosen for; a saturated input's σ rises by ≈ 4.75·lr
  per step.

Inputs are optimised in a batch, each with its own scale. The batched objective is the *sum* of
the per-input objectives, so one backward pass gives every input the gradient of its own
objective. Noise for input i comes from its own generator, so a batched run and one input at a
time draw bit-identical noise; the two differ only by the batch-size dependence of the model's
float kernels (≈1e-6 relative, see tests/test_sigma.py). The resumable loop over a test set that
writes the σ log is :mod:`ddrs.jobs.sigma_search`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import Tensor, nn

from ddrs.core.device import at_least_float32, autocast
from ddrs.core.noise import SmoothingNoise, add_noise, get_noise
from ddrs.core.settings import GRID_BUDGET, Algorithm1Settings, GridSearchSettings, resolve_clamp
from ddrs.core.smoothing import sample_counts
from ddrs.core.streams import Generators, as_streams


def _noise(noise: str | SmoothingNoise) -> SmoothingNoise:
    return get_noise(noise) if isinstance(noise, str) else noise


def _check_positive(name: str, value) -> None:
    if not torch.all(torch.as_tensor(value) > 0):
        raise ValueError(f"{name} must be > 0, got {value}")


@contextlib.contextmanager
def _model_mode(model: nn.Module, training: bool = False) -> Iterator[None]:
    """Run the base classifier in eval mode (batch-norm on its running statistics, frozen) or in
    training mode (each forward normalised by its own batch and updating the running statistics),
    restoring its mode after."""
    was_training = model.training
    model.train(training)
    try:
        yield
    finally:
        model.train(was_training)


def expected_softmax(model: nn.Module, x: Tensor, sigma: Tensor, unit: Tensor, precision: str) -> Tensor:
    """ψ(σ) = 1/n Σᵢ softmax f(x + σ ε̂ᵢ) per input: ``(B, C)`` from ``unit`` of shape ``(B, n, ...)``."""
    batch, n = unit.shape[:2]
    noisy = add_noise(x.unsqueeze(1), sigma, unit)
    with autocast(x.device, precision):
        logits = model(noisy.flatten(0, 1))
    return torch.softmax(at_least_float32(logits), dim=1).view(batch, n, -1).mean(dim=1)


def radius_objective(
    psi: Tensor,
    sigma: Tensor,
    noise: SmoothingNoise,
    *,
    objective: str = "released",
    clamp: float | None = None,
    c_a: Tensor | None = None,
) -> Tensor:
    """The radius surrogate of Eq. 3 (Eq. 4 for uniform noise) per input, from ψ of shape ``(B, C)``.

    ``released``: E_A, E_B = the top two entries of ψ (Appendix A's ``OptimzeSigma``); ``c_a``
    must be None. ``fixed_class``: E_A = ψ_{c_A}, E_B = max_{c ≠ c_A} ψ_c with c_A = ``c_a``
    (Eq. 2/3). Both are clamped to [clamp, 1 − clamp] before Φ⁻¹ (``clamp=None``: the objective's
    default, :data:`ddrs.core.settings.DEFAULT_CLAMP`); the uniform objective has no Φ⁻¹ and no clamp.
    """
    clamp = resolve_clamp(objective, clamp)
    _check_c_a(objective, c_a, len(psi))
    if objective == "released":
        e_a, e_b = psi.topk(2, dim=1).values.unbind(dim=1)
    else:
        e_a = psi.gather(1, c_a.view(-1, 1)).squeeze(1)
        e_b = psi.masked_fill(nn.functional.one_hot(c_a, psi.shape[1]).bool(), -1.0).max(dim=1).values
    return noise.objective(e_a, e_b, sigma, clamp)


def _check_c_a(objective: str, c_a: Tensor | None, batch: int) -> None:
    """``fixed_class`` needs one c_A per input; ``released`` chooses its classes itself."""
    if objective == "released":
        if c_a is not None:
            raise ValueError("objective 'released' takes the top two classes of ψ at every step; pass c_a=None")
    elif c_a is None:
        raise ValueError("objective 'fixed_class' needs c_a, the σ₀-smoothed prediction of every input")
    elif c_a.shape != (batch,):
        raise ValueError(f"c_a has shape {tuple(c_a.shape)}, expected ({batch},)")


def smoothed_top_class(
    model: nn.Module,
    x: Tensor,
    sigma0: float,
    *,
    num_classes: int,
    noise: str | SmoothingNoise,
    n0: int,
    batch_size: int,
    generator: Generators,
    precision: str = "fp32",
) -> Tensor:
    """c_A = argmax of the σ₀-smoothed classifier's counts over ``n0`` noisy draws (DDRS Eq. 2).

    Labels are never an argument. With one generator per input, each input's counts come from its
    own stream (so c_A does not depend on which inputs share the batch) — see ``sample_counts``.
    """
    _check_positive("sigma0", sigma0)
    with _model_mode(model):
        counts = sample_counts(model, x, sigma0, n0, _noise(noise), batch_size, generator, precision)
    if counts.shape[1] != num_classes:
        raise ValueError(f"the model scores {counts.shape[1]} classes, expected num_classes={num_classes}")
    return counts.argmax(dim=1)


def optimize_sigma(
    model: nn.Module,
    x: Tensor,
    settings: Algorithm1Settings,
    c_a: Tensor | None = None,
    *,
    generator: Generators,
    sigma0: float | Tensor | None = None,
    batch_statistics: bool = False,
) -> Tensor:
    """OptimizeSigma (DDRS Algorithm 1) for a batch: σ after every K in ``steps``, shape ``(len(steps), B)``.

    Stochastic gradient ascent σ ← σ + lr·∇R(σ) on Eq. 3 (Eq. 4: λ for uniform noise) with the
    reparameterisation ε = σ·ε̂ and ``n`` fresh draws of ε̂ per step, starting at ``settings.sigma0``
    or at ``sigma0`` when given (one value per input, as in Algorithm 2). ``settings``
    (:class:`~ddrs.core.settings.Algorithm1Settings`, checked when built) hold ``steps``, ``n``, ``lr``,
    ``noise``, the bounds and ``precision``; its ``objective`` and ``clamp`` choose E_A
    and E_B (:func:`radius_objective`): ``released`` (default, Appendix A) re-picks the top two
    classes of ψ at every step and takes ``c_a=None``; ``fixed_class`` (Eq. 2/3) holds ``c_a``.
    After each step σ is projected onto [``min_sigma``, ``max_sigma``]. One run to max(steps)
    yields every snapshot; K = 0 is σ₀. Only σ receives gradients: the model runs in eval mode
    and its parameters are untouched. ``batch_statistics`` runs it in training mode instead, as
    the DDRS training scripts' ``get_sigma`` does inside Algorithm 2: batch-norm normalises each
    forward by its noisy batch and updates its running statistics (``TrainConfig.sigma_model_mode``).
    """
    noise, steps, objective, clamp = _noise(settings.noise), list(settings.steps), settings.objective, settings.clamp
    sigma0 = settings.sigma0 if sigma0 is None else sigma0
    _check_positive("sigma0", sigma0)
    batch = len(x)
    _check_c_a(objective, c_a, batch)
    c_a = None if c_a is None else c_a.to(x.device)
    sigma = torch.as_tensor(sigma0, dtype=x.dtype, device=x.device).expand(batch).clone()
    snapshots = x.new_empty(len(steps), batch)
    streams = as_streams(generator, batch)
    # one autocast region around all K steps: its cache keeps the low-precision weights across steps
    with _model_mode(model, batch_statistics), autocast(x.device, settings.precision):
        for k in range(steps[-1] + 1):
            if k in steps:
                snapshots[steps.index(k)] = sigma
            if k == steps[-1]:
                break
            unit = streams.draw_each(noise, settings.n, x)
            sigma_var = sigma.detach().requires_grad_(True)
            psi = expected_softmax(model, x, sigma_var, unit, settings.precision)
            radius = radius_objective(psi, sigma_var, noise, objective=objective, clamp=clamp, c_a=c_a)
            (gradient,) = torch.autograd.grad(radius.sum(), sigma_var)
            sigma = (sigma + settings.lr * gradient).clamp(min=settings.min_sigma, max=settings.max_sigma)
    return snapshots


def grid_for_budget(low: float, high: float, n: int, budget: int = GRID_BUDGET) -> Tensor:
    """Appendix B's grid: ``budget // n`` evenly spaced scales over [low, high], so grid size · n = budget."""
    _check_positive("low", low)
    if high <= low:
        raise ValueError(f"grid interval [{low}, {high}] is empty")
    if not 1 <= n <= budget:
        raise ValueError(f"n must be in [1, {budget}], got {n}")
    return torch.linspace(low, high, budget // n, dtype=torch.float64)


def grid_search_sigma(
    model: nn.Module,
    x: Tensor,
    settings: GridSearchSettings,
    c_a: Tensor | None = None,
    *,
    generator: Generators,
) -> Tensor:
    """Appendix B baseline (Eq. 5): the grid scale with the largest Monte-Carlo objective, shape ``(B,)``.

    Each scale of ``settings.grid`` (:class:`~ddrs.core.settings.GridSearchSettings`, checked when
    built) is scored with ``n`` fresh draws of ε̂ per input, on the objective Algorithm 1 ascends
    (same ``objective``, ``clamp`` and ``c_a`` rules as :func:`optimize_sigma`); ties go to the
    smaller scale. The chosen scales are the grid's own float64 values (a σ log then records 0.12,
    not its float32 rounding 0.11999999731779099).
    """
    noise, n, objective, clamp = _noise(settings.noise), settings.n, settings.objective, settings.clamp
    grid = torch.as_tensor(settings.grid, dtype=torch.float64, device=x.device)
    batch = len(x)
    _check_c_a(objective, c_a, batch)
    c_a = None if c_a is None else c_a.to(x.device)
    best_value = torch.full((batch,), -torch.inf, device=x.device)
    best_index = torch.zeros(batch, dtype=torch.long, device=x.device)
    streams = as_streams(generator, batch)
    with _model_mode(model), torch.no_grad():
        for index, value in enumerate(grid.to(x.dtype)):
            sigma = value.expand(batch)
            psi = expected_softmax(model, x, sigma, streams.draw_each(noise, n, x), settings.precision)
            radius = radius_objective(psi, sigma, noise, objective=objective, clamp=clamp, c_a=c_a).float()
            better = radius > best_value
            best_value = torch.where(better, radius, best_value)
            best_index = torch.where(better, index, best_index)
    return grid[best_index]
