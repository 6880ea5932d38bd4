"""PREDICT / CERTIFY (Cohen et al. 2019): statistical soundness, exact statistics, batching, errors."""

import itertools
import math

import pytest
import torch
from scipy.stats import beta, binom, norm
from statsmodels.stats.proportion import proportion_confint
from torch import nn

from ddrs.core.device import BaseClassifier
from ddrs.core.settings import CertifySettings, DeviceSettings
from ddrs.core.smoothing import (
    ABSTAIN,
    Smooth,
    certify_batch,
    lower_confidence_bound,
    predict_batch,
    sample_counts,
    sample_predictions,
)


def certify_with(model, x, scale, *, num_classes, generator, batch_size, **settings):
    """CERTIFY for a batch with its settings spelled as keywords (the tests' shorthand), on the CPU."""
    on_cpu = BaseClassifier(
        model, num_classes, x.device, DeviceSettings(batch_size=batch_size, memory_format="contiguous")
    )
    return certify_batch(on_cpu, x, scale, CertifySettings(**settings), generator=generator)


DIM = 10


def linear_classifier(w: torch.Tensor, b: float) -> nn.Module:
    """Class 1 iff w·x + b > 0: logits (0, w·x + b)."""
    model = nn.Linear(len(w), 2)
    with torch.no_grad():
        model.weight.copy_(torch.stack([torch.zeros_like(w), w]))
        model.bias.copy_(torch.tensor([0.0, b]))
    return model.eval()


def generators(seeds) -> list[torch.Generator]:
    return [torch.Generator().manual_seed(int(seed)) for seed in seeds]


def points_at_margins(w: torch.Tensor, b: float, margins: torch.Tensor, seed: int) -> torch.Tensor:
    """Random points whose signed value w·x + b equals ``margins``."""
    base = torch.randn(len(margins), len(w), generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    on_plane = base - ((base @ w.double() + b) / w.double().dot(w.double()))[:, None] * w.double()
    return (on_plane + margins[:, None] * w.double() / w.double().dot(w.double())).float()


def failure_bound(trials: int, alpha: float, tail: float = 1e-4) -> int:
    """Largest failure count a sound α-level procedure exceeds with probability < ``tail``."""
    return int(binom.isf(tail, trials, alpha))


TRIALS, ALPHA = 1000, 0.05
#: CERTIFY of the hyperplane tests: two classes, a few hundred draws per input
HYPERPLANE_CERTIFY = dict(num_classes=2, n0=10, n=300, alpha=ALPHA, batch_size=1000)


def test_gaussian_certificates_are_sound_and_useful_for_a_linear_classifier():
    # For a linear base classifier the smoothed classifier is the same half-space, so the exact
    # ℓ2-robust radius is |w·x + b| / ||w|| (Cohen et al. 2019, Example 1).
    sigma, b = 0.5, 0.3
    w = torch.randn(DIM, generator=torch.Generator().manual_seed(1))
    distance = torch.linspace(-1.5, 1.5, TRIALS, dtype=torch.float64) * sigma  # p_A up to Φ(3)
    x = points_at_margins(w, b, distance * w.double().norm(), seed=2)
    result = certify_with(
        linear_classifier(w, b), x, sigma, noise="gaussian", generator=generators(range(TRIALS)), **HYPERPLANE_CERTIFY
    )
    truth = (distance > 0).long()
    answered = result.predict != ABSTAIN
    failures = answered & ((result.predict != truth) | (result.radius > distance.abs() * (1 + 1e-5)))
    assert failures.sum() <= failure_bound(TRIALS, ALPHA)
    # power: far from the boundary the certificate is a sizeable share of the truth
    far = distance.abs() > sigma
    assert answered[far].double().mean() > 0.95
    assert torch.median(result.radius[far] / distance.abs()[far]) > 0.6


def test_uniform_certificates_are_sound_and_tight_for_an_axis_aligned_classifier():
    # w = e_1: w·ε ~ U[-λ, λ] so p_A = (λ + m) / 2λ exactly, the smoothed classifier is the same
    # half-space, and its exact ℓ1-robust radius m = |w·x + b| / ||w||_∞ equals 2λ(p_A − ½):
    # any radius above it is a certificate violation.
    lam, b = 1.0, -0.2
    w = torch.zeros(DIM)
    w[0] = 1.0
    margin = torch.linspace(-0.95, 0.95, TRIALS, dtype=torch.float64) * lam
    x = points_at_margins(w, b, margin, seed=3)
    result = certify_with(
        linear_classifier(w, b),
        x,
        lam,
        noise="uniform",
        generator=generators(range(10_000, 10_000 + TRIALS)),
        **HYPERPLANE_CERTIFY,
    )
    truth = (margin > 0).long()
    true_radius = margin.abs() / w.abs().max()
    answered = result.predict != ABSTAIN
    failures = answered & ((result.predict != truth) | (result.radius > true_radius + 1e-5))
    assert failures.sum() <= failure_bound(TRIALS, ALPHA)
    far = margin.abs() > 0.5 * lam
    assert answered[far].double().mean() > 0.95
    assert torch.median(result.radius[far] / true_radius[far]) > 0.7


def uniform_sum_cdf(t: torch.Tensor, half_widths: torch.Tensor) -> torch.Tensor:
    """P(Σᵢ εᵢ ≤ t) for independent εᵢ ~ U[−aᵢ, aᵢ], exactly: the inclusion–exclusion sum over the 2^d corners."""
    a, d = half_widths.double(), len(half_widths)
    corners = torch.tensor(list(itertools.product([0, 1], repeat=d)), dtype=torch.float64)
    signs = (-1.0) ** corners.sum(dim=1)
    reach = (t.double() + a.sum())[:, None] - corners @ (2 * a)
    return (signs * reach.clamp(min=0) ** d).sum(dim=1) / (math.factorial(d) * (2 * a).prod())


def test_uniform_certificates_stay_below_the_exact_l1_certificate_for_a_general_hyperplane():
    """Uniform CERTIFY (DDRS §4.4) is sound: radius ≤ 2λ(p_A − ½) at the exact p_A on all but ≤ α of inputs."""
    # w·ε is a sum of uniforms U[−λ|w_i|, λ|w_i|], so p_A = P(w·ε < |w·x + b|) is exact and every coordinate of
    # the noise counts. The ℓ1 distance |w·x + b| / ||w||_∞ lies far above 2λ(p_A − ½): it would catch nothing.
    lam, b = 0.5, 0.1
    w = torch.randn(DIM, generator=torch.Generator().manual_seed(4))
    margin = torch.linspace(-1.0, 1.0, 400, dtype=torch.float64) * lam * w.abs().sum() / 2  # p_A up to 0.99
    x = points_at_margins(w, b, margin, seed=5)
    result = certify_with(
        linear_classifier(w, b),
        x,
        lam,
        noise="uniform",
        generator=generators(range(20_000, 20_400)),
        **HYPERPLANE_CERTIFY,
    )
    p_a = uniform_sum_cdf(margin.abs(), lam * w.abs())
    exact = 2 * lam * (p_a - 0.5)
    answered = result.predict != ABSTAIN
    failures = answered & ((result.predict != (margin > 0).long()) | (result.radius > exact + 1e-5))
    assert failures.sum() <= failure_bound(400, ALPHA)
    far = p_a > 0.8
    assert answered[far].double().mean() > 0.95
    assert torch.median(result.radius[far] / exact[far]) > 0.9


def test_clopper_pearson_matches_published_and_closed_form_values():
    # 5 of 10: the textbook 95 % Clopper–Pearson interval is [0.1871, 0.8129]; one-sided α = 0.025
    assert lower_confidence_bound(torch.tensor([5]), 10, 0.025).item() == pytest.approx(0.187086, abs=1e-6)
    # all n draws in class A: the bound is α^(1/n) (Cohen et al. 2019, §3.2.2)
    assert lower_confidence_bound(torch.tensor([100_000]), 100_000, 0.001).item() == pytest.approx(
        0.001 ** (1 / 100_000), rel=1e-12
    )
    counts = torch.tensor([0, 1, 37, 99, 100])
    expected = [0.0] + [beta.ppf(0.001, k, 100 - k + 1) for k in (1, 37, 99, 100)]
    assert lower_confidence_bound(counts, 100, 0.001).tolist() == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("n", [1, 16, 100, 5000])
@pytest.mark.parametrize("alpha", [0.001, 0.1])
def test_clopper_pearson_equals_statsmodels_beta_interval(n, alpha):
    counts = torch.unique(torch.linspace(0, n, 41).round().long())
    expected = proportion_confint(counts.numpy(), n, alpha=2 * alpha, method="beta")[0]
    assert lower_confidence_bound(counts, n, alpha).tolist() == pytest.approx(expected.tolist(), rel=1e-12, abs=1e-300)


def test_certify_takes_c_a_from_the_n0_draws_and_bounds_it_on_the_n_fresh_draws_at_level_alpha():
    """CERTIFY (Cohen et al. 2019, §3.2.2): c_A from the n0 selection counts, p̲_A its α-level bound on n fresh draws."""
    # f = argmax of 3 coordinates, class 0 ahead by d ∈ [0, 1.5]: n0 = 3 draws often pick another class
    x = torch.zeros(40, 3)
    x[:, 0] = torch.linspace(0.0, 1.5, 40)
    n0, n, alpha, sigma = 3, 100, 0.05, 0.5
    settings = dict(num_classes=3, noise="gaussian", n0=n0, n=n, alpha=alpha, batch_size=64)
    result = certify_with(nn.Identity(), x, sigma, generator=generators(range(40)), **settings)
    streams = generators(range(40))  # the same streams: n0 selection draws, then the next n
    selection = sample_counts(nn.Identity(), x, sigma, n0, "gaussian", 64, streams)
    estimation = sample_counts(nn.Identity(), x, sigma, n, "gaussian", 64, streams)
    top = selection.argmax(dim=1)
    count_a = estimation.gather(1, top[:, None]).squeeze(1)
    expected = torch.from_numpy(proportion_confint(count_a.numpy(), n, alpha=2 * alpha, method="beta")[0])
    assert result.p_a_lower.tolist() == pytest.approx(expected.tolist(), rel=1e-12, abs=1e-300)
    certified = expected > 0.5
    assert result.predict.tolist() == torch.where(certified, top, ABSTAIN).tolist()
    radius = torch.where(certified, sigma * torch.special.ndtri(expected), 0.0)
    assert result.radius.tolist() == pytest.approx(radius.tolist())
    # the draws tell the two apart: some selections miss the estimation's top class, some certify, some abstain
    assert (count_a < estimation.max(dim=1).values).sum() >= 5
    assert 0 < certified.sum() < 40 and not (expected == 0.5).any()


class Threshold(nn.Module):
    """Class 1 iff the first pixel exceeds 0.5: splits 50/50 under symmetric noise at 0.5."""

    def forward(self, x):
        z = x.flatten(1)[:, :1] - 0.5
        return torch.cat([-z, z], dim=1)


def test_predict_abstains_on_a_tie_and_answers_a_dominant_class():
    tie, dominant = torch.full((1, 4), 0.5), torch.full((1, 4), 1.5)
    smooth = Smooth(Threshold(), num_classes=2, sigma=0.5)
    outcomes = [smooth.predict(tie[0], 1000, 0.001, 500, generator=torch.Generator().manual_seed(s)) for s in range(20)]
    assert all(outcome == Smooth.ABSTAIN for outcome in outcomes)
    assert smooth.predict(dominant[0], 1000, 0.001, 500, generator=torch.Generator().manual_seed(0)) == 1
    assert smooth.predict(-dominant[0], 1000, 0.001, 500, generator=torch.Generator().manual_seed(0)) == 0


def test_smooth_has_cohens_interface_and_agrees_with_certify_batch():
    w = torch.ones(DIM)
    model = linear_classifier(w, -1.0)
    x = torch.full((DIM,), 0.3)
    smooth = Smooth(model, num_classes=2, sigma=0.25)
    prediction, radius = smooth.certify(x, 100, 2000, 0.001, 400, generator=torch.Generator().manual_seed(7))
    assert isinstance(prediction, int) and isinstance(radius, float)
    settings = dict(num_classes=2, noise="gaussian", n0=100, n=2000, alpha=0.001, batch_size=400)
    batch = certify_with(model, x[None], 0.25, generator=torch.Generator().manual_seed(7), **settings)
    assert (prediction, radius) == (1, pytest.approx(batch.radius.item()))
    assert 0 < radius < 2 / math.sqrt(DIM)  # true distance |w·x + b| / ||w|| = 2 / √10
    assert Smooth.ABSTAIN == -1


def test_batched_certify_equals_one_input_at_a_time_with_the_same_seeds():
    """In float64: other batches sum the products in other orders, and in float32 that could tip a draw
    whose top two logits nearly tie, on one CPU and not another."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 3)).double().eval()
    torch.nn.init.normal_(model[1].weight, generator=torch.Generator().manual_seed(0))
    x = torch.rand(5, 3, 2, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    scales = torch.tensor([0.1, 0.3, 0.5, 0.7, 1.0], dtype=torch.float64)
    settings = dict(num_classes=3, noise="gaussian", n0=30, n=170, alpha=0.01, batch_size=64)
    together = certify_with(model, x, scales, generator=generators(range(5)), **settings)
    for i in range(5):
        alone = certify_with(model, x[i : i + 1], scales[i].item(), generator=generators([i]), **settings)
        assert together.predict[i] == alone.predict[0]
        assert together.p_a_lower[i] == alone.p_a_lower[0]
        assert together.radius[i] == alone.radius[0]


def test_per_input_scales_give_each_input_its_own_radius():
    model = Threshold()
    x = torch.full((3, 4), 0.5)
    x[:, 0] = torch.tensor([0.9, 0.9, 0.9])
    scales = torch.tensor([0.1, 0.2, 0.4])
    settings = dict(num_classes=2, noise="gaussian", n0=50, n=2000, alpha=0.001, batch_size=500)
    result = certify_with(model, x, scales, generator=generators(range(3)), **settings)
    assert result.predict.tolist() == [1, 1, 1]
    # distance 0.4 to the boundary: p_A = Φ(0.4 / σ), so the radius follows each input's own σ
    assert result.radius.tolist() == pytest.approx(
        (scales.double().numpy() * norm.ppf(result.p_a_lower.numpy())).tolist()
    )
    assert result.p_a_lower[0] > result.p_a_lower[1] > result.p_a_lower[2]
    assert (result.radius <= 0.4 + 1e-6).all()


def test_sample_counts_count_every_draw_on_the_right_row():
    model = Threshold()
    x = torch.tensor([[5.0, 0, 0, 0], [-5.0, 0, 0, 0], [0.5, 0, 0, 0]])
    counts = sample_counts(model, x, 0.1, 250, "uniform", 64, torch.Generator().manual_seed(0))
    assert counts.dtype == torch.long and counts.shape == (3, 2)
    assert counts.sum(dim=1).tolist() == [250, 250, 250]
    assert counts[0].tolist() == [0, 250] and counts[1].tolist() == [250, 0]
    assert 50 < counts[2, 1] < 200


def test_sample_predictions_are_the_counted_draws_one_by_one_in_the_order_drawn():
    """Per input, the classes of a call mixing full and packed passes count to ``sample_counts``'s from
    the same streams, and input 1's first 30 are those of a call drawing only them in passes of 8."""
    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(1)) * 0.3
    nums = [7, 300, 45]
    classes = sample_predictions(nn.Identity(), x, 0.5, nums, "gaussian", 64, generators(range(3)), num_classes=5)
    counts = sample_counts(nn.Identity(), x, 0.5, nums, "gaussian", 64, generators(range(3)))
    per_input = classes.split(nums)
    assert [torch.bincount(c, minlength=5).tolist() for c in per_input] == counts.tolist()
    alone = sample_predictions(nn.Identity(), x[1:2], 0.5, 30, "gaussian", 8, generators([1]), num_classes=5)
    assert torch.equal(alone, per_input[1][:30])
    assert len(set(per_input[1].tolist())) > 1  # not vacuous: the classes vary along the stream
    with pytest.raises(ValueError, match="model has 5 outputs, expected num_classes=10"):
        sample_predictions(nn.Identity(), x, 0.5, 4, "gaussian", 64, generators(range(3)), num_classes=10)


def test_predict_batch_returns_one_answer_per_input():
    x = torch.tensor([[1.5, 0, 0, 0], [-1.5, 0, 0, 0], [0.5, 0, 0, 0]])
    answers = predict_batch(
        Threshold(), x, 0.5, noise="gaussian", n=1000, alpha=0.001, batch_size=256, generator=generators(range(3))
    )
    assert answers.tolist() == [1, 0, ABSTAIN]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(n0=0), "n0 must be positive, got 0"),
        (dict(n=-5), "n must be positive, got -5"),
        (dict(alpha=0.0), r"alpha must lie in \(0, 1\), got 0.0"),
        (dict(alpha=1.0), r"alpha must lie in \(0, 1\), got 1.0"),
        (dict(batch_size=0), "batch_size must be positive, got 0"),
        (dict(scale=torch.tensor([0.5, -0.25])), "sigma must be positive, got -0.25"),
        (dict(scale=0.0), "sigma must be positive, got 0.0"),
        (dict(noise="laplace"), "unknown noise 'laplace'"),
        (dict(num_classes=5), "model has 2 outputs, expected num_classes=5"),
    ],
)
def test_certify_batch_rejects_bad_arguments(change, message):
    settings = dict(scale=0.5, num_classes=2, noise="gaussian", n0=10, n=10, alpha=0.01, batch_size=8)
    settings.update(change)
    scale = settings.pop("scale")
    with pytest.raises(ValueError, match=message):
        certify_with(Threshold(), torch.zeros(2, 4), scale, generator=None, **settings)
