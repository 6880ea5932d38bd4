"""The training losses: each method learns under noise, SmoothAdv attacks what it claims, MACER
matches its formula, and every loss uses one σ per example."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import norm
from torch import nn
from torch.nn import functional as F

from ddrs.methods import get_method
from ddrs.models import build_model
from ddrs.training import (
    TrainConfig,
    cohen_loss,
    macer_deferred,
    macer_loss,
    macer_objective,
    smoothadv_attack,
    smoothadv_radius,
    smoothed_nll,
    uniform_loss,
)


def _config(method: str, **params) -> TrainConfig:
    """A digits config for ``method`` with the given hyper-parameters of the method (registry fields)."""
    return TrainConfig(dataset="digits", arch="mlp", method=method, sigma=0.25, params=params)


def _tensors(dataset) -> tuple[torch.Tensor, torch.Tensor]:
    return dataset.images, torch.as_tensor(dataset.targets)


def _noisy_accuracy(model, images, labels, sigma, noise) -> float:
    from ddrs.core.noise import get_noise

    generator = torch.Generator().manual_seed(123)
    model.eval()
    with torch.no_grad():
        predictions = model(get_noise(noise).perturb(images, sigma, generator)).argmax(dim=1)
    return float((predictions == labels).float().mean())


def _train(method: str, digits_data, epochs: int, **params) -> tuple[nn.Module, list[float]]:
    """A few epochs of SGD with ``method``'s loss at fixed σ₀ on digits; mean loss per epoch."""
    config = _config(method, **params)
    loss_fn = get_method(method).load_loss()
    images, labels = _tensors(digits_data["train"])
    model = build_model("mlp", "digits")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    generator = torch.Generator().manual_seed(0)
    sigma = torch.full((64,), config.initial_sigma)
    epoch_losses = []
    for epoch in range(epochs):
        model.train()
        losses = []
        for batch in torch.randperm(len(labels), generator=generator).split(64):
            loss = loss_fn(model, images[batch], labels[batch], sigma[: len(batch)], generator, config.params, epoch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        epoch_losses.append(float(np.mean(losses)))
    return model, epoch_losses


@pytest.mark.parametrize("method", ["cohen", "smoothadv", "uniform"])
def test_method_lowers_its_loss_and_classifies_under_noise(method, digits_data):
    model, losses = _train(method, digits_data, epochs=3)
    assert losses[-1] < 0.6 * losses[0]
    images, labels = _tensors(digits_data["test"])
    config = _config(method)
    assert _noisy_accuracy(model, images, labels, config.initial_sigma, config.noise_name) > 0.75


def test_macer_classifies_under_noise_and_its_step_descends(digits_data):
    """MACER's total loss is not monotone over epochs (the hinge only counts correctly classified
    inputs, so it grows with accuracy); a gradient step must still lower it at fixed noise."""
    config = _config("macer", m=8)
    model, _ = _train("macer", digits_data, epochs=6, m=8)
    test_images, test_labels = _tensors(digits_data["test"])
    assert _noisy_accuracy(model, test_images, test_labels, 0.25, "gaussian") > 0.5

    images, labels = _tensors(digits_data["train"])
    x, y, sigma = images[:64], labels[:64], torch.full((64,), 0.25)

    def loss_at_fixed_noise():
        return macer_loss(model, x, y, sigma, torch.Generator().manual_seed(5), config.params)

    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    before = loss_at_fixed_noise()
    optimizer.zero_grad()
    before.backward()
    optimizer.step()
    assert loss_at_fixed_noise().item() < before.item()


def test_macer_loss_equals_hand_computation():
    """A fixed linear model, fixed draws: CE of the smoothed softmax + λ·σᵢ/2·(γ − ξ) over the
    correctly classified inputs with ξ ≤ γ, both divided by the batch size (MACER's macer.py)."""
    batch, m, dim, classes = 4, 5, 3, 3
    lam, gamma, beta = 12.0, 1.5, 2.0
    model = nn.Linear(dim, classes)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, -0.5, 0.2], [-0.3, 0.8, 0.1], [0.2, 0.1, -0.9]]))
        model.bias.copy_(torch.tensor([0.1, -0.2, 0.05]))
    x = torch.tensor([[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, -2.0], [0.3, 0.3, 0.3]])
    y = torch.tensor([0, 1, 2, 2])
    sigma = torch.tensor([0.1, 0.5, 0.3, 0.2])
    config = _config("macer", m=m, lam=lam, gamma=gamma, beta=beta)

    loss = macer_loss(model, x, y, sigma, torch.Generator().manual_seed(7), config.params)

    eps = torch.randn((batch, m, dim), generator=torch.Generator().manual_seed(7)).numpy().astype(np.float64)
    w, b = model.weight.detach().numpy().astype(np.float64), model.bias.detach().numpy().astype(np.float64)
    s, xs, ys = sigma.numpy().astype(np.float64), x.numpy().astype(np.float64), y.numpy()
    logits = (xs[:, None, :] + s[:, None, None] * eps) @ w.T + b

    def softmax(z):
        z = np.exp(z - z.max(axis=-1, keepdims=True))
        return z / z.sum(axis=-1, keepdims=True)

    classification = -np.log(softmax(logits).mean(axis=1)[np.arange(batch), ys] + 1e-10).sum()
    tempered = softmax(beta * logits).mean(axis=1)
    robustness, hinged = 0.0, 0
    for i in range(batch):
        order = np.argsort(tempered[i])[::-1]
        xi = norm.ppf(tempered[i, order[0]]) - norm.ppf(tempered[i, order[1]])
        if order[0] == ys[i] and xi <= gamma:
            robustness += s[i] / 2 * (gamma - xi)
            hinged += 1
    expected = (classification + lam * robustness) / batch

    assert 0 < hinged < batch  # the example exercises both sides of the indicator and the hinge
    assert loss.item() == pytest.approx(expected, rel=1e-5)


def test_released_macer_form_is_the_ddrs_train_macer_loss():
    """The DDRS authors' CIFAR10/train_macer.py: NLL of the mean softmax + λ · mean over correctly
    classified inputs of relu(γ − σᵢ/2 · (Φ⁻¹(p̂A) − Φ⁻¹(p̂B))), p̂A, p̂B the untempered top two
    clamped to [0.02, 0.98]; β plays no part."""
    logits = torch.tensor(
        [[[4.0, 0.0, 0.0], [3.0, 1.0, 0.0]], [[0.0, 0.5, 0.2], [0.1, 0.2, 0.3]], [[0.0, 0.0, 9.0], [0.0, 0.0, 8.0]]],
        dtype=torch.float64,
    )
    y, sigma, lam, gamma = torch.tensor([0, 2, 2]), torch.tensor([0.25, 0.5, 1.0], dtype=torch.float64), 12.0, 0.9
    probs = torch.softmax(logits, dim=-1).mean(dim=1).numpy()
    nll = np.mean([-np.log(probs[i, y[i]] + 1e-10) for i in range(3)])
    hinges = []
    for i in range(3):
        order = np.argsort(probs[i])[::-1]
        if order[0] == y[i]:
            top = np.clip(probs[i, order[:2]], 0.02, 0.98)
            hinges.append(max(0.0, gamma - float(sigma[i]) / 2 * (norm.ppf(top[0]) - norm.ppf(top[1]))))
    assert len(hinges) == 2 and 0.0 in hinges and max(hinges) > 0  # input 1 wrong; one hinge inactive
    expected = nll + lam * np.mean(hinges)
    for beta in (1.0, 16.0):
        assert macer_objective(logits, y, sigma, lam, gamma, beta, "released").item() == pytest.approx(expected)
    wrong = torch.tensor([1, 0, 0])  # no input correct: the cross-entropy alone (their code gives NaN)
    alone = macer_objective(logits, wrong, sigma, lam, gamma, 16.0, "released")
    assert alone.item() == pytest.approx(np.mean([-np.log(probs[i, wrong[i]] + 1e-10) for i in range(3)]))
    with pytest.raises(ValueError, match=r"form must be one of \['zhai', 'released'\]"):
        _config("macer", form="ddrs")


def test_macer_gradient_is_finite_when_the_classifier_saturates():
    logits = torch.tensor([[[60.0, 0.0, 0.0]], [[0.0, 0.1, 0.0]]], requires_grad=True)
    loss = macer_objective(logits, torch.tensor([0, 1]), torch.tensor([0.25, 0.25]), 12.0, 8.0, 16.0)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(logits.grad).all()


def test_smoothadv_attack_raises_the_smoothed_loss_within_the_ball(digits_data):
    model, _ = _train("cohen", digits_data, epochs=1)
    model.eval()
    images, labels = _tensors(digits_data["test"])
    x, y = images[:48], labels[:48]
    noise = 0.25 * torch.randn((48, 4, *x.shape[1:]), generator=torch.Generator().manual_seed(3))

    def smoothed_loss(points):
        with torch.no_grad():
            logits = model((points.unsqueeze(1) + noise).flatten(0, 1)).view(48, 4, -1)
        return smoothed_nll(logits, y)

    adversarial = smoothadv_attack(model, x, y, noise, radius=0.5, steps=2, generator=torch.Generator())

    assert smoothed_loss(adversarial).mean() > smoothed_loss(x).mean() + 0.05
    assert (smoothed_loss(adversarial) >= smoothed_loss(x) - 1e-4).float().mean() > 0.9
    assert (adversarial - x).flatten(1).norm(dim=1).max() <= 0.5 + 1e-5
    assert adversarial.min() >= 0 and adversarial.max() <= 1


def _saturating_model() -> nn.Module:
    """Logit margin 2·Σx for class 0: 64 at x = 0.5, 1.3 at x = 0.01."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 2))
    with torch.no_grad():
        model[1].weight.copy_(torch.stack([torch.full((64,), 2.0), torch.zeros(64)]))
        model[1].bias.zero_()
    return model


def test_smoothadv_attack_steps_at_random_where_the_gradient_vanishes():
    """SmoothAdv's ``PGD_L2`` with m > 1 draws: an input whose smoothed probability of y is under the
    1e-20 clamp has zero gradient and takes a random step from the generator; the others do not draw."""
    model = _saturating_model()
    x = torch.full((4, 1, 8, 8), 0.5)
    x[:2] = 0.01  # logit margins 64 and 1.3 for class 0: label 1 saturates on the last two rows only
    y = torch.ones(4, dtype=torch.long)
    noise = torch.zeros(4, 2, 1, 8, 8)

    def attack(seed):
        return smoothadv_attack(model, x, y, noise, radius=0.25, steps=2, generator=torch.Generator().manual_seed(seed))

    first, again, other = attack(0), attack(0), attack(1)
    moved = (first - x).flatten(1).norm(dim=1)
    assert torch.equal(first, again)
    assert (moved > 0.1).all() and (moved <= 0.25 + 1e-6).all()
    assert torch.equal(first[:2], other[:2])  # a gradient to follow: the generator is not used
    assert not torch.equal(first[2:], other[2:])
    assert first.min() >= 0 and first.max() <= 1


def test_smoothadv_attack_with_one_draw_follows_the_cross_entropy_past_the_clamp():
    """With m = 1, Salman et al.'s ``_attack`` ascends the draw's cross-entropy: at a logit margin of 64
    (p(y) ≈ 1.6e-28, under the 1e-20 clamp) the step is still the gradient's, not a random one."""
    model = _saturating_model()
    x, y = torch.full((2, 1, 8, 8), 0.5), torch.ones(2, dtype=torch.long)
    noise = torch.zeros(2, 1, 1, 8, 8)
    logits = model(x).unsqueeze(1)
    assert torch.equal(smoothed_nll(logits, y), F.cross_entropy(logits[:, 0], y, reduction="none"))
    first, other = (
        smoothadv_attack(model, x, y, noise, radius=0.25, steps=1, generator=torch.Generator().manual_seed(seed))
        for seed in (0, 1)
    )
    assert torch.equal(first, other)  # no draw from the generator
    step = (first - x).flatten(1)
    assert torch.allclose(step, torch.full_like(step, 0.25 / 8), atol=1e-6)  # up the gradient, projected to ‖δ‖ = ζ


def test_smoothadv_attack_leaves_model_mode_and_weights_alone():
    model = build_model("mlp", "digits").train()
    x = torch.rand(8, 1, 8, 8)
    noise = 0.25 * torch.randn(8, 1, 1, 8, 8)
    smoothadv_attack(
        model, x, torch.zeros(8, dtype=torch.long), noise, radius=0.25, steps=2, generator=torch.Generator()
    )
    assert model.training
    assert all(p.grad is None for p in model.parameters())


def test_smoothadv_radius_starts_at_zero_and_reaches_zeta_after_ten_epochs():
    """Jeong & Shin A.1: ζ "is initially set to zero, and linearly increased during the first 10 epochs"."""
    params = _config("smoothadv", epsilon=0.5).params
    epochs = (0, 1, 4, 9, 10, 30)
    assert [smoothadv_radius(params, e) for e in epochs] == pytest.approx([0.0, 0.05, 0.2, 0.45, 0.5, 0.5])
    consistency = _config("smoothadv_consistency", epsilon=2.0).params  # the same ramp for + Consistency
    assert [smoothadv_radius(consistency, e) for e in (0, 5, 10)] == pytest.approx([0.0, 1.0, 2.0])
    assert smoothadv_radius(_config("smoothadv", warmup=0).params, 0) == 0.25


def test_gaussian_training_with_one_draw_is_cohens_and_with_m_draws_averages_their_cross_entropy():
    from torch.nn.functional import cross_entropy

    from ddrs.core.noise import get_noise

    torch.manual_seed(0)
    model = build_model("mlp", "digits").double()  # by hand runs other batch sizes: float32 would round otherwise
    x, y = torch.rand(5, 1, 8, 8, dtype=torch.float64), torch.tensor([0, 3, 5, 7, 9])
    sigma = torch.tensor([0.1, 0.25, 0.5, 0.5, 1.0], dtype=torch.float64)
    one = cohen_loss(model, x, y, sigma, torch.Generator().manual_seed(3), _config("cohen").params)
    cohens = cross_entropy(model(get_noise("gaussian").perturb(x, sigma, torch.Generator().manual_seed(3))), y)
    assert one.item() == pytest.approx(cohens.item(), rel=1e-12)

    four = cohen_loss(model, x, y, sigma, torch.Generator().manual_seed(3), _config("cohen", m=4).params)
    draws = torch.randn((5, 4, 1, 8, 8), generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    by_hand = np.mean(
        [
            cross_entropy(model(x + sigma.view(-1, 1, 1, 1) * draws[:, i]), y, reduction="none").tolist()
            for i in range(4)
        ]
    )
    assert four.item() == pytest.approx(float(by_hand), rel=1e-12)


def test_macer_trains_the_cross_entropy_alone_in_its_deferred_epochs():
    """Jeong & Shin's MNIST MACER (train_macer.py: ``if args.deferred and epoch <= args.lr_step_size:
    lbd = 0``, 0-based epochs): with deferred = 2, λ = 0 in epochs 0, 1 and 2; deferred = 0 never."""
    torch.manual_seed(0)
    model = build_model("mlp", "digits")
    x = torch.rand(6, 1, 8, 8)
    y = model(x).argmax(dim=1)  # correctly classified, so the hinge term is active
    sigma = torch.full((6,), 0.01)
    params = _config("macer", m=4, lam=6.0, deferred=2).params

    def loss(epoch: int, lam: float | None = None) -> float:
        chosen = params if lam is None else _config("macer", m=4, lam=lam).params
        return macer_loss(model, x, y, sigma, torch.Generator().manual_seed(1), chosen, epoch).item()

    assert loss(0) == loss(1) == loss(2) == loss(0, lam=0.0)
    assert loss(3) == loss(3, lam=6.0) != loss(0, lam=0.0)
    assert [macer_deferred(_config("macer", deferred=d).params, e) for d in (0, 1) for e in (0, 1, 2)] == [
        *(False, False, False),
        *(True, True, False),
    ]


class _Recorder(nn.Module):
    """Identity-like model that remembers its inputs."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(1024, 10)
        self.seen: list[torch.Tensor] = []

    def forward(self, x):
        self.seen.append(x.detach().clone())
        return self.linear(x.flatten(1))


@pytest.mark.parametrize("loss_fn", [cohen_loss, uniform_loss, macer_loss])
def test_each_example_is_perturbed_at_its_own_scale(loss_fn):
    x = torch.full((3, 1, 32, 32), 0.5)
    sigma = torch.tensor([0.0, 0.1, 0.4])
    model = _Recorder()
    params = {cohen_loss: _config("cohen"), uniform_loss: _config("uniform"), macer_loss: _config("macer", m=2)}
    loss_fn(model, x, torch.zeros(3, dtype=torch.long), sigma, torch.Generator().manual_seed(0), params[loss_fn].params)
    perturbation = (model.seen[0] - x.repeat_interleave(len(model.seen[0]) // 3, dim=0)).flatten(1)
    per_example = perturbation.view(3, -1)
    assert torch.all(per_example[0] == 0)
    if loss_fn is uniform_loss:  # U[−λᵢ, λᵢ]: bounded by λᵢ and filling the interval
        assert per_example.abs().amax(dim=1)[1:].tolist() == pytest.approx([0.1, 0.4], rel=0.01)
    else:  # N(0, σᵢ²): sample standard deviation σᵢ (1024+ draws)
        assert per_example.std(dim=1)[1:].tolist() == pytest.approx([0.1, 0.4], rel=0.1)


def _macer_grads(model, draws_per_pass, lam=12.0):
    x = torch.rand(6, 1, 6, 6, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 0, 1, 2])
    sigma = torch.linspace(0.2, 0.6, 6, dtype=torch.float64)
    params = _config("macer", m=10, lam=lam, gamma=8.0, beta=4.0, draws_per_pass=draws_per_pass).params
    model.zero_grad()
    loss = macer_loss(model, x, y, sigma, torch.Generator().manual_seed(9), params)
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


def _small_conv(batch_norm: bool) -> nn.Module:
    """In float64: chunks of draws run other batch sizes, whose float32 rounding differs by CPU."""
    torch.manual_seed(4)
    norm_layer = [nn.BatchNorm2d(4)] if batch_norm else []
    return nn.Sequential(nn.Conv2d(1, 4, 3), *norm_layer, nn.ReLU(), nn.Flatten(), nn.Linear(64, 3)).double()


@pytest.mark.parametrize("draws_per_pass", [1, 3, 5])
def test_macer_in_chunks_of_draws_gives_the_same_loss_and_gradient(draws_per_pass):
    """m = 10 draws run a few at a time, activations recomputed in backward: the same step (float error)."""
    whole_loss, whole = _macer_grads(_small_conv(batch_norm=False), 0, lam=1.0)
    loss, chunked = _macer_grads(_small_conv(batch_norm=False), draws_per_pass, lam=1.0)
    assert torch.allclose(loss, whole_loss, rtol=0, atol=1e-12)
    assert any(g.abs().max() > 1e-3 for g in whole)  # a gradient that can differ
    for grad, reference in zip(chunked, whole, strict=True):
        assert torch.allclose(grad, reference, rtol=0, atol=1e-12)


def test_chunked_macer_updates_batch_norm_statistics_once_per_chunk():
    """The backward pass's recomputation must not move the running statistics a second time."""
    model = _small_conv(batch_norm=True).train()
    _macer_grads(model, 5)
    reference = _small_conv(batch_norm=True).train()
    x = torch.rand(6, 1, 6, 6, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    from ddrs.training.losses import GAUSSIAN, copies_logits, noise_copies

    points = x.unsqueeze(1) + noise_copies(
        GAUSSIAN, x, torch.linspace(0.2, 0.6, 6, dtype=torch.float64), 10, torch.Generator().manual_seed(9)
    )
    with torch.no_grad():
        for part in points.split(5, dim=1):
            copies_logits(reference, part)
    assert torch.allclose(model[1].running_mean, reference[1].running_mean, rtol=0, atol=1e-12)
    assert torch.allclose(model[1].running_var, reference[1].running_var, rtol=0, atol=1e-12)
    assert int(model[1].num_batches_tracked) == 2


def test_macer_draws_per_pass_must_not_be_negative():
    with pytest.raises(ValueError, match="draws_per_pass"):
        _config("macer", draws_per_pass=-1)
