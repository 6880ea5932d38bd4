"""Algorithm 1 (DDRS §3.4) and the Appendix-B grid search: optimum, snapshots, batching, σ log, CLI."""

from __future__ import annotations

import inspect

import pandas as pd
import pytest
import torch
from killed_job import FailsAfter
from torch import nn

from ddrs.cli import main
from ddrs.data import TensorImages
from ddrs.noise import get_noise
from ddrs.seeds import Stream, input_generators
from ddrs.sigma import (
    expected_softmax,
    grid_for_budget,
    grid_search_sigma,
    optimize_dataset,
    optimize_sigma,
    radius_objective,
    smoothed_top_class,
)

GAUSSIAN = get_noise("gaussian")


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


def monte_carlo_objective(model, x, c_a, scales, n, groups=1000, noise=GAUSSIAN):
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
            values.append(radius_objective(expected_softmax(model, xs, s, unit, "fp32"), cs, s, noise))
    return torch.stack(values).view(len(scales), len(x), groups).mean(dim=2)


def test_optimiser_reaches_the_brute_force_maximiser_on_a_toy_problem():
    model, n = Disc(), 32
    grid = torch.linspace(0.05, 1.0, 96)
    brute = monte_carlo_objective(model, TOY_X, TOY_CA, grid, n)
    best_scale, best_value = grid[brute.argmax(dim=0)], brute.max(dim=0).values
    sigma = optimize_sigma(model, TOY_X, 0.1, TOY_CA, steps=[0, 200], n=n, lr=0.03, generator=generators(0, 3))
    assert torch.allclose(sigma[-1], best_scale, atol=0.08), (sigma[-1], best_scale)
    reached = monte_carlo_objective(model, TOY_X, TOY_CA, sigma[-1].tolist(), n).diagonal()
    start = monte_carlo_objective(model, TOY_X, TOY_CA, [0.1], n)[0]
    assert torch.all(reached > start)
    assert torch.all(reached >= 0.97 * best_value), (reached, best_value)


def test_uniform_noise_optimises_the_half_width_of_eq4():
    uniform = get_noise("uniform")
    grid = torch.linspace(0.05, 1.5, 59)
    brute = monte_carlo_objective(Disc(), TOY_X, TOY_CA, grid, 32, noise=uniform)
    lam = optimize_sigma(
        Disc(), TOY_X, 0.1, TOY_CA, steps=[200], n=32, lr=0.03, noise="uniform", generator=generators(1, 3)
    )[0]
    assert torch.allclose(lam, grid[brute.argmax(dim=0)], atol=0.12), (lam, grid[brute.argmax(dim=0)])


def test_grid_search_picks_the_best_grid_point_with_many_samples():
    grid = grid_for_budget(0.05, 1.0, n=1, budget=20)
    chosen = grid_search_sigma(Disc(), TOY_X, TOY_CA, grid=grid, n=4096, generator=generators(2, 3))
    brute = monte_carlo_objective(Disc(), TOY_X, TOY_CA, grid, 4096, groups=8)
    assert torch.all(torch.isin(chosen, grid.float()))
    best = brute.max(dim=0).values
    at_chosen = brute[torch.searchsorted(grid.float(), chosen), torch.arange(3)]
    assert torch.all(at_chosen >= 0.97 * best), (at_chosen, best)


@pytest.mark.parametrize("n,size", [(1, 200), (2, 100), (4, 50), (10, 20)])
def test_grid_matches_the_evaluation_budget_of_appendix_b(n, size):
    grid = grid_for_budget(0.12, 1.0, n)
    assert len(grid) == size and grid[0] == pytest.approx(0.12) and grid[-1] == pytest.approx(1.0)


def test_snapshots_equal_separate_runs_to_each_k(digits_model, digits_data):
    x = torch.stack([digits_data["test"][i][0] for i in range(4)])
    c_a = digits_model(x).argmax(dim=1)
    kwargs = dict(n=2, lr=0.01)
    together = optimize_sigma(digits_model, x, 0.25, c_a, steps=[0, 3, 7], generator=generators(3, 4), **kwargs)
    assert torch.equal(together[0], torch.full((4,), 0.25))
    for row, k in enumerate([3, 7]):
        alone = optimize_sigma(digits_model, x, 0.25, c_a, steps=[k], generator=generators(3, 4), **kwargs)
        assert torch.equal(together[row + 1], alone[0])
    assert not torch.equal(together[1], together[2])


def test_batched_equals_one_input_at_a_time(digits_model, digits_data):
    x = torch.stack([digits_data["test"][i][0] for i in range(5)])
    c_a = digits_model(x).argmax(dim=1)
    kwargs = dict(steps=[10], n=3, lr=0.01)
    batched = optimize_sigma(digits_model, x, 0.25, c_a, generator=generators(4, 5), **kwargs)[0]
    single = torch.cat(
        [
            optimize_sigma(digits_model, x[i : i + 1], 0.25, c_a[i : i + 1], generator=[g], **kwargs)[0]
            for i, g in enumerate(generators(4, 5))
        ]
    )
    assert torch.allclose(batched, single, rtol=1e-5, atol=1e-7)
    assert not torch.allclose(batched, torch.full((5,), 0.25))


def test_model_parameters_and_mode_are_untouched(digits_data):
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10), nn.BatchNorm1d(10)).train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.stack([digits_data["test"][i][0] for i in range(3)])
    optimize_sigma(model, x, 0.25, torch.zeros(3, dtype=torch.long), steps=[5], lr=0.1, generator=generators(5, 3))
    assert model.training
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_sigma_stays_at_its_lower_bound_when_more_noise_only_hurts():
    # far outside the disc, class 0 gets (clamped) probability ~0: R = σ/2·(Φ⁻¹(ε) − Φ⁻¹(1 − ε)) < 0 falls with σ
    x = torch.tensor([[3.0, 0.0]])
    sigma = optimize_sigma(
        Disc(),
        x,
        0.05,
        torch.zeros(1, dtype=torch.long),
        steps=[1, 20],
        n=4,
        lr=0.05,
        min_scale=0.02,
        generator=generators(6, 1),
    )
    assert sigma[:, 0].tolist() == pytest.approx([0.02, 0.02])


def test_labels_are_never_an_argument():
    for function in (smoothed_top_class, optimize_sigma, grid_search_sigma, optimize_dataset):
        names = set(inspect.signature(function).parameters)
        assert not names & {"label", "labels", "y", "target", "targets"}, function.__name__


def test_sigma_log_uses_the_smoothed_prediction_not_the_label(digits_model, digits_data, tmp_path):
    test = digits_data["test"]
    indices = list(range(8))
    images = torch.stack([test[i][0] for i in indices])
    wrong = TensorImages(images, torch.tensor([(test[i][1] + 1) % 10 for i in indices]))
    path = optimize_dataset(
        digits_model,
        wrong,
        indices,
        tmp_path / "sigma.tsv",
        sigma0=0.25,
        steps=[0, 5],
        num_classes=10,
        n0=50,
        lr=0.01,
        batch=3,
    )
    log = pd.read_csv(path, sep="\t")
    assert list(log.columns) == ["idx", "c_a", "sigma_K0", "sigma_K5"]
    assert log["idx"].tolist() == indices
    expected = smoothed_top_class(
        digits_model,
        images,
        0.25,
        num_classes=10,
        noise="gaussian",
        n0=50,
        batch_size=400,
        generator=input_generators(0, indices, Stream.SELECTION, torch.device("cpu")),
    )
    assert log["c_a"].tolist() == expected.tolist()
    assert (log["c_a"] != pd.Series(wrong.targets)).sum() >= 6  # the model is ~95% accurate on true labels
    assert (log["sigma_K0"] == 0.25).all()


def test_sigma_log_resumes_to_the_uninterrupted_result(digits_model, digits_data, tmp_path):
    kwargs = dict(sigma0=0.25, steps=[2, 4], num_classes=10, n0=20, lr=0.01, n=2)
    indices = list(range(0, 12, 2))
    whole = optimize_dataset(digits_model, digits_data["test"], indices, tmp_path / "whole.tsv", batch=4, **kwargs)
    # an interrupted run: killed after two batches of two, in the middle of writing the next row
    with pytest.raises(RuntimeError, match="simulated crash"):
        optimize_dataset(
            FailsAfter(digits_model, 12), digits_data["test"], indices, tmp_path / "resumed.tsv", batch=2, **kwargs
        )
    partial = tmp_path / "resumed.tsv.partial"
    assert len(partial.read_text().splitlines()) == 1 + 4
    partial.write_text(partial.read_text()[:-9])
    # rerun with another batch size
    resumed = optimize_dataset(digits_model, digits_data["test"], indices, tmp_path / "resumed.tsv", batch=3, **kwargs)
    a, b = pd.read_csv(whole, sep="\t"), pd.read_csv(resumed, sep="\t")
    assert a["idx"].tolist() == b["idx"].tolist() == indices
    pd.testing.assert_frame_equal(a, b, rtol=1e-5)


def test_bad_arguments_are_named():
    x = torch.zeros(2, 2)
    c_a = torch.zeros(2, dtype=torch.long)
    with pytest.raises(ValueError, match="sigma0"):
        optimize_sigma(Disc(), x, 0.0, c_a, steps=[1], generator=generators(0, 2))
    with pytest.raises(ValueError, match="K must be an integer >= 0"):
        optimize_sigma(Disc(), x, 0.1, c_a, steps=[-1], generator=generators(0, 2))
    with pytest.raises(ValueError, match="unknown noise"):
        optimize_sigma(Disc(), x, 0.1, c_a, steps=[1], noise="laplace", generator=generators(0, 2))
    with pytest.raises(ValueError, match="generators for 2 inputs"):
        optimize_sigma(Disc(), x, 0.1, c_a, steps=[1], generator=generators(0, 3))


def test_cli_optimize_sigma_end_to_end(digits_checkpoint, tmp_path, capsys):
    out = tmp_path / "sigma.tsv"
    argv = [
        "optimize-sigma",
        "--checkpoint",
        str(digits_checkpoint),
        "--dataset",
        "digits",
        "--sigma0",
        "0.25",
        "--k",
        "0",
        "3",
        "--n0",
        "20",
        "--lr",
        "0.01",
        "--max",
        "6",
        "--device",
        "cpu",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    log = pd.read_csv(out, sep="\t")
    assert list(log.columns) == ["idx", "c_a", "sigma_K0", "sigma_K3"] and log["idx"].tolist() == list(range(6))
    grid_out = tmp_path / "grid.tsv"
    argv = [
        "optimize-sigma",
        "--checkpoint",
        str(digits_checkpoint),
        "--dataset",
        "digits",
        "--sigma0",
        "0.25",
        "--grid-search",
        "--grid-n",
        "10",
        "--grid-budget",
        "40",
        "--n0",
        "20",
        "--max",
        "4",
        "--out",
        str(grid_out),
    ]
    assert main(argv) == 0
    grid_log = pd.read_csv(grid_out, sep="\t")
    assert list(grid_log.columns) == ["idx", "c_a", "sigma_grid_n10"]
    assert grid_log["sigma_grid_n10"].between(0.12, 1.0).all()
    assert "grid search over 4 scales" in capsys.readouterr().out


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--sigma0", "0"], "--sigma0 must be > 0"),
        (["--sigma0", "0.25", "--noise", "laplace"], "unknown noise"),
        (["--sigma0", "0.25", "--k", "-5"], "K must be an integer >= 0"),
    ],
)
def test_cli_optimize_sigma_bad_inputs(digits_checkpoint, tmp_path, capsys, flags, message):
    argv = [
        "optimize-sigma",
        "--checkpoint",
        str(digits_checkpoint),
        "--dataset",
        "digits",
        *flags,
        "--out",
        str(tmp_path / "s.tsv"),
    ]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
