"""Per-input smoothing scale: Algorithm 1 of DDRS (§3.4) and the grid-search baseline (Appendix B).

For an input x, c_A is the prediction of the σ₀-smoothed classifier (never the label), and the
scale maximises the certified-radius surrogate with c_A held fixed (Eq. 2/3):

    R(σ) = σ/2 · (Φ⁻¹(E_A(σ)) − Φ⁻¹(E_B(σ))),   E_c(σ) = 1/n Σᵢ softmax_c f(x + σ ε̂ᵢ),

with E_A = E_{c_A} and E_B = max_{c ≠ c_A} E_c; for uniform noise the scale is the half-width λ
and R(λ) = λ (E_A − E_B) (Eq. 4). Algorithm 1's pseudo-code recomputes y_A = argmax ψ at every
step; we follow Eq. 2/3, which fix c_A from σ₀-smoothing, so the optimised scale serves the
prediction it was chosen for.

Inputs are optimised in a batch, each with its own scale. The batched objective is the *sum* of
the per-input objectives, so one backward pass gives every input the gradient of its own
objective. Noise for input i comes from its own generator, so a batched run and one input at a
time draw bit-identical noise; the two differ only by the batch-size dependence of the model's
float kernels (≈1e-6 relative, see tests/test_sigma.py).

The σ log (docs/architecture.md) has columns ``idx c_a sigma_K0 sigma_K100 …``
(:func:`sigma_column`); the grid baseline writes ``idx c_a sigma_grid_n{n}``
(:func:`grid_column`). Per-input noise seeds derive from ``(seed, idx)`` so a resumed run equals
an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import torch
from torch import Tensor, nn
from tqdm import tqdm

from ddrs.device import autocast
from ddrs.logs import LogWriter
from ddrs.noise import SmoothingNoise, get_noise
from ddrs.seeds import Stream, input_generators
from ddrs.smoothing import sample_counts

#: E_A and E_B are clamped to [PROB_EPS, 1 − PROB_EPS] before Φ⁻¹. This keeps the objective finite
#: (|Φ⁻¹| ≤ 4.75) and representable in float32 (whose spacing just below 1 is 6e-8), and is far
#: beyond what a certificate can resolve (n = 100,000 samples bound p_A no tighter than ≈1 − 7e-5).
#: When the classifier is saturated the Φ⁻¹ terms stop contributing gradient and the σ/2 factor
#: pushes σ up — more noise is what a confidently classified input can afford.
PROB_EPS = 1e-6

#: Appendix B: forward + backward over n samples for K steps = 2nK = 200 evaluations (K=100, n=1).
GRID_BUDGET = 200

Generators = torch.Generator | Sequence[torch.Generator]


def sigma_column(k: int) -> str:
    """Name of the σ-log column holding the scale after K = ``k`` steps of Algorithm 1."""
    return f"sigma_K{k}"


def grid_column(n: int) -> str:
    """Name of the σ-log column holding the grid-search scale chosen with ``n`` samples per point."""
    return f"sigma_grid_n{n}"


def _noise(noise: str | SmoothingNoise) -> SmoothingNoise:
    return get_noise(noise) if isinstance(noise, str) else noise


def _check_positive(name: str, value) -> None:
    if not torch.all(torch.as_tensor(value) > 0):
        raise ValueError(f"{name} must be > 0, got {value}")


def check_steps(steps: Sequence[int]) -> list[int]:
    """Validate the snapshot steps K: non-negative integers, returned sorted without repeats."""
    steps = list(steps)
    if not steps:
        raise ValueError("steps must name at least one K")
    for k in steps:
        if int(k) != k or k < 0:
            raise ValueError(f"every K must be an integer >= 0, got {k}")
    return sorted({int(k) for k in steps})


def unit_noise(noise: SmoothingNoise, generator: Generators, batch: int, n: int, like: Tensor) -> Tensor:
    """ε̂ of shape ``(batch, n, *like.shape[1:])``: from one generator, or one generator per input."""
    shape = (n, *like.shape[1:])
    if isinstance(generator, torch.Generator):
        return noise.unit((batch, *shape), generator=generator, device=like.device, dtype=like.dtype)
    if len(generator) != batch:
        raise ValueError(f"got {len(generator)} generators for {batch} inputs")
    return torch.stack([noise.unit(shape, generator=g, device=like.device, dtype=like.dtype) for g in generator])


@contextlib.contextmanager
def _eval_mode(model: nn.Module) -> Iterator[None]:
    """Evaluate the fixed base classifier (BatchNorm statistics frozen), restoring its mode after."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def expected_softmax(model: nn.Module, x: Tensor, scale: Tensor, unit: Tensor, precision: str) -> Tensor:
    """ψ(σ) = 1/n Σᵢ softmax f(x + σ ε̂ᵢ) per input: ``(B, C)`` from ``unit`` of shape ``(B, n, ...)``."""
    batch, n = unit.shape[:2]
    noisy = x.unsqueeze(1) + scale.view(batch, 1, *([1] * (x.ndim - 1))) * unit
    with autocast(x.device, precision):
        logits = model(noisy.flatten(0, 1))
    return torch.softmax(logits.float(), dim=1).view(batch, n, -1).mean(dim=1)


def radius_objective(psi: Tensor, c_a: Tensor, scale: Tensor, noise: SmoothingNoise) -> Tensor:
    """The radius surrogate of Eq. 3 / Eq. 4 per input, with c_A fixed and E_A, E_B clamped."""
    e_a = psi.gather(1, c_a.view(-1, 1)).squeeze(1)
    others = psi.masked_fill(torch.nn.functional.one_hot(c_a, psi.shape[1]).bool(), -1.0)
    e_b = others.max(dim=1).values
    return noise.objective(e_a.clamp(PROB_EPS, 1 - PROB_EPS), e_b.clamp(PROB_EPS, 1 - PROB_EPS), scale)


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
    with _eval_mode(model):
        counts = sample_counts(model, x, sigma0, n0, _noise(noise), batch_size, generator, precision)
    if counts.shape[1] != num_classes:
        raise ValueError(f"the model scores {counts.shape[1]} classes, expected num_classes={num_classes}")
    return counts.argmax(dim=1)


def optimize_sigma(
    model: nn.Module,
    x: Tensor,
    sigma0: float | Tensor,
    c_a: Tensor,
    *,
    steps: Sequence[int],
    n: int = 1,
    lr: float = 1e-4,
    noise: str | SmoothingNoise = "gaussian",
    generator: Generators,
    min_scale: float = 1e-3,
    max_scale: float | None = None,
    precision: str = "fp32",
) -> Tensor:
    """OptimizeSigma (DDRS Algorithm 1) for a batch: σ after every K in ``steps``, shape ``(len(steps), B)``.

    Stochastic gradient ascent σ ← σ + lr·∇R(σ) on Eq. 3 (Eq. 4: λ for uniform noise) with the
    reparameterisation ε = σ·ε̂ and ``n`` fresh draws of ε̂ per step, starting at ``sigma0`` (a
    number, or one value per input as in Algorithm 2). After each step σ is projected onto
    [``min_scale``, ``max_scale``]. One run to max(steps) yields every snapshot; K = 0 is σ₀.
    Only σ receives gradients: the model runs in eval mode and its parameters are untouched.
    """
    noise = _noise(noise)
    steps = check_steps(steps)
    _check_positive("sigma0", sigma0)
    _check_positive("lr", lr)
    _check_positive("min_scale", min_scale)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    batch = len(x)
    if c_a.shape != (batch,):
        raise ValueError(f"c_a has shape {tuple(c_a.shape)}, expected ({batch},)")
    scale = torch.as_tensor(sigma0, dtype=x.dtype, device=x.device).expand(batch).clone()
    c_a = c_a.to(x.device)
    snapshots = x.new_empty(len(steps), batch)
    with _eval_mode(model):
        for k in range(steps[-1] + 1):
            if k in steps:
                snapshots[steps.index(k)] = scale
            if k == steps[-1]:
                break
            unit = unit_noise(noise, generator, batch, n, x)
            scale_var = scale.detach().requires_grad_(True)
            psi = expected_softmax(model, x, scale_var, unit, precision)
            objective = radius_objective(psi, c_a, scale_var, noise)
            (gradient,) = torch.autograd.grad(objective.sum(), scale_var)
            scale = (scale + lr * gradient).clamp(min=min_scale, max=max_scale)
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
    c_a: Tensor,
    *,
    grid: Sequence[float] | Tensor,
    n: int,
    noise: str | SmoothingNoise = "gaussian",
    generator: Generators,
    precision: str = "fp32",
) -> Tensor:
    """Appendix B baseline (Eq. 5): the grid scale with the largest Monte-Carlo objective, shape ``(B,)``.

    Each grid point is scored with ``n`` fresh draws of ε̂ per input, on the same objective as
    Algorithm 1 (c_A fixed); ties go to the smaller scale.
    """
    noise = _noise(noise)
    grid = torch.as_tensor(grid, dtype=x.dtype, device=x.device)
    if grid.ndim != 1 or len(grid) == 0:
        raise ValueError("grid must be a non-empty list of scales")
    _check_positive("every grid scale", grid)
    batch = len(x)
    c_a = c_a.to(x.device)
    best_value = torch.full((batch,), -torch.inf, device=x.device)
    best_scale = x.new_empty(batch)
    with _eval_mode(model), torch.no_grad():
        for value in grid:
            scale = value.expand(batch)
            psi = expected_softmax(model, x, scale, unit_noise(noise, generator, batch, n, x), precision)
            objective = radius_objective(psi, c_a, scale, noise).float()
            better = objective > best_value
            best_value = torch.where(better, objective, best_value)
            best_scale = torch.where(better, scale, best_scale)
    return best_scale


# ---------------------------------------------------------------------------------------------
# The σ log: resumable, one row per test input in idx order.


Solver = Callable[[Tensor, Tensor, list[torch.Generator]], Tensor]


def _run_dataset(
    model: nn.Module,
    dataset,
    indices: Sequence[int],
    out_path: str | os.PathLike,
    columns: Sequence[str],
    solve: Solver,
    *,
    sigma0: float,
    num_classes: int,
    noise: SmoothingNoise,
    n0: int,
    batch: int,
    forward_batch: int,
    seed: int,
    device: torch.device,
    precision: str,
    settings: Mapping[str, object],
) -> Path:
    """Shared resumable loop: c_A from σ₀-smoothing, then ``solve`` → one row per input.

    ``batch`` inputs are solved together; c_A is counted ``max(n0, forward_batch)`` noisy images
    per forward pass. ``settings`` decide whether a partial σ log from an earlier run resumes.
    """
    settings = {**settings, "sigma0": sigma0, "n0": n0, "seed": seed, "noise": noise.name, "precision": precision}
    writer = LogWriter(out_path, ("idx", "c_a", *columns), settings)
    todo = [idx for idx in indices if idx not in writer.done]
    model = model.to(device)
    for start in tqdm(range(0, len(todo), batch), desc=Path(out_path).name, disable=None):
        chunk = todo[start : start + batch]
        x = torch.stack([dataset[idx][0] for idx in chunk]).to(device, non_blocking=True)
        c_a = smoothed_top_class(
            model,
            x,
            sigma0,
            num_classes=num_classes,
            noise=noise,
            n0=n0,
            batch_size=max(n0, forward_batch),
            generator=input_generators(seed, chunk, Stream.SELECTION, device),
            precision=precision,
        )
        sigmas = solve(x, c_a, input_generators(seed, chunk, Stream.OPTIMIZE, device)).cpu()
        for row, idx in enumerate(chunk):
            writer.write({"idx": idx, "c_a": int(c_a[row]), **dict(zip(columns, sigmas[:, row].tolist(), strict=True))})
    return writer.finish()


def optimize_dataset(
    model: nn.Module,
    dataset,
    indices: Sequence[int],
    out_path: str | os.PathLike,
    *,
    sigma0: float,
    steps: Sequence[int],
    num_classes: int,
    noise: str = "gaussian",
    n: int = 1,
    lr: float = 1e-4,
    n0: int = 100,
    batch: int = 32,
    seed: int = 0,
    device: torch.device | str = "cpu",
    precision: str = "fp32",
    min_scale: float = 1e-3,
    max_scale: float | None = None,
    provenance: Mapping[str, object] | None = None,
) -> Path:
    """Run Algorithm 1 on ``dataset[idx]`` for every idx and write the σ log (``sigma_K{K}`` columns).

    ``provenance`` (e.g. the checkpoint's digest) joins the settings that decide whether a
    partial σ log resumes.
    """
    steps = check_steps(steps)
    _check_positive("sigma0", sigma0)

    def solve(x, c_a, generators):
        return optimize_sigma(
            model,
            x,
            sigma0,
            c_a,
            steps=steps,
            n=n,
            lr=lr,
            noise=noise,
            generator=generators,
            min_scale=min_scale,
            max_scale=max_scale,
            precision=precision,
        )

    return _run_dataset(
        model,
        dataset,
        indices,
        out_path,
        [sigma_column(k) for k in steps],
        solve,
        settings={
            "steps": steps,
            "n": n,
            "lr": lr,
            "min_scale": min_scale,
            "max_scale": max_scale,
            **(provenance or {}),
        },
        sigma0=sigma0,
        num_classes=num_classes,
        noise=_noise(noise),
        n0=n0,
        batch=batch,
        forward_batch=batch * n,
        seed=seed,
        device=torch.device(device),
        precision=precision,
    )


def grid_search_dataset(
    model: nn.Module,
    dataset,
    indices: Sequence[int],
    out_path: str | os.PathLike,
    *,
    sigma0: float,
    grid: Sequence[float] | Tensor,
    n: int,
    num_classes: int,
    noise: str = "gaussian",
    n0: int = 100,
    batch: int = 32,
    seed: int = 0,
    device: torch.device | str = "cpu",
    precision: str = "fp32",
    provenance: Mapping[str, object] | None = None,
) -> Path:
    """Run the Appendix B grid search on every idx and write the σ log (one ``sigma_grid_n{n}`` column)."""
    _check_positive("sigma0", sigma0)

    def solve(x, c_a, generators):
        return grid_search_sigma(
            model, x, c_a, grid=grid, n=n, noise=noise, generator=generators, precision=precision
        ).unsqueeze(0)

    return _run_dataset(
        model,
        dataset,
        indices,
        out_path,
        [grid_column(n)],
        solve,
        settings={"grid": [float(g) for g in grid], "n": n, **(provenance or {})},
        sigma0=sigma0,
        num_classes=num_classes,
        noise=_noise(noise),
        n0=n0,
        batch=batch,
        forward_batch=batch * n,
        seed=seed,
        device=torch.device(device),
        precision=precision,
    )
