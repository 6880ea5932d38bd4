"""Activation recomputation: the gradient of one pass over the whole batch in a fraction of its memory.

The classifier's forward pass, as the architecture registry cuts it into consecutive pieces
(:func:`ddrs.models.registry.classifier_pieces`: normalisation, stem, every residual block, head), is
cut at ``activation_checkpoints`` places into runs of pieces; every run but the last keeps only its
input during the forward pass and recomputes its activations in the backward pass
(``torch.utils.checkpoint``; Chen et al. 2016, "Training deep nets with sublinear memory cost").
Every batch-norm layer still normalises the whole batch and updates its running statistics once,
so the step is the plain pass's up to float error, which running the m draws in chunks
(``draws_per_pass``, :func:`ddrs.training.losses.chunked_copies_logits`) is not with batch-norm.
The price is one more forward pass of the recomputed runs per step.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial

import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from ddrs.models.pieces import Piece, compose
from ddrs.models.registry import classifier_pieces


@contextmanager
def buffers_kept(model: nn.Module) -> Iterator[None]:
    """``model``'s buffers (batch-norm running statistics and batch counts) as they were on entry,
    whatever ran inside: a recomputation in the backward pass moves them only once."""
    saved = [(buffer, buffer.clone()) for buffer in model.buffers()]
    try:  # the recomputation may stop early (checkpoint's early stop) once it has what backward needs
        yield
    finally:
        with torch.no_grad():
            for buffer, value in saved:
                buffer.copy_(value)


def recomputation_contexts(model: nn.Module) -> tuple[AbstractContextManager, AbstractContextManager]:
    """``torch.utils.checkpoint``'s ``context_fn`` for ``model``: the forward pass as it is, the
    recomputation with its buffers restored afterwards."""
    return nullcontext(), buffers_kept(model)


def runs(pieces: Sequence[Piece], cuts: int) -> list[Sequence[Piece]]:
    """``pieces`` cut at ``cuts`` places (at most between every two) into runs of near-equal length."""
    count = min(cuts, len(pieces) - 1) + 1
    bounds = [round(i * len(pieces) / count) for i in range(count + 1)]
    return [pieces[start:end] for start, end in itertools.pairwise(bounds)]


class Recomputed(nn.Module):
    """``model`` whose forward pass, while gradients are on, keeps only the inputs of the runs of
    :func:`runs` and recomputes the rest in backward; the plain ``model`` without gradients."""

    def __init__(self, model: nn.Module, pieces: Sequence[Piece], cuts: int):
        super().__init__()
        self.model = model
        self.runs = runs(pieces, cuts)

    def forward(self, x: Tensor) -> Tensor:
        if not torch.is_grad_enabled():
            return self.model(x)
        *recomputed, last = self.runs
        for run in recomputed:
            x = checkpoint(compose, run, x, use_reentrant=False, context_fn=partial(recomputation_contexts, self.model))
        return compose(last, x)


def with_recomputation(model: nn.Sequential, arch: str, cuts: int) -> nn.Module:
    """``model`` (of :func:`ddrs.models.build_model` for ``arch``) recomputing its activations in
    backward after ``cuts`` cuts (:class:`Recomputed`); ``model`` itself when ``cuts`` is 0."""
    if cuts == 0:
        return model
    return Recomputed(model, classifier_pieces(model, arch), cuts)
