"""Philox4x32-10 (Salmon et al. 2011, "Parallel random numbers: as easy as 1, 2, 3") as tensor ops.

A counter-based generator: its output is a pure function of a 64-bit key and a 128-bit counter,
so the noise of draw ``j`` of an input with key ``k`` is computed directly from ``(k, j)``. A whole
batch of inputs, each with its own key and its own draw positions, is one set of tensor ops (one
fused kernel when compiled) instead of one ``torch.Generator`` and one launch per input, and the
draws never depend on how inputs were batched. torch's own CUDA generator is the same Philox, but
it keys a whole launch by one seed, not every row by its own.

Words are uint32 values held in int64 tensors; products are formed from 16-bit halves, so no
intermediate overflows 63 bits and every device computes the same bits (checked against
Random123's known-answer vectors in tests/test_philox.py).
"""

from __future__ import annotations

import torch
from torch import Tensor

#: Philox4x32's multipliers and Weyl key increments (Random123's PHILOX_M4x32_*, PHILOX_W32_*)
M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF
ROUNDS = 10


def _mulhilo(a: int, b: Tensor) -> tuple[Tensor, Tensor]:
    """The high and low 32-bit words of the 64-bit product ``a · b`` (``a``, ``b`` < 2³²), exactly."""
    high_half = a * (b >> 16)  # < 2⁴⁸
    low = a * (b & 0xFFFF) + ((high_half & 0xFFFF) << 16)  # < 2⁴⁹
    return ((high_half >> 16) + (low >> 32)) & MASK, low & MASK


def philox4x32(counter: tuple[Tensor, Tensor, Tensor, Tensor], key: tuple[Tensor, Tensor]) -> tuple[Tensor, ...]:
    """Philox4x32-10: four uint32 words from a four-word counter and a two-word key (broadcast together)."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for round_ in range(ROUNDS):
        if round_:
            k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
        hi0, lo0 = _mulhilo(M0, c0)
        hi1, lo1 = _mulhilo(M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def open_unit_interval(words: Tensor) -> Tensor:
    """uint32 words → float32 uniforms on (0, 1): the top 23 bits k as (k + ½)·2⁻²³, each exact in
    float32, so the values lie in [2⁻²⁴, 1 − 2⁻²⁴] and never round to 0 or 1 (24 bits would: k + ½
    needs a 25th bit, and the largest cell rounded to 1.0)."""
    return ((words >> 9).to(torch.float32) + 0.5) * 2.0**-23


#: the bits of a word that :func:`open_unit_interval` drops, which :func:`fine_unit_interval` spends
SPARE_BITS = 9


def fine_unit_interval(word: Tensor, spare: Tensor) -> Tensor:
    """A whole uint32 ``word`` and the low :data:`SPARE_BITS` bits of ``spare`` → float32 uniforms on
    (0, 1], fine near 0: the 41-bit cell k = word·2⁹ + spare bits as (k + ½)·2⁻⁴¹, rounded to float32.

    The smallest value is 2⁻⁴², where :func:`open_unit_interval`'s is 2⁻²⁴: Box–Muller's
    √(−2 ln u) then reaches 7.63 rather than 5.77, so the Gaussian tail it cannot draw has mass
    2⁻⁴¹ per pair of coordinates instead of 2⁻²³ (for a 3×224×224 image 3·10⁻⁸ instead of
    4.5·10⁻³, far below the 1 − p̲_A ≈ 7·10⁻⁵ that n = 100,000 draws resolve; torch's CUDA ``randn``
    cuts at 2⁻³²). Near 1 it is as coarse as float32 (the top 2⁻²⁵ rounds to 1.0, where ln u = 0).
    """
    fine = ((spare & ((1 << SPARE_BITS) - 1)).to(torch.float32) + 0.5) * 2.0 ** -(32 + SPARE_BITS)
    return word.to(torch.float32) * 2.0**-32 + fine


def keyed_words(key: Tensor, draw: Tensor, count: int) -> Tensor:
    """``count`` rounded up to a multiple of 4 uint32 words (in int64) per draw: shape ``draw.shape + (4⌈count/4⌉,)``.

    Draw ``draw`` under ``key`` is counter block ``g`` = (g, draw low word, draw high word, 0) for
    ``g < ⌈count/4⌉``, four words each. ``key`` holds 64-bit keys as int64 words ``(..., 2)``
    (low, high) broadcast against ``draw`` (int64 positions ≥ 0).
    """
    group = torch.arange(-(-count // 4), device=draw.device)
    draw = draw.unsqueeze(-1)
    words = philox4x32((group, draw & MASK, draw >> 32, torch.zeros_like(group)), (key[..., 0:1], key[..., 1:2]))
    return torch.stack(torch.broadcast_tensors(*words), dim=-1).flatten(-2)


def keyed_uniforms(key: Tensor, draw: Tensor, count: int) -> Tensor:
    """:func:`keyed_words` as uniforms on (0, 1) (:func:`open_unit_interval`)."""
    return open_unit_interval(keyed_words(key, draw, count))


def split_key(key: int) -> tuple[int, int]:
    """A 64-bit key as its (low, high) 32-bit words."""
    return key & MASK, (key >> 32) & MASK
