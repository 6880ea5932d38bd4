"""Consistency regularization (Jeong & Shin 2020) and stability training (Li et al. 2019) against
hand computations on given logits, and the losses' wiring of noise, attack and model."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from ddrs.training import (
    TrainConfig,
    consistency_loss,
    consistency_objective,
    consistency_term,
    mean_prediction_entropy,
    smoothadv_attack,
    smoothadv_consistency_loss,
    smoothadv_loss,
    smoothadv_radius,
    stability_loss,
    stability_objective,
)

# two inputs, three noisy draws, four classes
LOGITS = torch.tensor(
    [
        [[2.0, 0.5, -1.0, 0.0], [1.0, 1.5, -0.5, 0.2], [0.3, -0.2, 0.8, -1.1]],
        [[-0.4, 0.9, 0.1, 2.2], [0.0, 0.0, 0.0, 0.0], [1.7, -2.0, 0.6, 0.4]],
    ],
    dtype=torch.float64,
)
LABELS = torch.tensor([0, 3])


def _softmax(z: np.ndarray) -> np.ndarray:
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def _hand_terms() -> dict[str, np.ndarray]:
    """Each term per input, written out with loops over draws and classes."""
    probs = _softmax(LOGITS.numpy())
    batch, m, classes = probs.shape
    terms = {name: np.zeros(batch) for name in ("mean_kl", "mean_cross_entropy", "pairwise_mse", "entropy")}
    for b in range(batch):
        mean = probs[b].mean(axis=0)
        terms["entropy"][b] = -sum(mean[c] * np.log(mean[c]) for c in range(classes))
        for i in range(m):
            terms["mean_kl"][b] += sum(mean[c] * np.log(mean[c] / probs[b, i, c]) for c in range(classes)) / m
            terms["mean_cross_entropy"][b] += -sum(mean[c] * np.log(probs[b, i, c]) for c in range(classes)) / m
        pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
        for i, j in pairs:
            terms["pairwise_mse"][b] += sum((probs[b, i, c] - probs[b, j, c]) ** 2 for c in range(classes)) / len(pairs)
    return terms


@pytest.mark.parametrize("divergence", ["mean_kl", "mean_cross_entropy", "pairwise_mse"])
def test_consistency_terms_equal_their_definitions(divergence):
    assert consistency_term(LOGITS, divergence).numpy() == pytest.approx(_hand_terms()[divergence], rel=1e-12)


def test_entropy_of_the_mean_prediction():
    assert mean_prediction_entropy(LOGITS).numpy() == pytest.approx(_hand_terms()["entropy"], rel=1e-12)
    uniform = torch.zeros(1, 2, 5)
    assert mean_prediction_entropy(uniform).item() == pytest.approx(np.log(5))


def test_two_identical_draws_are_perfectly_consistent():
    same = LOGITS[:, :1].repeat(1, 2, 1)
    assert consistency_term(same, "mean_kl").abs().max() < 1e-12
    assert consistency_term(same, "pairwise_mse").abs().max() < 1e-12


@pytest.mark.parametrize("divergence", ["mean_kl", "mean_cross_entropy", "pairwise_mse"])
def test_a_class_whose_mean_probability_underflows_keeps_the_gradient_finite(divergence):
    """Logits 200 apart in float32: p̄ of the losing class is exactly 0 for every draw. Its KL term is
    0 and its gradient finite (kl_div on p̄ differentiated 0·log 0 to NaN, which stopped training)."""
    logits = torch.tensor([[[200.0, 0.0, 0.0], [200.0, 0.0, 10.0]]], requires_grad=True)
    assert F.softmax(logits, dim=-1).mean(dim=1)[0, 1].item() == 0.0
    loss = consistency_objective(logits, torch.tensor([0]), 10.0, 0.5, divergence)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(logits.grad).all()


def test_objective_is_mean_cross_entropy_plus_weighted_terms():
    """CE over the 6 noisy copies + λ·term + η·H(p̄), each averaged over the batch; and the 'ce'
    divergence with η = 0 is their 'xent' option, the default form with η = λ."""
    lam, eta = 7.0, 0.3
    probs = _softmax(LOGITS.numpy())
    cross_entropy = np.mean([-np.log(probs[b, i, LABELS[b]]) for b in range(2) for i in range(3)])
    terms = _hand_terms()
    expected = cross_entropy + np.mean(lam * terms["mean_kl"] + eta * terms["entropy"])
    assert consistency_objective(LOGITS, LABELS, lam, eta, "mean_kl").item() == pytest.approx(expected, rel=1e-12)
    assert consistency_objective(LOGITS, LABELS, lam, 0.0, "mean_cross_entropy").item() == pytest.approx(
        consistency_objective(LOGITS, LABELS, lam, lam, "mean_kl").item(), rel=1e-12
    )


def test_unknown_divergence_is_refused():
    with pytest.raises(ValueError, match="unknown divergence 'js'"):
        consistency_term(LOGITS, "js")


def test_stability_objective_is_clean_cross_entropy_plus_the_authors_term_from_clean_to_noisy():
    clean, noisy, gamma = LOGITS[:, 0], LOGITS[:, 1], 2.5
    p, q = _softmax(clean.numpy()), _softmax(noisy.numpy())
    ce = [-np.log(p[b, LABELS[b]]) for b in range(2)]
    kl = [sum(p[b, c] * np.log(p[b, c] / q[b, c]) for c in range(4)) for b in range(2)]
    # Jeong & Shin's train_stab.py: _cross_entropy(logits_n, logits) = mean −Σ softmax(clean)·log softmax(noisy)
    soft_ce = [-sum(p[b, c] * np.log(q[b, c]) for c in range(4)) for b in range(2)]
    expected = {"kl": np.mean(ce) + gamma * np.mean(kl), "cross_entropy": np.mean(ce) + gamma * np.mean(soft_ce)}
    for divergence, value in expected.items():
        assert stability_objective(clean, noisy, LABELS, gamma, divergence).item() == pytest.approx(value, rel=1e-12)
        # the direction matters: the terms from noisy to clean differ here
        assert stability_objective(noisy, clean, LABELS, gamma, divergence).item() != pytest.approx(value, rel=1e-3)
    assert expected["cross_entropy"] > expected["kl"]  # the clean prediction's entropy, weighted by γ
    with pytest.raises(ValueError, match="unknown stability divergence 'js'"):
        stability_objective(clean, noisy, LABELS, gamma, "js")


def test_stability_defaults_to_the_authors_cross_entropy_and_names_bad_terms():
    assert _params("stability").divergence == "cross_entropy"
    with pytest.raises(ValueError, match="divergence must be one of \\['cross_entropy', 'kl'\\]"):
        _params("stability", divergence="mse")


def _linear_model() -> nn.Module:
    """In float64, as its inputs: ddrs and the restated code are compared to float64 rounding, not float32's."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(6, 4)).double()
    with torch.no_grad():
        model[1].weight.copy_(torch.linspace(-1, 1, 24).view(4, 6))
        model[1].bias.copy_(torch.tensor([0.1, -0.2, 0.3, 0.0]))
    return model


def _params(method: str, **values):
    return TrainConfig(dataset="digits", arch="mlp", method=method, sigma=0.25, params=values).params


def test_consistency_loss_draws_m_copies_at_each_scale():
    model, x, y = _linear_model(), torch.rand(3, 1, 6, dtype=torch.float64), torch.tensor([0, 2, 1])
    sigma = torch.tensor([0.1, 0.5, 1.0], dtype=torch.float64)
    params = _params("consistency", m=3, lam=4.0, eta=0.2, divergence="mean_cross_entropy")
    loss = consistency_loss(model, x, y, sigma, torch.Generator().manual_seed(9), params)
    noise = torch.randn((3, 3, 1, 6), generator=torch.Generator().manual_seed(9), dtype=torch.float64) * sigma.view(
        3, 1, 1, 1
    )
    logits = model((x.unsqueeze(1) + noise).flatten(0, 1)).view(3, 3, 4)
    assert loss.item() == pytest.approx(
        consistency_objective(logits, y, 4.0, 0.2, "mean_cross_entropy").item(), rel=1e-6
    )


def test_smoothadv_consistency_attacks_then_regularizes_with_the_same_draws():
    model, x, y = _linear_model(), torch.rand(3, 1, 6, dtype=torch.float64), torch.tensor([0, 2, 1])
    sigma = torch.full((3,), 0.25, dtype=torch.float64)
    params = _params("smoothadv_consistency", m=2, steps=3, epsilon=0.5, warmup=0, lam=3.0, eta=0.5)
    loss = smoothadv_consistency_loss(model, x, y, sigma, torch.Generator().manual_seed(4), params, epoch=5)
    generator = torch.Generator().manual_seed(4)
    noise = torch.randn((3, 2, 1, 6), generator=generator, dtype=torch.float64) * 0.25
    adversarial = smoothadv_attack(model, x, y, noise, smoothadv_radius(params, 5), 3, generator, rule="jeong_shin")
    assert not torch.equal(adversarial, x)
    logits = model((adversarial.unsqueeze(1) + noise).flatten(0, 1)).view(3, 2, 4)
    assert loss.item() == pytest.approx(consistency_objective(logits, y, 3.0, 0.5, "mean_kl").item(), rel=1e-6)
    # radius 0 is plain Gaussian + Consistency
    no_attack = _params("smoothadv_consistency", m=2, epsilon=0.0, lam=3.0, eta=0.5)
    gaussian = _params("consistency", m=2, lam=3.0, eta=0.5)
    assert smoothadv_consistency_loss(model, x, y, sigma, torch.Generator().manual_seed(4), no_attack).item() == (
        pytest.approx(consistency_loss(model, x, y, sigma, torch.Generator().manual_seed(4), gaussian).item())
    )


def test_smoothadv_attacks_then_trains_on_the_adversarial_points_with_the_same_draws():
    """SmoothAdv's loss is the mean cross-entropy at x' + δᵢ, x' its attack's point with the same draws δᵢ."""
    model, x, y = _linear_model(), torch.rand(3, 1, 6, dtype=torch.float64), torch.tensor([0, 2, 1])
    sigma = torch.tensor([0.1, 0.5, 1.0], dtype=torch.float64)
    params = _params("smoothadv", m=2, steps=3, epsilon=0.5, warmup=0)
    loss = smoothadv_loss(model, x, y, sigma, torch.Generator().manual_seed(4), params, epoch=5)
    generator = torch.Generator().manual_seed(4)
    noise = torch.randn((3, 2, 1, 6), generator=generator, dtype=torch.float64) * sigma.view(3, 1, 1, 1)
    adversarial = smoothadv_attack(model, x, y, noise, 0.5, 3, generator)
    assert not torch.equal(adversarial, x)

    def cross_entropy(points):
        return F.cross_entropy(model((points.unsqueeze(1) + noise).flatten(0, 1)), y.repeat_interleave(2))

    assert torch.equal(loss, cross_entropy(adversarial))
    assert loss > cross_entropy(x) + 0.01  # not the clean point's noisy copies


def _jeong_shin_pgd(model, x, y, noise, radius, steps):
    """Jeong & Shin's ``SmoothAdv_PGD.attack`` step by step: the mean cross-entropy of the clamped
    mean softmax, its gradient over norm + 1e-8, a step of 2·radius/steps, the projection onto the
    ball, then the clamp to [0, 1]."""
    adv = x.clone()
    for _ in range(steps):
        adv.requires_grad_(True)
        probs = torch.stack([torch.softmax(model(adv + noise[:, j]), dim=1) for j in range(noise.shape[1])]).mean(0)
        loss = torch.nn.functional.nll_loss(probs.clamp(min=1e-20).log(), y)
        (grad,) = torch.autograd.grad(loss, adv)
        grad = grad / (grad.flatten(1).norm(dim=1).view(-1, 1, 1) + 1e-8)
        adv = adv + 2 * radius / steps * grad
        adv = (x + (adv - x).renorm(p=2, dim=0, maxnorm=radius)).clamp(0, 1).detach()
    return adv


def test_smoothadv_consistency_attacks_as_jeong_and_shins_pgd_projecting_before_clamping():
    # pixels at 0 and 1, where the order of the projection and the clamp decides where δ ends
    model, y = _linear_model(), torch.tensor([0, 2, 1, 3])
    x = torch.tensor([[0.0, 1.0, 0.02, 0.98, 0.5, 0.0]], dtype=torch.float64).repeat(4, 1).unsqueeze(1)
    noise = torch.randn((4, 2, 1, 6), generator=torch.Generator().manual_seed(2), dtype=torch.float64) * 0.25
    ours = smoothadv_attack(model, x, y, noise, 1.0, 10, torch.Generator(), rule="jeong_shin")
    # their loss is the batch mean, ddrs's the sum: the 1e-8 added to the norm is 4 · 1e-8 in ddrs's units,
    # which moves the points by ~1e-9 (measured); float64 rounding is ~1e-16
    assert torch.allclose(ours, _jeong_shin_pgd(model, x, y, noise, 1.0, 10), rtol=0, atol=1e-7)
    salman = smoothadv_attack(model, x, y, noise, 1.0, 10, torch.Generator())
    assert (ours - salman).abs().max() > 1e-2  # Salman et al.'s clamp-then-project ends elsewhere
    with pytest.raises(ValueError, match="unknown PGD rule"):
        smoothadv_attack(model, x, y, noise, 2.0, 10, torch.Generator(), rule="madry")


def test_stability_loss_compares_the_clean_and_one_noisy_pass():
    model, x, y = _linear_model(), torch.rand(3, 1, 6, dtype=torch.float64), torch.tensor([0, 2, 1])
    sigma = torch.tensor([0.1, 0.5, 1.0], dtype=torch.float64)
    noisy = x + torch.randn((3, 1, 6), generator=torch.Generator().manual_seed(2), dtype=torch.float64) * sigma.view(
        3, 1, 1
    )
    for divergence in ("cross_entropy", "kl"):
        params = _params("stability", gamma=3.0, divergence=divergence)
        loss = stability_loss(model, x, y, sigma, torch.Generator().manual_seed(2), params)
        expected = stability_objective(model(x), model(noisy), y, 3.0, divergence)
        assert loss.item() == pytest.approx(expected.item(), rel=1e-6)


@pytest.mark.parametrize("method", ["consistency", "smoothadv_consistency"])
def test_consistency_in_chunks_of_draws_gives_the_same_loss_and_gradient(method):
    """m = 6 draws two at a time, activations recomputed in backward: the same step (float error)."""
    from ddrs.methods import get_method
    from ddrs.training.consistency import consistency_loss, smoothadv_consistency_loss

    loss_fn = {"consistency": consistency_loss, "smoothadv_consistency": smoothadv_consistency_loss}[method]
    x = torch.rand(4, 1, 6, 6, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    y, sigma = torch.tensor([0, 1, 2, 0]), torch.full((4,), 0.5, dtype=torch.float64)

    def step(draws_per_pass):
        torch.manual_seed(4)
        model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(64, 3)).double()
        params = get_method(method).make_params({"m": 6, "draws_per_pass": draws_per_pass}, source="test")
        loss = loss_fn(model, x, y, sigma, torch.Generator().manual_seed(9), params, 20)
        loss.backward()
        return loss.detach(), [p.grad for p in model.parameters()]

    whole_loss, whole = step(0)
    loss, chunked = step(2)
    assert torch.allclose(loss, whole_loss, rtol=0, atol=1e-12)
    assert any(g.abs().max() > 1e-3 for g in whole)
    for grad, reference in zip(chunked, whole, strict=True):
        assert torch.allclose(grad, reference, rtol=0, atol=1e-12)
