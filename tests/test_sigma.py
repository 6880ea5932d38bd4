"""Algorithm 1 (DDRS §3.4, Appendix A) and the Appendix-B grid search: objectives, optimum, snapshots, batching."""

from __future__ import annotations

import copy
import inspect
import math

import pytest
import torch
from scipy.stats import norm
from torch import nn

from ddrs.core.noise import get_noise
from ddrs.core.settings import SIGMA_OBJECTIVES, Algorithm1Settings, GridSearchSettings
from ddrs.core.sigma import (
    expected_softmax,
    grid_for_budget,
    grid_search_sigma,
    optimize_sigma,
    radius_objective,
    smoothed_top_class,
)
from ddrs.core.smoothing import lower_confidence_bound
from ddrs.jobs.sigma_search import sigma_log_dataset

GAUSSIAN = get_noise("gaussian")


def algorithm1(model, x, sigma0, c_a=None, *, generator, **settings):
    """Algorithm 1 with its settings spelled as keywords (the tests' shorthand)."""
    return optimize_sigma(model, x, Algorithm1Settings(sigma0=sigma0, **settings), c_a, generator=generator)


def grid_search(model, x, c_a=None, *, generator, **settings):
    """The Appendix-B grid search with its settings spelled as keywords."""
    return grid_search_sigma(model, x, GridSearchSettings(sigma0=1.0, **settings), c_a, generator=generator)


class Disc(nn.Module):
    """Two classes in the plane: class 0 inside the unit disc, a soft boundary of the given sharpness.

    Smoothing a point inside the disc with growing σ first grows the radius σΦ⁻¹(p_A), then the
    noise leaves the disc and p_A falls: the objective has an interior maximum.
    """

    def __init__(self, sharpness: float = 8.0):
        super().__init__()
        self.sharpness = sharpness

    def forward(self, x):
        inside = self.sharpness * (1 - (x.flatten(1) ** 2).sum(dim=1))
        return torch.stack([inside, torch.zeros_like(inside)], dim=1)


TOY_X = torch.tensor([[0.0, 0.0], [0.3, 0.0], [0.0, 0.5]])
TOY_CA = torch.zeros(3, dtype=torch.long)


def generators(seed: int, count: int) -> list[torch.Generator]:
    return [torch.Generator().manual_seed(seed * 1000 + i) for i in range(count)]


def held(objective: str, c_a: torch.Tensor) -> torch.Tensor | None:
    """The c_a argument for ``objective``: ``fixed_class`` holds it, ``released`` chooses its own classes."""
    return c_a if objective == "fixed_class" else None


def monte_carlo_objective(model, x, c_a, scales, n, groups=1000, noise=GAUSSIAN, objective="fixed_class"):
    """E over ε̂ of the n-sample objective Algorithm 1 ascends, at every scale: ``(len(scales), B)``.

    The same ε̂ draws serve every scale (common random numbers), so the brute-force argmax is sharp.
    """
    unit = noise.unit(
        (len(x) * groups, n, *x.shape[1:]), generator=torch.Generator().manual_seed(99), device="cpu", dtype=x.dtype
    )
    xs, cs = x.repeat_interleave(groups, 0), c_a.repeat_interleave(groups)
    values = []
    with torch.no_grad():
        for scale in scales:
            s = torch.full((len(xs),), float(scale))
            psi = expected_softmax(model, xs, s, unit, "fp32")
            values.append(radius_objective(psi, s, noise, objective=objective, c_a=held(objective, cs)))
    return torch.stack(values).view(len(scales), len(x), groups).mean(dim=2)


@pytest.mark.parametrize("objective", SIGMA_OBJECTIVES)
def test_optimiser_reaches_the_brute_force_maximiser_on_a_toy_problem(objective):
    model, n = Disc(), 32
    grid = torch.linspace(0.05, 1.0, 96)
    brute = monte_carlo_objective(model, TOY_X, TOY_CA, grid, n, objective=objective)
    best_scale, best_value = grid[brute.argmax(dim=0)], brute.max(dim=0).values
    sigma = algorithm1(
        model,
        TOY_X,
        0.1,
        held(objective, TOY_CA),
        steps=[0, 200],
        n=n,
        lr=0.03,
        objective=objective,
        generator=generators(0, 3),
    )
    assert torch.allclose(sigma[-1], best_scale, atol=0.08), (sigma[-1], best_scale)
    reached = monte_carlo_objective(model, TOY_X, TOY_CA, sigma[-1].tolist(), n, objective=objective).diagonal()
    start = monte_carlo_objective(model, TOY_X, TOY_CA, [0.1], n, objective=objective)[0]
    assert torch.all(reached > start)
    assert torch.all(reached >= 0.97 * best_value), (reached, best_value)


def test_uniform_noise_optimises_the_half_width_of_eq4():
    uniform = get_noise("uniform")
    grid = torch.linspace(0.05, 1.5, 59)
    # c_A held: under the released objective the third point's λ·|E_0 − E_1| has a second, larger
    # maximum at the grid's edge once class 1 takes over, which ascent from 0.1 rightly never reaches
    brute = monte_carlo_objective(Disc(), TOY_X, TOY_CA, grid, 32, noise=uniform)
    lam = algorithm1(
        Disc(),
        TOY_X,
        0.1,
        TOY_CA,
        steps=[200],
        n=32,
        lr=0.03,
        objective="fixed_class",
        noise="uniform",
        generator=generators(1, 3),
    )[0]
    assert torch.allclose(lam, grid[brute.argmax(dim=0)], atol=0.12), (lam, grid[brute.argmax(dim=0)])


def test_grid_search_picks_the_best_grid_point_with_many_samples():
    grid = grid_for_budget(0.05, 1.0, n=1, budget=20)
    chosen = grid_search(Disc(), TOY_X, grid=grid, n=4096, generator=generators(2, 3))
    brute = monte_carlo_objective(Disc(), TOY_X, TOY_CA, grid, 4096, groups=8, objective="released")
    assert chosen.dtype == torch.float64 and torch.all(torch.isin(chosen, grid))  # the grid's own values
    best = brute.max(dim=0).values
    at_chosen = brute[torch.searchsorted(grid, chosen), torch.arange(3)]
    assert torch.all(at_chosen >= 0.97 * best), (at_chosen, best)


@pytest.mark.parametrize("n,size", [(1, 200), (2, 100), (4, 50), (10, 20)])
def test_grid_matches_the_evaluation_budget_of_appendix_b(n, size):
    grid = grid_for_budget(0.12, 1.0, n)
    assert len(grid) == size and grid[0] == pytest.approx(0.12) and grid[-1] == pytest.approx(1.0)


@pytest.mark.parametrize("objective", SIGMA_OBJECTIVES)
def test_snapshots_equal_separate_runs_to_each_k(digits_model, digits_data, objective):
    x = torch.stack([digits_data["test"][i][0] for i in range(4)])
    c_a = held(objective, digits_model(x).argmax(dim=1))
    kwargs = dict(n=2, lr=0.01, objective=objective)
    together = algorithm1(digits_model, x, 0.25, c_a, steps=[0, 3, 7], generator=generators(3, 4), **kwargs)
    assert torch.equal(together[0], torch.full((4,), 0.25))
    for row, k in enumerate([3, 7]):
        alone = algorithm1(digits_model, x, 0.25, c_a, steps=[k], generator=generators(3, 4), **kwargs)
        assert torch.equal(together[row + 1], alone[0])
    assert not torch.equal(together[1], together[2])


@pytest.mark.parametrize("objective", SIGMA_OBJECTIVES)
def test_batched_equals_one_input_at_a_time(digits_model, digits_data, objective):
    """In float64: a batch of 5 and a batch of 1 sum the network's products in other orders, which in
    float32 moves σ by a few 1e-6 on one CPU and by more on another."""
    model = copy.deepcopy(digits_model).double()
    x = torch.stack([digits_data["test"][i][0] for i in range(5)]).double()
    c_a = model(x).argmax(dim=1)
    kwargs = dict(steps=[10], n=3, lr=0.01, objective=objective)
    batched = algorithm1(model, x, 0.25, held(objective, c_a), generator=generators(4, 5), **kwargs)[0]
    single = torch.cat(
        [
            algorithm1(model, x[i : i + 1], 0.25, held(objective, c_a[i : i + 1]), generator=[g], **kwargs)[0]
            for i, g in enumerate(generators(4, 5))
        ]
    )
    assert torch.allclose(batched, single, rtol=1e-10, atol=0)
    assert not torch.allclose(batched, torch.full((5,), 0.25, dtype=torch.float64))


def test_model_parameters_and_mode_are_untouched(digits_data):
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10), nn.BatchNorm1d(10)).train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.stack([digits_data["test"][i][0] for i in range(3)])
    algorithm1(model, x, 0.25, steps=[5], lr=0.1, generator=generators(5, 3))
    assert model.training
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_batch_statistics_runs_algorithm1_in_training_mode_as_the_ddrs_training_scripts(digits_data):
    """get_sigma in the DDRS training scripts runs the model in training mode: batch-norm normalises
    each noisy batch by its own statistics (another σ than eval mode) and updates the running ones."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10), nn.BatchNorm1d(10)).train()
    with torch.no_grad():
        model[2].running_mean.fill_(3.0)  # running statistics far from any batch's
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.stack([digits_data["test"][i][0] for i in range(6)])
    settings = {"steps": [3], "lr": 0.1, "objective": "released"}
    eval_sigma = algorithm1(model, x, 0.25, generator=generators(5, 6), **settings)[-1]
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    sigma = optimize_sigma(
        model, x, Algorithm1Settings(sigma0=0.25, **settings), generator=generators(5, 6), batch_statistics=True
    )[-1]
    assert model.training and all(p.grad is None for p in model.parameters())
    assert int(model[2].num_batches_tracked) == 3  # one update per step's forward
    assert not torch.equal(model[2].running_mean, before["2.running_mean"])
    assert not torch.allclose(sigma, eval_sigma)


def test_fixed_class_sigma_stays_at_its_lower_bound_when_more_noise_only_hurts_c_a():
    # far outside the disc, class 0 gets (clamped) probability ~0: R = σ/2·(Φ⁻¹(ε) − Φ⁻¹(1 − ε)) < 0 falls with σ
    x = torch.tensor([[3.0, 0.0]])
    sigma = algorithm1(
        Disc(),
        x,
        0.05,
        torch.zeros(1, dtype=torch.long),
        steps=[1, 20],
        n=4,
        lr=0.05,
        objective="fixed_class",
        min_sigma=0.02,
        generator=generators(6, 1),
    )
    assert sigma[:, 0].tolist() == pytest.approx([0.02, 0.02])


# ---------------------------------------------------------------------------------------------
# The released objective (Appendix A's OptimzeSigma) against Eq. 2/3 with c_A fixed.


class Saturated(nn.Module):
    """Class 0 by a logit margin of 1000: the softmax is exactly one-hot under any noise the tests add."""

    def forward(self, x):
        s = x.flatten(1).sum(dim=1)
        return torch.stack([1000 + s, s, -s], dim=1)


#: lr·(Φ⁻¹(0.98) − Φ⁻¹(0.02))/2 per step: the released clamp's rise of a saturated input
RELEASED_GAUSSIAN_RATE = (norm.ppf(0.98) - norm.ppf(0.02)) / 2


@pytest.mark.parametrize(("noise", "rate"), [("gaussian", RELEASED_GAUSSIAN_RATE), ("uniform", 1.0)])
def test_released_objective_raises_a_saturated_input_by_the_clamped_rate_every_step(noise, rate):
    # ψ is one-hot: beyond the clamp, Φ⁻¹(E_A) − Φ⁻¹(E_B) is a constant with zero gradient, so only
    # the σ/2 factor acts: σ += lr·rate at every step. E_A − E_B (uniform, Eq. 4) is not clamped: 1 − 0
    x = torch.zeros(4, 3, dtype=torch.float64)
    sigma = algorithm1(Saturated(), x, 0.12, steps=range(11), lr=1e-3, noise=noise, generator=generators(7, 4))
    assert sigma.diff(dim=0).flatten().tolist() == pytest.approx([1e-3 * rate] * 40, rel=1e-6)


@pytest.mark.parametrize(("noise", "rate"), [("gaussian", RELEASED_GAUSSIAN_RATE), ("uniform", 1.0)])
def test_sigma_rises_to_max_sigma_and_stays_there(noise, rate):
    """DDRS Algorithm 1 projects σ onto [min_sigma, max_sigma] after every step: a σ pushed up stops at max_sigma."""
    x = torch.zeros(4, 3, dtype=torch.float64)
    sigma = algorithm1(
        Saturated(), x, 0.12, steps=range(11), lr=1e-3, max_sigma=0.125, noise=noise, generator=generators(7, 4)
    )
    assert sigma.max() == 0.125 and torch.equal(sigma[-1], torch.full((4,), 0.125, dtype=torch.float64))
    rising = [min(0.12 + k * 1e-3 * rate, 0.125) for k in range(11)]
    assert sigma.T.tolist() == [pytest.approx(rising, rel=1e-6)] * 4


def test_released_objective_reproduces_the_jumps_of_appendix_h():
    # Cohen-DS² at σ₀ = 0.12, α = 1e-4 (Appendix H) first certifies radius 0.75 at K = 400 and 1.0
    # at K = 700: where a saturated input's radius σ_K·Φ⁻¹(p̲_A) crosses them, with p̲_A the
    # Clopper–Pearson bound of n_A = n = 100,000 at α = 0.001
    p_a_lower = lower_confidence_bound(torch.tensor([100_000]), 100_000, 0.001)
    x, c_a = torch.zeros(1, 3), torch.zeros(1, dtype=torch.long)

    def first_steps(objective, steps, held_class=None, clamp=None):
        sigma = algorithm1(
            Saturated(),
            x,
            0.12,
            held_class,
            steps=steps,
            lr=1e-4,
            objective=objective,
            clamp=clamp,
            generator=generators(8, 1),
        )[:, 0]
        radius = GAUSSIAN.radius(p_a_lower, sigma.double())
        return [steps[int(torch.nonzero(radius >= r)[0])] for r in (0.75, 1.0)]

    assert first_steps("released", list(range(100, 1000, 100))) == [400, 700]
    # with c_A held and the 1e-6 clamp the rate is Φ⁻¹(1 − 1e-6) ≈ 4.75 and the jumps come at ≈ 160 / 300
    every_step = list(range(901))
    fixed = first_steps("fixed_class", every_step, c_a, clamp=1e-6)
    rate = 1e-4 * norm.ppf(1 - 1e-6)
    assert fixed == [math.ceil((r / GAUSSIAN.radius(p_a_lower, 1.0).item() - 0.12) / rate) for r in (0.75, 1.0)]
    assert fixed == [162, 300]


class ScaleSwitch(nn.Module):
    """At x = 0, reads the noise level s = RMS(x + σε̂) ≈ σ (100,000 features: s/σ − 1 has sd 0.2%).

    Class 0 for s below ``switch``, class 1 above, each exactly one-hot more than 0.001 away.
    """

    def __init__(self, switch: float):
        super().__init__()
        self.switch = switch

    def forward(self, x):
        z = 1e5 * (x.flatten(1).pow(2).mean(dim=1).sqrt() - self.switch)
        return torch.stack([-z, z], dim=1)


def test_released_picks_the_top_two_classes_at_every_step_and_fixed_class_holds_c_a():
    # σ₀ = 0.5 smooths to class 0; from σ ≈ 0.5924 the top class is 1. With saturated ψ on both
    # sides, the released objective climbs at its constant rate straight through the switch; with
    # c_A = 0 held, E_A = ψ₀ collapses past the switch and σ is pushed back below it.
    model, lr, clamp = ScaleSwitch(0.5924), 0.01, 0.02
    x, c_a = torch.zeros(1, 100_000, dtype=torch.float64), torch.zeros(1, dtype=torch.long)  # σ in float64
    steps = list(range(11))
    released = algorithm1(model, x, 0.5, steps=steps, lr=lr, clamp=clamp, generator=generators(9, 1))[:, 0]
    assert released.tolist() == pytest.approx([0.5 + k * lr * RELEASED_GAUSSIAN_RATE for k in steps], rel=1e-6)
    top = [model(GAUSSIAN.perturb(x, s, torch.Generator().manual_seed(0))).argmax().item() for s in released.tolist()]
    assert top == [0] * 5 + [1] * 6
    fixed = algorithm1(
        model, x, 0.5, c_a, steps=steps, lr=lr, objective="fixed_class", clamp=clamp, generator=generators(9, 1)
    )[:, 0]
    assert fixed[:6].tolist() == pytest.approx(released[:6].tolist(), rel=1e-6)  # identical while class 0 leads
    assert fixed[6:].tolist() == pytest.approx([released[4].item(), released[5].item()] * 2 + [released[4].item()])


def test_objectives_choose_e_a_and_e_b_as_documented():
    psi = torch.tensor([[0.2, 0.5, 0.3], [0.99, 0.01, 0.0]])
    scale = torch.tensor([1.0, 1.0])
    released = radius_objective(psi, scale, GAUSSIAN)
    expected = [(norm.ppf(0.5) - norm.ppf(0.3)) / 2, (norm.ppf(0.98) - norm.ppf(0.02)) / 2]
    assert released.tolist() == pytest.approx(expected, rel=1e-5)
    fixed = radius_objective(psi, scale, GAUSSIAN, objective="fixed_class", c_a=torch.tensor([0, 0]))
    expected = [(norm.ppf(0.2) - norm.ppf(0.5)) / 2, (norm.ppf(0.99) - norm.ppf(0.01)) / 2]
    assert fixed.tolist() == pytest.approx(expected, rel=1e-5)
    # Eq. 4 has no Φ⁻¹ to keep finite: the clamp, which bounds Φ⁻¹'s arguments, leaves it alone
    uniform = radius_objective(psi, 2 * scale, get_noise("uniform"), clamp=0.1)
    assert uniform.tolist() == pytest.approx([2 * (0.5 - 0.3), 2 * (0.99 - 0.01)], rel=1e-6)


def test_labels_are_never_an_argument():
    for function in (smoothed_top_class, optimize_sigma, grid_search_sigma, sigma_log_dataset):
        names = set(inspect.signature(function).parameters)
        assert not names & {"label", "labels", "y", "target", "targets"}, function.__name__


def test_bad_arguments_are_named():
    x = torch.zeros(2, 2)
    c_a = torch.zeros(2, dtype=torch.long)
    with pytest.raises(ValueError, match="sigma0"):
        algorithm1(Disc(), x, 0.0, steps=[1], generator=generators(0, 2))
    with pytest.raises(ValueError, match="K must be an integer >= 0"):
        algorithm1(Disc(), x, 0.1, steps=[-1], generator=generators(0, 2))
    with pytest.raises(ValueError, match="unknown noise"):
        algorithm1(Disc(), x, 0.1, steps=[1], noise="laplace", generator=generators(0, 2))
    with pytest.raises(ValueError, match="generators for 2 inputs"):
        algorithm1(Disc(), x, 0.1, steps=[1], generator=generators(0, 3))
    with pytest.raises(ValueError, match=r"unknown objective 'top1'; choose one of \['fixed_class', 'released'\]"):
        algorithm1(Disc(), x, 0.1, steps=[1], objective="top1", generator=generators(0, 2))
    with pytest.raises(ValueError, match=r"clamp must lie in \(0, 0.5\), got 0.5"):
        grid_search(Disc(), x, grid=[0.1], n=1, clamp=0.5, generator=generators(0, 2))
    with pytest.raises(ValueError, match="'released' takes the top two classes.*pass c_a=None"):
        algorithm1(Disc(), x, 0.1, c_a, steps=[1], generator=generators(0, 2))
    with pytest.raises(ValueError, match="'fixed_class' needs c_a"):
        algorithm1(Disc(), x, 0.1, steps=[1], objective="fixed_class", generator=generators(0, 2))
    with pytest.raises(ValueError, match=r"c_a has shape \(1,\), expected \(2,\)"):
        grid_search(Disc(), x, c_a[:1], grid=[0.1], n=1, objective="fixed_class", generator=generators(0, 2))
