"""Attacks on a certificate of a smoothed classifier (issue 69): inside the ball B(x, R) a certificate claims,
look for a point x′ where the deployed smoothed classifier answers another class than the certified c.

- :func:`smoothed_pgd`: ℓ2 PGD on the soft smoothed classifier with SmoothAdv's objective (Salman et al. 2019,
  §3: −log of the mean softmax of c over noise draws, :func:`soft_nll`), ``steps`` steps of 2R/``steps`` along the
  normalised gradient (their step size), each followed by the projection onto the ball and the clamp to the
  data domain [0, 1] (Jeong & Shin's ``SmoothAdv_PGD`` order: the clamp, a projection onto a convex set that
  holds x, never moves a point away from x). :func:`ddrs.training.losses.smoothadv_attack` is its training-time
  twin (one radius, a closed ball, draws fixed over the steps). Here each step draws afresh and may have its own
  smoothing scale: ``sigma_at`` gives the deployed classifier's σ at the step's point, held fixed while the
  step's gradient is taken. For DDRS that σ is Algorithm 1's (§3.4), a K-step stochastic ascent that is
  not differentiated through.
- :func:`line_points`: the points of the segment from x toward another point (the nearest training input of
  another class, :func:`nearest_of_other_class`) that lie inside the ball.

Every point lies in the open ball ‖x′ − x‖ < R, where Cohen et al.'s certificate holds (Theorem 1), at
most :data:`OPEN_BALL` · R from x: room for float32 rounding.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from ddrs.core.noise import get_noise
from ddrs.core.sigma import expected_softmax
from ddrs.core.streams import InputStreams

#: the points an attack sends lie within this fraction of the certified radius
OPEN_BALL = 1 - 1e-6
GAUSSIAN = get_noise("gaussian")

#: the deployed classifier's smoothing scale at a batch of points, ``(B,)``
SigmaAt = Callable[[Tensor], Tensor]


def soft_nll(psi: Tensor, label: Tensor) -> Tensor:
    """SmoothAdv's objective per input: −log ψ_c of the soft smoothed classifier ψ ``(B, C)`` (the mean softmax
    over noise draws), clamped at 1e-20 as Salman et al.'s ``attacks.py`` (the m > 1 case of
    :func:`ddrs.training.losses.smoothed_nll`)."""
    return -psi.gather(1, label.view(-1, 1)).squeeze(1).clamp_min(1e-20).log()


def _per_input(values: Tensor, like: Tensor) -> Tensor:
    return values.view(-1, *([1] * (like.ndim - 1)))


def project(center: Tensor, points: Tensor, radius: Tensor) -> Tensor:
    """``points`` pulled toward ``center`` into the ball of radius :data:`OPEN_BALL` · ``radius`` (one per input),
    then clamped to the data domain [0, 1]."""
    delta = points - center
    norms = delta.flatten(1).norm(dim=1)
    limit = radius.to(norms.dtype) * OPEN_BALL
    shrink = torch.where(norms > limit, limit / norms.clamp_min(torch.finfo(norms.dtype).tiny), 1.0)
    return (center + delta * _per_input(shrink, delta)).clamp(0, 1)


def soft_classifier(model: nn.Module, points: Tensor, sigma: Tensor, draws: InputStreams, count: int, precision: str):
    """ψ at ``points`` ``(B, C)``: the mean softmax of the base classifier over ``count`` fresh Gaussian draws of
    each point's stream, at its σ (the soft smoothed classifier of Salman et al. 2019)."""
    return expected_softmax(model, points, sigma, draws.draw_each(GAUSSIAN, count, points), precision)


def smoothed_pgd(
    model: nn.Module,
    x: Tensor,
    label: Tensor,
    radius: Tensor,
    sigma_at: SigmaAt,
    draws: InputStreams,
    *,
    steps: int,
    count: int,
    precision: str = "fp32",
) -> list[tuple[Tensor, Tensor]]:
    """PGD toward another class than ``label`` inside B(``x``, ``radius``) (one radius per input): the path,
    ``steps + 1`` pairs (points, their σ), from ``x`` to the final points.

    Each step estimates the soft smoothed classifier at the current points from ``count`` draws (``draws``, one
    stream per input) at their σ (``sigma_at``), ascends :func:`soft_nll` of ``label`` by 2·radius/``steps``
    along the normalised gradient (an input whose gradient vanishes stays) and projects (:func:`project`). The
    model is used as given (eval mode); only the points receive gradients.
    """
    point, path = x.detach(), []
    step = _per_input(2 * radius.to(x.dtype) / steps, x)
    for _ in range(steps):
        sigma = sigma_at(point)
        path.append((point, sigma))
        moving = point.detach().requires_grad_(True)
        loss = soft_nll(soft_classifier(model, moving, sigma, draws, count, precision), label).sum()
        (gradient,) = torch.autograd.grad(loss, moving)
        norm = _per_input(gradient.flatten(1).norm(dim=1), gradient)
        direction = torch.where(norm > 0, gradient / norm.clamp_min(torch.finfo(norm.dtype).tiny), 0.0)
        point = project(x, point + step * direction, radius)
    path.append((point, sigma_at(point)))
    return path


def line_points(x: Tensor, toward: Tensor, radius: float, count: int) -> Tensor:
    """``count`` points from one input ``x`` toward ``toward``, at distances R·j/``count`` for j = 1 … ``count``
    (R = :data:`OPEN_BALL` · ``radius``), clamped to [0, 1]: ``(count, *x.shape)``."""
    direction = (toward - x).to(torch.float64)
    unit = direction / direction.norm().clamp_min(torch.finfo(torch.float64).tiny)
    distances = radius * OPEN_BALL * torch.arange(1, count + 1, dtype=torch.float64, device=x.device) / count
    points = x.to(torch.float64) + distances.view(-1, *([1] * x.ndim)) * unit
    return points.to(x.dtype).clamp(0, 1)


def nearest_of_other_class(x: Tensor, label: Tensor, images: Tensor, labels: Tensor) -> Tensor:
    """For each input of ``x`` ``(B, ...)``, the index of the nearest (ℓ2) of ``images`` ``(N, ...)`` whose label
    is not the input's ``label``: ``(B,)``."""
    distances = torch.cdist(x.flatten(1).double(), images.flatten(1).double())
    same = labels.view(1, -1).to(label.device) == label.view(-1, 1)
    return distances.masked_fill(same, torch.inf).argmin(dim=1)
