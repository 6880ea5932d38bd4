"""Smoothing distributions and the certified radii they grant.

Both distributions take one scale per input (a tensor of shape ``(B,)``) or a single number, so
fixed-σ certification (Cohen et al. 2019) and data-dependent certification (DDRS §3.4, §4.4) run
through the same code. Noise is added in pixel space; normalisation is the model's first layer.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import torch
from torch import Tensor

from ddrs.core.philox import fine_unit_interval, open_unit_interval


def scaled_noise(sigma: Tensor | float, unit: Tensor, *, in_place: bool = False) -> Tensor:
    """ε = σ·ε̂ from draws ``unit`` of the scale-1 member, σ a number or one per row of ``unit``
    (shape ``(B,)``, broadcast over the row's other dimensions); ``in_place`` overwrites ``unit``."""
    sigma = torch.as_tensor(sigma, dtype=unit.dtype, device=unit.device)
    if sigma.ndim:
        if sigma.shape != unit.shape[:1]:
            raise ValueError(f"sigma has shape {tuple(sigma.shape)}, expected ({unit.shape[0]},)")
        sigma = sigma.view(-1, *([1] * (unit.ndim - 1)))
    return unit.mul_(sigma) if in_place else unit * sigma


def add_noise(x: Tensor, sigma: Tensor | float, unit: Tensor, *, in_place: bool = False) -> Tensor:
    """The noisy inputs ``x + σ·ε̂`` (the reparameterisation of DDRS Eq. 3/4), ``x`` broadcast
    against ``unit``: one definition for training, CERTIFY and Algorithm 1 (σ as in :func:`scaled_noise`)."""
    return scaled_noise(sigma, unit, in_place=in_place).add_(x)


class SmoothingNoise(ABC):
    """A family of zero-mean noise distributions indexed by a positive scale."""

    name: str
    #: the ℓp norm of the certificate this distribution grants
    norm: int

    @abstractmethod
    def unit(self, shape: torch.Size, *, generator: torch.Generator | None, device, dtype) -> Tensor:
        """Draw ε̂ from the scale-1 member (N(0, I) or U[-1, 1]^d); ε = σ · ε̂ (DDRS Eq. 3/4)."""

    @abstractmethod
    def from_words(self, words: Tensor) -> Tensor:
        """ε̂ from uint32 words (in int64) of shape ``(..., 2m)``, one value each: the counter-based
        streams' transform (:class:`ddrs.core.streams.PhiloxStreams`)."""

    def perturb(self, x: Tensor, sigma: Tensor | float, generator: torch.Generator | None = None) -> Tensor:
        """Return ``x + σ·ε̂`` with one σ per input (:func:`add_noise`)."""
        return add_noise(x, sigma, self.unit(x.shape, generator=generator, device=x.device, dtype=x.dtype))

    @abstractmethod
    def radius(self, p_a_lower: Tensor, sigma: Tensor | float) -> Tensor:
        """Certified radius from a lower confidence bound on p_A, with p_B ≤ 1 − p_A."""

    @abstractmethod
    def threshold(self, radius: Tensor | float, sigma: Tensor | float) -> Tensor:
        """The least p̲_A whose :meth:`radius` reaches ``radius`` (its inverse in p̲_A; above 1 where
        no p̲_A reaches it): what sequential certification compares its bounds against."""

    @abstractmethod
    def objective(self, e_a: Tensor, e_b: Tensor, sigma: Tensor, clamp: float = 0.0) -> Tensor:
        """The differentiable radius surrogate maximised by Algorithm 1 (DDRS Eq. 3 / Eq. 4), with
        E_A, E_B clamped to [clamp, 1 − clamp] where the surrogate needs them inside (0, 1)."""


class Gaussian(SmoothingNoise):
    """N(0, σ²I): ℓ2 radius σ·Φ⁻¹(p̲_A) (Cohen et al. 2019, Theorem 1 with p̄_B = 1 − p̲_A)."""

    name = "gaussian"
    norm = 2

    def unit(self, shape, *, generator, device, dtype):
        return torch.randn(shape, generator=generator, device=device, dtype=dtype)

    def from_words(self, words):
        """Box–Muller, pairwise: (u₁, u₂) → √(−2 ln u₁)·(cos 2πu₂, sin 2πu₂). u₁ takes the pair's
        first word and the 9 bits u₂ leaves of the second (:func:`~ddrs.core.philox.fine_unit_interval`),
        so the radius's tail is cut only where its mass is negligible (at 7.63)."""
        radius = torch.sqrt(-2.0 * torch.log(fine_unit_interval(words[..., 0::2], words[..., 1::2])))
        angle = (2.0 * math.pi) * open_unit_interval(words[..., 1::2])
        return torch.stack((radius * torch.cos(angle), radius * torch.sin(angle)), dim=-1).flatten(-2)

    def radius(self, p_a_lower, sigma):
        p = torch.as_tensor(p_a_lower, dtype=torch.float64)
        return torch.as_tensor(sigma, dtype=torch.float64) * torch.special.ndtri(p)

    def threshold(self, radius, sigma):
        """Φ(r/σ) (Voráček 2024's target, written ``norm.ppf(r/σ)`` in RS_conf_seq, where Φ is meant)."""
        r = torch.as_tensor(radius, dtype=torch.float64)
        return torch.special.ndtr(r / torch.as_tensor(sigma, dtype=torch.float64))

    def objective(self, e_a, e_b, sigma, clamp=0.0):
        """R(σ) = σ/2 · (Φ⁻¹(E_A) − Φ⁻¹(E_B)) (DDRS Eq. 1 and Eq. 3), E_A and E_B clamped so that Φ⁻¹
        stays finite (the clamp passes no gradient beyond its bounds)."""
        gap = torch.special.ndtri(e_a.clamp(clamp, 1 - clamp)) - torch.special.ndtri(e_b.clamp(clamp, 1 - clamp))
        return sigma / 2 * gap


class Uniform(SmoothingNoise):
    """U[−λ, λ]^d: ℓ1 radius 2λ(p̲_A − ½) = λ(p̲_A − p̄_B) (Yang et al. 2020; DDRS §4.4).

    Its σ is always the half-width λ. Yang et al.'s public code names a uniform
    distribution by its standard deviation σ = λ/√3; convert with :func:`ddrs.core.settings.uniform_half_width`.
    """

    name = "uniform"
    norm = 1

    def unit(self, shape, *, generator, device, dtype):
        return torch.rand(shape, generator=generator, device=device, dtype=dtype) * 2 - 1

    def from_words(self, words):
        return open_unit_interval(words) * 2 - 1

    def radius(self, p_a_lower, sigma):
        p = torch.as_tensor(p_a_lower, dtype=torch.float64)
        return torch.as_tensor(sigma, dtype=torch.float64) * 2 * (p - 0.5)

    def threshold(self, radius, sigma):
        """½ + r/(2λ)."""
        r = torch.as_tensor(radius, dtype=torch.float64)
        return 0.5 + r / (2 * torch.as_tensor(sigma, dtype=torch.float64))

    def objective(self, e_a, e_b, sigma, clamp=0.0):
        """R(λ) = λ · (E_A − E_B) (DDRS Eq. 4), never clamped: it has no Φ⁻¹ to keep finite, and the
        public data-dependent smoothing code for ℓ1 (``ddsmoothing``'s ``L1Certificate.compute_proxy_gap``)
        takes the gap as it is. A clamp would zero the gradient of E_A − E_B wherever E_A > 1 − clamp."""
        return sigma * (e_a - e_b)


NOISES: dict[str, SmoothingNoise] = {noise.name: noise for noise in (Gaussian(), Uniform())}


def get_noise(name: str) -> SmoothingNoise:
    """Look up a smoothing distribution by name (``gaussian`` or ``uniform``)."""
    try:
        return NOISES[name]
    except KeyError:
        raise ValueError(f"unknown noise {name!r}; choose one of {sorted(NOISES)}") from None
