"""ACR-focused Gaussian training (Sun et al. 2024, §5): the adaptive attack on a hand-built linear
model, the radius weights, discarding, sampling, and the plan's schedule and state."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from scipy.stats import beta, norm
from torch import nn
from torch.nn import functional as F

import ddrs.training.easy_focus as easy_focus
from ddrs.data import TensorImages
from ddrs.methods import EasyFocusParams
from ddrs.training import EasyFocusPlan, TrainConfig, adaptive_attack, radius_weights, reference_lower_bound


def _sign_model() -> nn.Module:
    """Two classes on R²: logits (z₁, 0), so class 0 iff z₁ > 0; the cross-entropy gradient of
    class 0 with respect to z points along −e₁."""
    model = nn.Linear(2, 2)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 0.0]]))
        model.bias.zero_()
    return model


def _hand_attack(x: np.ndarray, delta: np.ndarray, steps: int, step: float) -> np.ndarray:
    """Algorithm 1 for the sign model: stop once x₁ + δ₁ <= 0, else step along −e₁, back to the sphere."""
    radius = np.linalg.norm(delta)
    for _ in range(steps):
        if x[0] + delta[0] <= 0:
            break
        delta = delta + step * np.array([-1.0, 0.0])
        delta = radius * delta / np.linalg.norm(delta)
    return delta


def test_adaptive_attack_stops_at_a_misclassification_and_keeps_the_noise_norm():
    model = _sign_model().train()
    x = torch.tensor([[0.5, 0.0]])
    draws = torch.tensor(
        [
            [-1.0, 0.0],  # already misclassified: returned as drawn
            [0.0, 1.0],  # misclassified after one step: that step's δ, not a second one
            [0.0, 0.2],  # too short to ever cross: all T steps
            [0.3, -0.4],
        ]
    ).unsqueeze(0)
    attacked = adaptive_attack(model, x, torch.tensor([0]), draws, steps=3, step_size=1.0)

    expected = [_hand_attack(x[0].numpy(), d.numpy().astype(np.float64), 3, 1.0) for d in draws[0]]
    assert attacked[0].numpy() == pytest.approx(np.stack(expected), abs=1e-6)
    assert torch.equal(attacked[0, 0], draws[0, 0])
    assert attacked[0, 1].numpy() == pytest.approx([-(0.5**0.5), 0.5**0.5], abs=1e-6)
    assert attacked.norm(dim=2).numpy() == pytest.approx(draws.norm(dim=2).numpy(), rel=1e-6)
    assert model.training and all(p.grad is None for p in model.parameters())


def test_adaptive_attack_leaves_inputs_alone_when_every_draw_is_misclassified():
    draws = torch.tensor([[[-2.0, 0.1], [-1.0, -1.0]]])
    attacked = adaptive_attack(_sign_model(), torch.tensor([[0.5, 0.0]]), torch.tensor([0]), draws, 5, 0.3)
    assert torch.equal(attacked, draws)


def test_reference_bound_is_clopper_pearson_at_p_min():
    """N = 16, α = 0.1: 12 of 16 correct give 0.561, the smallest count with a positive radius."""
    assert reference_lower_bound(0.75, 16, 0.1) == pytest.approx(beta.ppf(0.1, 12, 5), rel=1e-9)
    with pytest.raises(ValueError, match="no positive certified radius"):
        reference_lower_bound(0.6, 16, 0.1)  # 9 of 16: bound 0.37


def test_radius_weights_at_known_lower_bounds():
    reference = 0.5611
    p_hat = torch.tensor([0.0, 0.3, 0.5, 0.5611, 0.6, 0.7778, 0.866], dtype=torch.float64)
    expected = [max(1.0, norm.ppf(p) / norm.ppf(reference)) for p in p_hat.tolist()]
    assert radius_weights(p_hat, reference).tolist() == pytest.approx(expected, rel=1e-9)
    assert radius_weights(p_hat, reference)[:4].tolist() == [1.0, 1.0, 1.0, 1.0]  # p̂_A <= ½ and at p̂_min
    assert radius_weights(p_hat, reference)[-1].item() == pytest.approx(norm.ppf(0.866) / norm.ppf(0.5611))


SIZE = 15000
DISCARD_COUNTS = torch.tensor([0, 39, 40, 41, 100]).repeat(SIZE // 5)  # of 100 draws; p_t = 0.4
REWEIGH_COUNTS = torch.tensor([5, 12, 16])  # of 16 draws, cycled over the kept inputs


def _plan(**params) -> EasyFocusPlan:
    """E_t = 2 as their code runs it (``--ds_epoch 2``): the 0-based epochs 0 and 1 are plain, 2 is E_t."""
    values = dict(start_epoch=2, threshold=0.4, discard_draws=100, reweigh_draws=16, reweigh_every=3)
    values.update(params)
    config = TrainConfig(dataset="digits", arch="mlp", method="easy_focus", sigma=0.25, params=values)
    return EasyFocusPlan(config.params, config, torch.device("cpu"))


@pytest.fixture
def counted(monkeypatch):
    """Replace the noisy-draw counting by known counts; record each call's (indices, draws)."""
    calls = []

    def known_counts(model, dataset, indices, sigmas, draws, **kwargs):
        calls.append((list(indices), draws))
        if draws == 100:
            return DISCARD_COUNTS[indices]
        return REWEIGH_COUNTS.repeat(len(indices) // 3 + 1)[: len(indices)]

    monkeypatch.setattr(easy_focus, "correct_counts", known_counts)
    return calls


def _visit(plan: EasyFocusPlan, epoch: int, seed: int = 0) -> torch.Tensor | None:
    dataset = TensorImages(torch.zeros(SIZE, 1), torch.zeros(SIZE))
    return plan.plan(epoch, nn.Identity(), dataset, torch.full((SIZE,), 0.25), seed)


def test_discarding_keeps_exactly_the_inputs_with_p_a_at_least_the_threshold(counted):
    plan = _plan(reweigh=False)
    assert _visit(plan, 0) is None and _visit(plan, 1) is None  # plain Gaussian training before E_t
    visits = _visit(plan, 2)
    assert plan.kept.tolist() == (DISCARD_COUNTS >= 40).tolist()  # 40/100 = p_t is kept
    assert len(visits) == SIZE  # the number of steps per epoch is unchanged
    assert set(visits.tolist()) <= set(plan.kept.nonzero().squeeze(1).tolist())
    # uniform over the kept 3/5: the expected number of distinct inputs among SIZE draws
    kept = SIZE * 3 // 5
    assert len(set(visits.tolist())) == pytest.approx(kept * (1 - np.exp(-SIZE / kept)), rel=0.02)
    _visit(plan, 3)
    assert len(counted) == 1 and counted[0][1] == 100  # discarded once, at E_t only


def test_reweighing_samples_kept_inputs_by_radius_weight(counted):
    plan = _plan()
    visits = _visit(plan, 2)
    kept = plan.kept.nonzero().squeeze(1)
    assert counted[1] == (kept.tolist(), 16)  # the weights are estimated on the kept inputs only
    top = norm.ppf(beta.ppf(0.1, 16, 1)) / norm.ppf(beta.ppf(0.1, 12, 5))  # 16 of 16 vs 12 of 16
    weight_of = {5: 1.0, 12: 1.0, 16: top}
    expected = [weight_of[int(c)] for c in REWEIGH_COUNTS.repeat(len(kept) // 3)]
    assert plan.weights[kept].tolist() == pytest.approx(expected, rel=1e-9)
    assert plan.weights[~plan.kept].eq(0).all()
    # a kept input with 16 of 16 correct is drawn `top` times as often as one with 5 or 12
    hits = torch.bincount(visits, minlength=SIZE)[kept].double()
    heavy = hits[REWEIGH_COUNTS.repeat(len(kept) // 3) == 16].mean()
    light = hits[REWEIGH_COUNTS.repeat(len(kept) // 3) != 16].mean()
    assert (heavy / light).item() == pytest.approx(top, rel=0.1)


def test_weights_are_updated_every_few_epochs_from_e_t_and_resumed_from_the_state(counted):
    plan = _plan()
    runs = {epoch: _visit(plan, epoch, seed=epoch) for epoch in range(2, 9)}
    updates = [draws for _, draws in counted]
    assert updates == [100, 16, 16, 16]  # discard at E_t; weights at E_t, E_t + 3, E_t + 6

    resumed = _plan()
    resumed.load_state_dict({key: value.clone() for key, value in _plan_state_after(6).items()})
    counted.clear()
    assert torch.equal(_visit(resumed, 6, seed=6), runs[6])  # no re-estimation between updates
    assert counted == []


def _plan_state_after(epoch: int) -> dict:
    plan = _plan()
    for e in range(2, epoch):
        _visit(plan, e, seed=e)
    return plan.state_dict()


@pytest.mark.parametrize("start", [1, 4])
def test_e_t_is_the_number_of_plain_epochs_as_their_code_runs_it(counted, start):
    """Sun et al.'s code/train.py: 0-based epochs, ``ds_epochs = [args.ds_epoch]`` and discarding at
    ``epoch in ds_epochs``: ``--ds_epoch 70`` trains 70 plain epochs (0 … 69). The attack of the loss
    switches on in the same epoch as the plan."""
    plan = _plan(start_epoch=start)
    params = plan.params
    assert params.schedule == "code" and easy_focus.first_focus_epoch(params) == start
    for epoch in range(start):
        assert _visit(plan, epoch) is None and not easy_focus.focus_started(params, epoch)
    assert counted == []
    assert _visit(plan, start) is not None and easy_focus.focus_started(params, start)
    assert counted[0][1] == 100  # discarding ran at E_t


@pytest.mark.parametrize("start", [1, 4])
def test_e_t_counts_epochs_from_one_under_the_paper_schedule(counted, start):
    """Their Algorithm 2: "for epoch = 1 to N: if epoch < E_t then Gaussian training … if epoch = E_t
    then discard": E_t − 1 plain epochs, and E_t = 1 focuses from the first epoch."""
    plan = _plan(start_epoch=start, schedule="paper")
    params = plan.params
    for epoch in range(start - 1):  # the trainer's epochs are 0-based
        assert _visit(plan, epoch) is None and not easy_focus.focus_started(params, epoch)
    assert counted == []
    assert _visit(plan, start - 1) is not None and easy_focus.focus_started(params, start - 1)
    assert counted[0][1] == 100  # discarding ran at E_t


def test_without_discarding_their_code_starts_every_component_at_the_first_epoch(counted):
    """Their ablation without ``--ds_hard``: ``ds_epochs = [0]``, so the weights are estimated at
    epochs 0, 3, 6 (``range(ds_epochs[-1], epochs, dataset_weight_epoch)``) and the attack is on
    from epoch 0 (``epoch >= ds_epochs[-1]``), whatever E_t says; the paper's reading keeps E_t."""
    plan = _plan(start_epoch=5, discard=False)
    assert easy_focus.first_focus_epoch(plan.params) == 0
    for epoch in range(7):
        assert _visit(plan, epoch, seed=epoch) is not None
    assert [draws for _, draws in counted] == [16, 16, 16]  # no discarding; weights at 0, 3, 6
    assert easy_focus.focus_started(plan.params, 0)
    paper = _plan(start_epoch=5, discard=False, schedule="paper")
    assert easy_focus.first_focus_epoch(paper.params) == 4 and _visit(paper, 3) is None


def test_from_e_t_the_loss_trains_on_the_adaptively_attacked_draws(digits_model, digits_data):
    """From E_t with ``attack`` on, the loss is the cross-entropy at the attacked draws of the same generator."""
    x, y = digits_data["train"].images[:32], torch.as_tensor(digits_data["train"].targets[:32])
    sigma = torch.linspace(0.2, 0.5, 32)
    params = EasyFocusParams(m=4, start_epoch=3, steps=4, epsilon=0.5)  # 0-based epochs 0, 1, 2 plain

    def loss(params, epoch):
        return easy_focus.easy_focus_loss(digits_model, x, y, sigma, torch.Generator().manual_seed(5), params, epoch)

    def cross_entropy(noise):
        logits = digits_model((x.unsqueeze(1) + noise).flatten(0, 1))
        return F.cross_entropy(logits, y.repeat_interleave(4))

    noise = torch.randn((32, 4, *x.shape[1:]), generator=torch.Generator().manual_seed(5)) * sigma.view(32, 1, 1, 1, 1)
    attacked = adaptive_attack(digits_model, x, y, noise, steps=4, step_size=0.5)
    assert not torch.equal(attacked, noise)
    assert torch.equal(loss(params, 3), cross_entropy(attacked))  # epoch E_t = 3, 0-based as their code
    assert torch.equal(loss(dataclasses.replace(params, attack=False), 3), cross_entropy(noise))
    assert torch.equal(loss(params, 2), cross_entropy(noise))  # before E_t: plain draws
    assert torch.equal(loss(dataclasses.replace(params, schedule="paper"), 2), cross_entropy(attacked))
    assert cross_entropy(attacked) > cross_entropy(noise) + 0.01


def test_e_t_zero_and_an_unknown_schedule_are_refused():
    with pytest.raises(ValueError, match="start_epoch must be >= 1"):
        _plan(start_epoch=0)
    with pytest.raises(ValueError, match=r"schedule must be one of \['code', 'paper'\]"):
        _plan(schedule="algorithm")


def test_no_component_on_samples_with_replacement_in_their_code_and_plain_passes_in_the_paper(counted):
    """Without ``--ds_hard`` and ``--dataset_weight`` their code still draws ``RandomSampler(replacement=True,
    num_samples=dataset_num)`` from epoch 0; Algorithm 2 leaves the epochs plain."""
    visits = _visit(_plan(discard=False, reweigh=False), 0)
    assert len(visits) == SIZE and len(set(visits.tolist())) == pytest.approx(SIZE * (1 - np.exp(-1)), rel=0.02)
    assert _visit(_plan(discard=False, reweigh=False, schedule="paper"), 5) is None and counted == []


def test_discarding_everything_fails_clearly(monkeypatch):
    def none_correct(model, dataset, indices, sigmas, draws, **kwargs):
        return torch.zeros(len(indices), dtype=torch.long)

    monkeypatch.setattr(easy_focus, "correct_counts", none_correct)
    with pytest.raises(ValueError, match="discarded every training input at epoch 3"):
        _visit(_plan(), 2)
