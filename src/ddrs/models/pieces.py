"""A network's forward pass as consecutive pieces: what activation recomputation
(:mod:`ddrs.training.recompute`) may cut between, and what the networks that list their pieces
compose in ``forward``, so the two cannot drift apart."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from torch import Tensor

Piece = Callable[[Tensor], Tensor]


def compose(pieces: Sequence[Piece], x: Tensor) -> Tensor:
    """``x`` through ``pieces`` in order."""
    for piece in pieces:
        x = piece(x)
    return x
