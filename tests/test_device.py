"""Device and precision selection: the GPU code paths' logic, exercised on the CPU."""

import pytest
import torch
from torch import nn

from ddrs.device import autocast, make_generator, select_device
from ddrs.settings import CertifySettings
from ddrs.smoothing import certify_batch


def test_auto_picks_cuda_only_when_present():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert select_device("auto").type == expected
    assert select_device("cpu") == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_asking_for_cuda_without_it_is_a_clear_error():
    with pytest.raises(ValueError, match="device 'cuda:1' requested but CUDA is not available"):
        select_device("cuda:1")


def test_bf16_autocast_runs_the_base_classifier_in_bf16():
    layer = nn.Linear(4, 2)
    with autocast(torch.device("cpu"), "bf16"):
        assert layer(torch.ones(1, 4)).dtype == torch.bfloat16
    with autocast(torch.device("cpu"), "fp32"):
        assert layer(torch.ones(1, 4)).dtype == torch.float32


def test_unknown_precision_names_the_choices():
    with pytest.raises(ValueError, match="unknown precision 'fp8'.*bf16.*fp16.*fp32"):
        autocast(torch.device("cpu"), "fp8")


def test_generators_are_reproducible():
    first = torch.randn(3, generator=make_generator(7, torch.device("cpu")))
    assert torch.equal(first, torch.randn(3, generator=make_generator(7, torch.device("cpu"))))


def test_a_bf16_base_classifier_certifies_like_fp32_far_from_the_boundary():
    """A reduced-precision base classifier is a fixed function too: same predictions where the margin is wide."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(2, 2))
    with torch.no_grad():
        model[1].weight.copy_(torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))
        model[1].bias.zero_()
    x = torch.tensor([[3.0, 0.0], [-3.0, 0.0]])
    results = {
        precision: certify_batch(
            model, x, 0.5, CertifySettings(n0=50, n=2000, alpha=0.001, batch_size=500, precision=precision),
            num_classes=2, generator=make_generator(0, torch.device("cpu")),
        )
        for precision in ("fp32", "bf16")
    }  # fmt: skip
    assert results["fp32"].predict.tolist() == results["bf16"].predict.tolist() == [0, 1]
    assert torch.allclose(results["fp32"].radius, results["bf16"].radius, atol=0.05)
