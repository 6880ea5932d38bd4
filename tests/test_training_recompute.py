"""Activation recomputation (``activation_checkpoints``): the plain step, batch-norm included, in less memory."""

from __future__ import annotations

import copy

import pytest
import torch

from ddrs.data import DATASETS, get_info
from ddrs.methods import get_method
from ddrs.models import ARCHS, build_model
from ddrs.models.cifar_resnet import BasicBlock
from ddrs.models.registry import classifier_pieces
from ddrs.training.losses import macer_loss
from ddrs.training.recompute import runs, with_recomputation


def _dataset_for(arch: str) -> str:
    return next(name for name in DATASETS if get_info(name).input_shape == ARCHS[arch].input_shape)


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_the_pieces_of_every_architecture_compose_to_its_forward_pass(arch):
    model = build_model(arch, _dataset_for(arch)).eval()
    x = torch.rand(2, *ARCHS[arch].input_shape, generator=torch.Generator().manual_seed(0))
    out = x
    for piece in classifier_pieces(model, arch):
        out = piece(out)
    with torch.no_grad():
        assert torch.equal(out, model(x))


def test_runs_cut_the_pieces_into_near_equal_consecutive_runs():
    pieces = list(range(11))
    assert runs(pieces, 0) == [pieces]
    assert runs(pieces, 3) == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9, 10]]
    assert runs(pieces, 100) == [[piece] for piece in pieces]  # at most one cut between two pieces


def _macer_step(model, forward):
    """One MACER step (m = 4 draws of 4 CIFAR-shaped inputs) of ``forward`` in training mode:
    loss, gradient, buffers (batch-norm running statistics and counts) of ``model``."""
    x = torch.rand(4, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    y, sigma = torch.tensor([0, 1, 2, 3]), torch.full((4,), 0.25)
    params = get_method("macer").make_params({"m": 4}, source="test")
    model.train()
    loss = macer_loss(forward, x, y, sigma, torch.Generator().manual_seed(2), params)
    loss.backward()
    gradient = torch.cat([parameter.grad.flatten() for parameter in model.parameters()])
    return loss.detach(), gradient, [buffer.clone() for buffer in model.buffers()]


@pytest.mark.parametrize("cuts", [1, 3, 100])
def test_recomputation_gives_the_plain_step_with_batch_norm(cuts):
    """The whole B·m batch is normalised together, as in one plain pass: the same loss, gradient
    and running statistics (which the recomputation must not move a second time), while every
    recomputed block really runs twice."""
    torch.manual_seed(0)
    plain_model = build_model("resnet18", "cifar10")
    model = copy.deepcopy(plain_model)
    calls = []
    for block in model.modules():
        if isinstance(block, BasicBlock):
            block.register_forward_pre_hook(lambda module, args: calls.append(module))

    plain_loss, plain_gradient, plain_buffers = _macer_step(plain_model, plain_model)
    loss, gradient, buffers = _macer_step(model, with_recomputation(model, "resnet18", cuts))

    assert torch.allclose(loss, plain_loss, rtol=0, atol=1e-6)
    assert torch.allclose(gradient, plain_gradient, rtol=1e-5, atol=1e-7)
    assert plain_gradient.abs().max() > 1e-3  # a gradient that can differ
    for buffer, plain_buffer in zip(buffers, plain_buffers, strict=True):
        assert torch.allclose(buffer.float(), plain_buffer.float(), rtol=0, atol=1e-6)
    assert int(buffers[-1]) == 1  # num_batches_tracked of the last batch-norm: one batch
    assert len(calls) > 8  # ResNet-18's 8 blocks, those before the last cut recomputed in backward


def test_recomputation_runs_the_plain_model_without_gradients():
    model = build_model("resnet18", "cifar10").eval()
    assert with_recomputation(model, "resnet18", 0) is model
    x = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        assert torch.equal(with_recomputation(model, "resnet18", 4)(x), model(x))
