"""One training loss per method of the registry (:mod:`ddrs.methods`), each taking one σ per example.

Every loss has the signature ``loss(model, x, y, sigma, generator, params, epoch) -> Tensor``
(a scalar to minimise): ``sigma`` is the ``(B,)`` tensor of σᵢ that Algorithm 2 of DDRS (§3.6)
supplies, or σ₀ repeated for fixed-σ training; the uniform loss, whose tensor holds half-widths
λᵢ, calls it ``scale``. ``params`` holds the method's hyper-parameters (its registry entry's
dataclass). All noise comes from ``ddrs.core.noise`` with the caller's ``generator``, so a step is
reproducible.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from ddrs.core.device import at_least_float32
from ddrs.core.noise import add_noise, get_noise, scaled_noise
from ddrs.core.sigma import radius_objective
from ddrs.methods import (
    MACER_FORMS,
    SMOOTHADV_ATTACKS,
    STABILITY_DIVERGENCES,
    GaussianParams,
    MacerParams,
    NoParams,
    SmoothAdvParams,
    StabilityParams,
)
from ddrs.training.recompute import recomputation_contexts

GAUSSIAN = get_noise("gaussian")
UNIFORM = get_noise("uniform")

TrainingLoss = Callable[[nn.Module, Tensor, Tensor, Tensor, torch.Generator, object, int], Tensor]


def _unit_copies(noise, x: Tensor, m: int, generator: torch.Generator) -> Tensor:
    """``m`` draws ε̂ of the scale-1 noise per input, shape ``(B, m, *x.shape[1:])``."""
    return noise.unit((len(x), m, *x.shape[1:]), generator=generator, device=x.device, dtype=x.dtype)


def noise_copies(noise, x: Tensor, sigma: Tensor, m: int, generator: torch.Generator) -> Tensor:
    """``m`` noise vectors per input, shape ``(B, m, *x.shape[1:])``, already multiplied by ``sigma``."""
    return scaled_noise(sigma, _unit_copies(noise, x, m, generator))


def noisy_copies(noise, x: Tensor, sigma: Tensor, m: int, generator: torch.Generator) -> Tensor:
    """``m`` noisy copies ``x + σ·ε̂`` per input, shape ``(B, m, *x.shape[1:])``."""
    return add_noise(x.unsqueeze(1), sigma, _unit_copies(noise, x, m, generator))


def copies_logits(model: nn.Module, points: Tensor) -> Tensor:
    """Logits of ``points`` of shape ``(B, m, ...)`` as ``(B, m, C)``, in fp32 or wider (safe under autocast)."""
    batch, m = points.shape[:2]
    return at_least_float32(model(points.flatten(0, 1))).view(batch, m, -1)


def chunked_copies_logits(model: nn.Module, points: Tensor, chunk: int) -> Tensor:
    """:func:`copies_logits` with the m draws of ``points`` ``(B, m, ...)`` run ``chunk`` at a time.

    Each chunk's activations are dropped after its forward pass and recomputed in the backward
    pass (``torch.utils.checkpoint``), so memory holds one chunk's activations instead of all m:
    the same logits and gradient up to float error for a model without batch statistics; with
    batch-norm, each chunk of B·chunk copies is normalised by its own statistics.
    ``chunk = 0`` (or ≥ m) is one pass over all m draws.
    """
    if chunk <= 0 or chunk >= points.shape[1] or not torch.is_grad_enabled():
        return copies_logits(model, points)
    contexts = partial(recomputation_contexts, model)  # each chunk updates the running statistics once
    parts = points.split(chunk, dim=1)
    return torch.cat(
        [checkpoint(copies_logits, model, part, use_reentrant=False, context_fn=contexts) for part in parts], dim=1
    )


def copies_cross_entropy(logits: Tensor, y: Tensor) -> Tensor:
    """Cross-entropy of ``(B, m, C)`` logits against ``y``, averaged over the B·m noisy copies."""
    return F.cross_entropy(logits.flatten(0, 1), y.repeat_interleave(logits.shape[1]))


def cohen_loss(model, x, y, sigma, generator, params: GaussianParams, epoch=0) -> Tensor:
    """Gaussian data augmentation: cross-entropy on ``x + σᵢ·ε`` (Cohen et al. 2019, §3.3), averaged
    over ``params.m`` draws per input (m = 1 is Cohen's; Sun et al. 2024, §6, train with m = 4)."""
    return copies_cross_entropy(copies_logits(model, noisy_copies(GAUSSIAN, x, sigma, params.m, generator)), y)


def uniform_loss(model, x, y, scale, generator, params: NoParams, epoch=0) -> Tensor:
    """Uniform-noise augmentation: cross-entropy on ``x + λᵢ·U[−1, 1]^d`` (Yang et al. 2020; DDRS §4.4)."""
    return F.cross_entropy(at_least_float32(model(UNIFORM.perturb(x, scale, generator))), y)


def smoothed_nll(logits: Tensor, y: Tensor) -> Tensor:
    """−log of the soft smoothed classifier's probability of ``y``, per input.

    ``logits`` is ``(B, m, C)``; the soft smoothed classifier is the mean softmax over the m draws
    (the soft classifier G attacked by Salman et al. 2019, §3, with m Monte Carlo draws; clamped
    at 1e-20 as in their ``attacks.py``). With one draw it is that draw's cross-entropy, unclamped,
    as their ``PGD_L2._attack`` computes it: an input already misclassified by a margin beyond 46
    keeps its gradient.
    """
    if logits.shape[1] == 1:
        return F.cross_entropy(logits[:, 0], y, reduction="none")
    probs = F.softmax(logits, dim=-1).mean(dim=1)
    return -probs.gather(1, y.view(-1, 1)).squeeze(1).clamp_min(1e-20).log()


def smoothadv_radius(params: SmoothAdvParams, epoch: int) -> float:
    """Attack radius ζ at 0-based ``epoch``: ``ζ·min(1, epoch/warmup)``, zero in the first epoch and
    ζ from epoch ``warmup`` on.

    Jeong & Shin (2020, supplement A.1), after Salman et al. (2019): ζ "is initially set to zero,
    and linearly increased during the first 10 epochs". (Both codes compute
    ``min(ζ, (epoch + 1)·ζ/warmup)``, which starts at ζ/warmup; we follow the text.)
    """
    if params.warmup == 0:
        return params.epsilon
    return params.epsilon * min(1.0, epoch / params.warmup)


#: the two published PGD steps of the SmoothAdv attack (:func:`smoothadv_attack`)
PGD_RULES = ("salman", "jeong_shin")


def attacked_nll(logits: Tensor, y: Tensor, attack: str = "salman") -> Tensor:
    """What SmoothAdv's attack ascends, per input, from ``(B, m, C)`` logits; ``attack``
    (:data:`ddrs.methods.SMOOTHADV_ATTACKS`) names whose code:

    - ``salman``: Salman et al.'s ``PGD_L2`` (``attacks.py``): :func:`smoothed_nll` of the logits.
    - ``released``: the DDRS authors' ``attacker.py``, that same code, called on their networks'
      softmax output (``CIFAR10/models/resnet.py`` ends in a softmax; ``ImageNet/utils.py``'s
      ``imagenet_wrapper`` adds one): ``F.cross_entropy`` of the probabilities with one draw, the
      mean of their ``F.softmax`` with m draws, i.e. :func:`smoothed_nll` of softmax(logits) taken as
      logits, a double softmax. On ``resnet18_ddrs``, whose output ddrs reads as log(p + 1e-10),
      softmax(logits) is the released network's p to 1e-9.
    """
    if attack == "released":
        return smoothed_nll(F.softmax(logits, dim=-1), y)
    if attack != "salman":
        raise ValueError(f"unknown SmoothAdv attack {attack!r}; choose one of {list(SMOOTHADV_ATTACKS)}")
    return smoothed_nll(logits, y)


def smoothadv_attack(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    noise: Tensor,
    radius: float,
    steps: int,
    generator: torch.Generator,
    rule: str = "salman",
    attack: str = "salman",
) -> Tensor:
    """ℓ2 PGD on the soft smoothed classifier with fixed noise draws (Salman et al. 2019, §3).

    Maximises :func:`attacked_nll` (``attack``: Salman et al.'s :func:`smoothed_nll` of the logits,
    or the DDRS release's of their softmax) of ``x + δ + noise`` over ``‖δ‖₂ ≤ radius`` with ``steps``
    normalised-gradient steps of size ``2·radius/steps``. ``rule`` (:data:`PGD_RULES`) is the
    code the step follows:

    - ``salman``: SmoothAdv's ``PGD_L2``: each step is followed by a clamp of ``x + δ`` to [0, 1]
      and a projection onto the ball. Where the gradient is exactly zero (with m > 1, an input
      whose smoothed probability of ``y`` is under the 1e-20 clamp), the step direction is a
      standard normal draw from ``generator``, unnormalised, as their code does.
    - ``jeong_shin``: Jeong & Shin's ``SmoothAdv_PGD`` (``train_consistency.py``, SmoothAdv +
      Consistency): the gradient divided by its norm + 1e-8 (a zero gradient takes no step), then
      the projection onto the ball, then the clamp to [0, 1].

    The model runs in eval mode and its parameters receive no gradient.
    """
    if rule not in PGD_RULES:
        raise ValueError(f"unknown PGD rule {rule!r}; choose one of {list(PGD_RULES)}")
    if attack not in SMOOTHADV_ATTACKS:
        raise ValueError(f"unknown SmoothAdv attack {attack!r}; choose one of {list(SMOOTHADV_ATTACKS)}")
    if radius == 0:
        return x
    was_training = model.training
    model.eval()
    step_size = 2 * radius / steps
    per_input = (-1, *([1] * (x.ndim - 1)))
    delta = torch.zeros_like(x)
    try:
        for _ in range(steps):
            delta.requires_grad_(True)
            loss = attacked_nll(copies_logits(model, (x + delta).unsqueeze(1) + noise), y, attack).sum()
            (grad,) = torch.autograd.grad(loss, delta)
            norm = grad.flatten(1).norm(dim=1)
            if rule == "jeong_shin":  # project, then clamp
                delta = delta.detach() + step_size * grad / (norm + 1e-8).view(per_input)
                delta = (x + delta.renorm(p=2, dim=0, maxnorm=radius)).clamp(0, 1) - x
            else:  # clamp, then project
                vanished = norm == 0
                direction = grad / norm.masked_fill(vanished, 1.0).view(per_input)
                if vanished.any():
                    shape = direction[vanished].shape
                    direction[vanished] = GAUSSIAN.unit(shape, generator=generator, device=x.device, dtype=x.dtype)
                delta = delta.detach() + step_size * direction
                delta = (x + delta).clamp(0, 1) - x
                delta = delta.renorm(p=2, dim=0, maxnorm=radius)
    finally:
        model.train(was_training)
    return (x + delta).detach()


def smoothadv_loss(model, x, y, sigma, generator, params: SmoothAdvParams, epoch=0) -> Tensor:
    """SmoothAdv (Salman et al. 2019): attack the soft smoothed classifier, then train on the
    adversarial points with the same m noise draws, cross-entropy averaged over the m copies
    (their ``--train-multi-noise``; DDRS §4.2: 2 steps, ζ = 0.25, m = 1 on CIFAR-10). The attack
    ascends ``params.attack``'s objective (:func:`attacked_nll`)."""
    noise = noise_copies(GAUSSIAN, x, sigma, params.m, generator)
    radius = smoothadv_radius(params, epoch)
    adversarial = smoothadv_attack(model, x, y, noise, radius, params.steps, generator, attack=params.attack)
    return copies_cross_entropy(copies_logits(model, adversarial.unsqueeze(1) + noise), y)


def macer_objective(
    logits: Tensor, y: Tensor, sigma: Tensor, lam: float, gamma: float, beta: float, form: str = "zhai"
) -> Tensor:
    """MACER's loss from ``(B, m, C)`` logits: ``CE = −log(mean softmax of y + 1e-10)`` averaged over
    the batch, plus λ times a robustness term whose ``form`` (:data:`ddrs.methods.MACER_FORMS`) is

    - ``zhai`` (Zhai et al. 2020, Algorithm 1; their ``macer.py``): ``σᵢ/2 · (γ − ξᵢ)`` summed over
      the inputs whose β-tempered smoothed prediction is correct and whose ``ξᵢ = Φ⁻¹(p̂A) − Φ⁻¹(p̂B)
      ≤ γ`` (the hinge), p̂A, p̂B the top two of the mean ``softmax(β·logits)``, divided by the batch
      size. As in MACER's code, inputs whose ξ is not finite (p̂A = 1 or p̂B = 0 in floating point)
      are left out of the hinge rather than clamped. With one σᵢ per input the hinge stays in units
      of ξ = 2R/σ and only MACER's σ/2 factor becomes σᵢ/2, so fixed σ reproduces MACER exactly.
      DDRS §4.3 writes the factor as λ/2; MACER's paper and code use λ·σ/2.
    - ``released`` (the DDRS authors' ``CIFAR10/train_macer.py``, ``macer_loss``): the mean over the
      correctly classified inputs of ``relu(γ − σᵢ/2 · ξᵢ)``, a hinge on the radius, with p̂A, p̂B
      the top two of the untempered mean softmax clamped to [0.02, 0.98] (β unused); 0 when no
      input is correct (their code returns NaN there).
    """
    batch = len(y)
    probs = F.softmax(logits, dim=-1).mean(dim=1)
    classification = -(probs.gather(1, y.view(-1, 1)).squeeze(1) + 1e-10).log().mean()
    if form == "released":
        # their hinge is on the radius Algorithm 1 ascends (the authors' get_sigma, clamp 0.02)
        correct = probs.argmax(dim=1) == y
        radius = radius_objective(probs[correct], sigma[correct].to(probs.dtype), GAUSSIAN)
        robustness = F.relu(gamma - radius).mean() if bool(correct.any()) else probs.new_zeros(())
        return classification + lam * robustness
    if form != "zhai":
        raise ValueError(f"unknown MACER form {form!r}; choose one of {list(MACER_FORMS)}")
    tempered = F.softmax(beta * logits, dim=-1).mean(dim=1)
    top2, top2_class = tempered.topk(2, dim=1)
    with torch.no_grad():
        xi = torch.special.ndtri(top2[:, 0]) - torch.special.ndtri(top2[:, 1])
        hinged = (top2_class[:, 0] == y) & torch.isfinite(xi) & (xi <= gamma)
    # recompute ξ on the hinged inputs only, so non-finite Φ⁻¹ never enters the backward pass
    xi = torch.special.ndtri(top2[hinged, 0]) - torch.special.ndtri(top2[hinged, 1])
    robustness = ((gamma - xi) * sigma[hinged].to(xi.dtype)).sum() / 2
    return classification + lam * robustness / batch


def macer_deferred(params: MacerParams, epoch: int) -> bool:
    """Whether 0-based ``epoch`` trains MACER with λ = 0: Jeong & Shin's ``train_macer.py``
    (``if args.deferred and epoch <= args.lr_step_size: lbd = 0``, 0-based epochs), ``params.deferred``
    their ``--lr_step_size`` (0: never)."""
    return params.deferred > 0 and epoch <= params.deferred


def macer_loss(model, x, y, sigma, generator, params: MacerParams, epoch=0) -> Tensor:
    """MACER (Zhai et al. 2020) with m Gaussian draws per input at σᵢ (DDRS §4.3: m = 64,
    λ = 12, γ = 8, β = 16); λ = 0 in the deferred epochs (:func:`macer_deferred`, Jeong & Shin's
    ``train_macer.py --deferred``). ``params.draws_per_pass`` draws at a time when set
    (:func:`chunked_copies_logits`): the same noise in less memory; the same gradient for a model
    without batch-norm."""
    points = noisy_copies(GAUSSIAN, x, sigma, params.m, generator)
    logits = chunked_copies_logits(model, points, params.draws_per_pass)
    lam = 0.0 if macer_deferred(params, epoch) else params.lam
    return macer_objective(logits, y, sigma, lam, params.gamma, params.beta, params.form)


def stability_objective(clean: Tensor, noisy: Tensor, y: Tensor, gamma: float, divergence: str) -> Tensor:
    """``CE(clean, y) + γ·term(softmax(clean), softmax(noisy))``, both averaged over the batch.

    Stability training (Li et al. 2019, after Zheng et al. 2016): the clean prediction is the
    reference distribution the noisy one must match; gradients flow through both, as in Jeong &
    Shin's re-implementation. ``divergence`` names the term (:class:`~ddrs.methods.StabilityParams`):
    ``cross_entropy`` −Σ p_clean·log p_noisy (their ``train_stab.py``), or ``kl`` KL(p_clean ‖ p_noisy).
    """
    log_clean, log_noisy = F.log_softmax(clean, dim=1), F.log_softmax(noisy, dim=1)
    if divergence == "cross_entropy":
        term = -(log_clean.exp() * log_noisy).sum(dim=1).mean()
    elif divergence == "kl":
        term = F.kl_div(log_noisy, log_clean, reduction="batchmean", log_target=True)
    else:
        raise ValueError(f"unknown stability divergence {divergence!r}; choose one of {list(STABILITY_DIVERGENCES)}")
    return F.cross_entropy(clean, y) + gamma * term


def stability_loss(model, x, y, sigma, generator, params: StabilityParams, epoch=0) -> Tensor:
    """Stability training (Li et al. 2019): clean and noisy ``x + σᵢ·ε`` in two forward passes (so
    batch-norm statistics stay per pass, as in Jeong & Shin's ``train_stab.py``)."""
    clean = at_least_float32(model(x))
    noisy = at_least_float32(model(GAUSSIAN.perturb(x, sigma, generator)))
    return stability_objective(clean, noisy, y, params.gamma, params.divergence)
