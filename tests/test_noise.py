"""Smoothing distributions: scale-1 draws, per-input scales and the radius formulas."""

import math

import pytest
import torch
from scipy import stats

from ddrs.core.noise import get_noise
from ddrs.core.settings import uniform_half_width


def test_unknown_noise_names_the_choices():
    with pytest.raises(ValueError, match="unknown noise 'laplace'.*gaussian.*uniform"):
        get_noise("laplace")


@pytest.mark.parametrize("name,std", [("gaussian", 1.0), ("uniform", 1 / math.sqrt(3))])
def test_unit_draws_have_scale_one_moments(name, std):
    draws = get_noise(name).unit(
        (200_000,), generator=torch.Generator().manual_seed(0), device="cpu", dtype=torch.float64
    )
    assert abs(draws.mean().item()) < 0.01
    assert draws.std().item() == pytest.approx(std, rel=0.01)


def test_uniform_draws_stay_inside_the_box():
    draws = get_noise("uniform").unit(
        (10_000,), generator=torch.Generator().manual_seed(1), device="cpu", dtype=torch.float32
    )
    assert draws.min() >= -1 and draws.max() <= 1


@pytest.mark.parametrize("name", ["gaussian", "uniform"])
def test_perturb_uses_one_scale_per_input(name):
    noise = get_noise(name)
    x = torch.zeros(3, 1, 4, 4)
    scale = torch.tensor([0.0, 1.0, 2.0])
    noisy = noise.perturb(x, scale, torch.Generator().manual_seed(0))
    assert torch.equal(noisy[0], x[0])
    unit = noise.unit(x.shape, generator=torch.Generator().manual_seed(0), device="cpu", dtype=x.dtype)
    assert torch.allclose(noisy[2], 2 * unit[2])


def test_perturb_rejects_a_sigma_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"sigma has shape \(2,\), expected \(3,\)"):
        get_noise("gaussian").perturb(torch.zeros(3, 2), torch.ones(2))


def test_gaussian_radius_is_sigma_times_probit():
    radius = get_noise("gaussian").radius(torch.tensor([0.5, 0.9, 0.99]), torch.tensor([0.25, 0.5, 1.0]))
    expected = [0.0, 0.5 * stats.norm.ppf(0.9), stats.norm.ppf(0.99)]
    assert radius.tolist() == pytest.approx(expected)


def test_uniform_radius_is_yangs_l1_bound():
    radius = get_noise("uniform").radius(torch.tensor([0.5, 0.75, 1.0]), 2.0)
    assert radius.tolist() == pytest.approx([0.0, 1.0, 2.0])


def test_objectives_match_eq3_and_eq4():
    e_a, e_b, scale = torch.tensor([0.8]), torch.tensor([0.1]), torch.tensor([0.5])
    gaussian = get_noise("gaussian").objective(e_a, e_b, scale)
    assert gaussian.item() == pytest.approx(0.25 * (stats.norm.ppf(0.8) - stats.norm.ppf(0.1)), rel=1e-6)
    assert get_noise("uniform").objective(e_a, e_b, scale).item() == pytest.approx(0.35)


def test_yang_std_convention():
    assert uniform_half_width(0.5, "yang_std") == pytest.approx(0.5 * math.sqrt(3))
    assert uniform_half_width(0.5, "half_width") == 0.5
