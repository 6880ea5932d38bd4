"""Exact Gaussian tails for torch's CPU ``randn`` (issue 50, "exact tails").

torch's CPU ``randn`` fills blocks of 16 values by Box–Muller: coordinates ``j`` and ``j + 8`` of a
block are one pair ``√(−2 ln u₁)·(cos 2πu₂, sin 2πu₂)``, with u₁ = m·2⁻²⁴ taken from a 24-bit cell
m ∈ {1, …, 2²⁴}. The cell ((m − 1)·2⁻²⁴, m·2⁻²⁴] of an exact uniform is drawn as its top, so each
pair's radius is its cell's smallest, and the lowest cell, which holds every radius beyond
√(−2 ln 2⁻²⁴) = 5.77, becomes one radius of 5.77: a Gaussian tail of mass 2⁻²⁴ per pair is never
drawn (2.3·10⁻⁵ of a 28×28 image, 9·10⁻⁵ of a 3×32×32 one), which n = 100,000 draws resolve
(1 − p̲_A ≈ 7·10⁻⁵ at α = 0.001), so the largest radii could be overstated.

:func:`refine_tail` redraws the radius of every pair in the lowest :data:`REFINED_CELLS` cells
(u₁ ≤ 2⁻¹⁰, radius ≥ 3.72) uniformly within its cell, in float64: u₁ = (m − v)·2⁻²⁴ with v a
53-bit uniform on [0, 1) from a generator of its own, keeping the pair's angle. Beyond 3.72 the
radius is then exact to float64 before rounding to float32; what stays cut is the mass below
u₁ = 2⁻⁷⁷ (radius 10.3), 7·10⁻²⁴ per pair. Below 3.72, torch's cells are kept: they round a pair's
radius down by at most 2⁻²⁴·e^{r²/2}/r (≤ 1.6·10⁻⁵: 68 float32 spacings at 3.72, under 2 below
2.35), a displacement that moves no mass into or out of the tail. The cell m is recovered from the
float32 pair as round(2²⁴·e^{−r²/2}); within the refined cells it lies within 0.03 of an integer
(``tests/test_gaussian_tail.py`` measures it), which fails for much larger m, so the refinement stops there.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor

#: torch's CPU ``randn`` fills a call in blocks of this many values, pairing coordinates j and j + 8
#: by Box–Muller, and redraws a call's last block when its size is not a multiple of it (so a call
#: of 2 draws of 25 values is not two calls of 1)
BLOCK = 16
#: the width of torch's CPU uniform cells
CELL = 2.0**-24
#: the lowest cells of u₁ whose radius is redrawn: u₁ ≤ 2⁻¹⁰, radius ≥ √(20 ln 2) = 3.72
REFINED_CELLS = 2**14
#: the least squared radius of a refined pair, less a margin for float32's rounding of the pair
_FIRST_SQUARED_RADIUS = -2.0 * math.log(REFINED_CELLS * CELL) - 0.01


def refine_tail(values: Tensor, generator: torch.Generator) -> Tensor:
    """``values`` (a float CPU tensor from ``torch.randn``, its last dimension a multiple of
    :data:`BLOCK`) with the radius of every pair in the refined cells redrawn from ``generator``, in place.

    The refined pairs take one float64 uniform each, in the order of ``values``, so a draw's
    refinement does not depend on how the draws are grouped into calls.
    """
    pairs = values.view(-1, 2, BLOCK // 2)
    first, second = pairs[:, 0], pairs[:, 1]
    coarse = (first * first).addcmul_(second, second)  # float32: only to find the candidates
    candidates = coarse >= _FIRST_SQUARED_RADIUS
    # a block's 8 flags are one int64: scan 1/8 of the flags for the (about 1 in 130) blocks holding one
    blocks = candidates.view(torch.int64).view(-1).nonzero().squeeze(1).numpy()
    if not len(blocks):
        return values
    # the rest on about 1 value in 1,000, in numpy, whose calls on small arrays cost a fraction of torch's
    within_block, columns = np.nonzero(candidates.numpy()[blocks])
    blocks = blocks[within_block]
    array = values.numpy().reshape(pairs.shape)
    pair = array[blocks, :, columns].astype(np.float64)
    squared_radius = np.square(pair).sum(axis=1)
    cell = np.round(np.exp(-squared_radius / 2) / CELL)
    refined = cell <= REFINED_CELLS
    if not refined.any():
        return values
    blocks, columns = blocks[refined], columns[refined]
    pair, squared_radius, cell = (torch.from_numpy(a[refined]) for a in (pair, squared_radius, cell))
    # the new radius by torch's log and sqrt on the refined pairs alone, as the streams have always drawn it
    within = torch.rand(len(cell), generator=generator, dtype=torch.float64)
    radius = torch.sqrt(-2.0 * torch.log((cell - within) * CELL))
    array[blocks, :, columns] = (pair * (radius / squared_radius.sqrt())[:, None]).to(values.dtype).numpy()
    return values
