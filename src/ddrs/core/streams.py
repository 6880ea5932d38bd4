"""Where a batch's smoothing noise ε̂ comes from: one independent random stream per test input.

Every input ``idx`` of a run draws from its own stream keyed by ``(seed, purpose, idx)``
(:func:`ddrs.core.seeds.derived_seed`, :class:`ddrs.core.seeds.Stream`), so its noise never depends on which
inputs share a batch or on where an interrupted run resumed. Two kinds of stream give this:

- :class:`GeneratorStreams`, one ``torch.Generator`` per input: the CPU's streams (mt19937 is fast
  there, and one call per input costs nothing beside the forward passes);
- :class:`PhiloxStreams`, counter-based (:mod:`ddrs.core.philox`): the CUDA streams. All inputs' draws
  are one set of tensor ops, so Algorithm 1 at batch 1,024 pays no 1,024 generator launches per
  step, and draw ``j`` of an input is the same whatever the forward batch size.

The two draw different numbers for the same key (as torch's CPU and CUDA generators do), so CPU
and CUDA certificates differ within their statistical error. Both draw Gaussian tails that are
exact to below float32's resolution of p_A (2⁻²⁴):

- torch's CPU ``randn`` takes Box–Muller's u₁ from 24 bits and so never draws a pair of
  coordinates beyond radius 5.77; :class:`GeneratorStreams` redraws the radius of every pair beyond
  3.72 exactly (:mod:`ddrs.core.gaussian_tail`), leaving 7·10⁻²⁴ of tail per pair undrawn;
- Philox streams cut at 7.63 (:func:`ddrs.core.philox.fine_unit_interval`): 2⁻⁴¹ per pair,
  3·10⁻⁸ of a 3×224×224 image.

mt19937 keeps the low 32 bits of a 64-bit key, so two of a run's k streams coincide with
probability about k²/2³³ (0.1 expected pairs for 10,000 inputs' three streams). Each certificate
stays sound, as it uses one input's streams alone; two inputs may share noise.

:class:`SharedGenerator` is one generator for the whole batch (training, where inputs need no
streams of their own).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from functools import cache

import torch
from torch import Tensor

from ddrs.core.device import copy_to, make_generator
from ddrs.core.gaussian_tail import BLOCK, refine_tail
from ddrs.core.noise import SmoothingNoise
from ddrs.core.philox import keyed_words, split_key
from ddrs.core.seeds import KEY_SCHEME, Stream, derived_seed

#: Blocks of draws in a forward pass: ``(input, count)`` pairs, each the input's next ``count`` draws.
Blocks = Sequence[tuple[int, int]]


class InputStreams(ABC):
    """The noise source of a batch of inputs ``x`` of shape ``(B, *sample_shape)``."""

    @abstractmethod
    def draw(self, noise: SmoothingNoise, blocks: Blocks, x: Tensor) -> Tensor:
        """ε̂ for ``blocks``, concatenated in order: ``(Σ count, *x.shape[1:])`` on ``x``'s device and dtype."""

    def draw_each(self, noise: SmoothingNoise, count: int, x: Tensor) -> Tensor:
        """The next ``count`` draws of every input: ``(B, count, *x.shape[1:])``."""
        return self.draw(noise, [(i, count) for i in range(len(x))], x).view(len(x), count, *x.shape[1:])

    @abstractmethod
    def select(self, rows: Sequence[int]) -> InputStreams:
        """The streams of inputs ``rows``, sharing their state with these: a draw from either advances
        the input in both (sequential certification's pool draws for the inputs still in flight)."""


class SharedGenerator(InputStreams):
    """One generator (or torch's global one, ``None``) for all inputs: draws depend on the batch."""

    def __init__(self, generator: torch.Generator | None):
        self.generator = generator

    def draw(self, noise, blocks, x):
        shape = (sum(count for _, count in blocks), *x.shape[1:])
        return noise.unit(shape, generator=self.generator, device=x.device, dtype=x.dtype)

    def draw_each(self, noise, count, x):
        return noise.unit((len(x), count, *x.shape[1:]), generator=self.generator, device=x.device, dtype=x.dtype)

    def select(self, rows):
        return self


class GeneratorStreams(InputStreams):
    """One ``torch.Generator`` per input; each block is one call to its input's generator.

    Each draw takes a whole number of :data:`BLOCK` values from the generator (the
    sample's values, then up to 15 unused), so an input's draw ``j`` is the same however its draws
    are grouped into blocks, i.e. whatever the forward batch size, for any sample shape (the
    registered datasets' 64, 784, 3,072 and 150,528 values are whole blocks already).

    On the CPU, Gaussian draws in float32 have their tails made exact
    (:func:`ddrs.core.gaussian_tail.refine_tail`) from a second generator per input, keyed
    ``(its seed, TAIL)``, so the main stream's values are torch's own.
    """

    def __init__(self, generators: Sequence[torch.Generator], tails: Sequence[torch.Generator] | None = None):
        self.generators = list(generators)
        self.tails = list(tails) if tails is not None else [tail_generator(g) for g in self.generators]

    def __len__(self) -> int:
        return len(self.generators)

    def select(self, rows):
        return GeneratorStreams([self.generators[row] for row in rows], [self.tails[row] for row in rows])

    def draw(self, noise, blocks, x):
        numel = x[0].numel()
        whole = -(-numel // BLOCK) * BLOCK
        refine = noise.name == "gaussian" and x.device.type == "cpu" and x.dtype == torch.float32
        parts = []
        for i, count in blocks:
            unit = noise.unit((count, whole), generator=self.generators[i], device=x.device, dtype=x.dtype)
            parts.append((refine_tail(unit, self.tails[i]) if refine else unit)[:, :numel])
        return (parts[0] if len(parts) == 1 else torch.cat(parts)).reshape(-1, *x.shape[1:])


def tail_generator(generator: torch.Generator) -> torch.Generator:
    """The CPU generator of ``generator``'s tail refinements, keyed by its seed and :attr:`Stream.TAIL`."""
    return make_generator(derived_seed(generator.initial_seed(), Stream.TAIL), torch.device("cpu"))


def keyed_unit(noise: SmoothingNoise, key: Tensor, draw: Tensor, numel: int) -> Tensor:
    """ε̂ of draws ``draw`` under ``key`` (:func:`ddrs.core.philox.keyed_words`), flat: ``draw.shape + (numel,)``."""
    return noise.from_words(keyed_words(key, draw, numel))[..., :numel]


@cache
def compiled_keyed_unit():
    """:func:`keyed_unit` through ``torch.compile``: one fused kernel per pass on CUDA, built once per process."""
    return torch.compile(keyed_unit, dynamic=True)


class PhiloxStreams(InputStreams):
    """Counter-based streams: input ``i``'s draw ``j`` is Philox4x32-10 under key ``keys[i]`` at counter ``j``.

    Each input's position advances by the draws it takes, like a generator's state, so CERTIFY's
    selection draws and estimation draws are disjoint parts of one stream. ``compile`` fuses the
    generator into one kernel (worth it for CERTIFY's large passes on CUDA, where the eager ops
    would move ~400 bytes per noise value).
    """

    def __init__(self, keys: Iterable[int], device: torch.device | str, *, compile: bool = False):
        self.keys = torch.tensor([split_key(int(key)) for key in keys], dtype=torch.int64, device=device)
        self.position = [0] * len(self.keys)
        self._unit = compiled_keyed_unit() if compile else keyed_unit

    def __len__(self) -> int:
        return len(self.position)

    def select(self, rows):
        view = object.__new__(PhiloxStreams)
        view.keys = self.keys[copy_to(torch.tensor(list(rows), dtype=torch.long), self.keys.device)]
        view.position = _SharedPositions(self.position, rows)
        view._unit = self._unit
        return view

    def _take(self, i: int, count: int) -> int:
        start = self.position[i]
        self.position[i] += count
        return start

    def draw(self, noise, blocks, x):
        numel = math.prod(x.shape[1:])
        if len(blocks) == 1:
            ((i, count),) = blocks
            key, draw = self.keys[i], torch.arange(count, device=x.device) + self._take(i, count)
        else:
            rows = torch.repeat_interleave(*(torch.tensor(column) for column in zip(*blocks, strict=True)))
            draw = torch.cat([torch.arange(count) + self._take(i, count) for i, count in blocks])
            rows, draw = (copy_to(t, x.device) for t in (rows, draw))
            key = self.keys[rows]
        return self._unit(noise, key, draw, numel).view(-1, *x.shape[1:]).to(x.dtype)

    def draw_each(self, noise, count, x):
        starts = [self._take(i, count) for i in range(len(x))]
        offsets = torch.arange(count, device=x.device)
        if len(set(starts)) == 1:
            draw = offsets + starts[0]
        else:
            draw = copy_to(torch.tensor(starts)[:, None], x.device) + offsets
        unit = self._unit(noise, self.keys[:, None, :], draw, math.prod(x.shape[1:]))
        return unit.view(len(x), count, *x.shape[1:]).to(x.dtype)


class _SharedPositions:
    """The positions of some of a :class:`PhiloxStreams`' inputs, read and advanced in place."""

    def __init__(self, positions: list[int], rows: Sequence[int]):
        self.positions, self.rows = positions, list(rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> int:
        return self.positions[self.rows[i]]

    def __setitem__(self, i: int, value: int) -> None:
        self.positions[self.rows[i]] = value


#: noise sources the sampling functions accept: streams, one generator, or one generator per input
Generators = InputStreams | torch.Generator | Sequence[torch.Generator]


def as_streams(source: Generators | None, num_inputs: int) -> InputStreams:
    """``source`` as streams for ``num_inputs`` inputs (a list of generators: one per input)."""
    if source is None or isinstance(source, torch.Generator):
        return SharedGenerator(source)
    if not isinstance(source, InputStreams):
        source = GeneratorStreams(source)
    if not isinstance(source, SharedGenerator) and len(source) != num_inputs:
        raise ValueError(f"got {len(source)} generators for {num_inputs} inputs")
    return source


#: which kind of stream each device draws from unless told
STREAM_KINDS = ("generator", "philox")


def default_stream_kind(device: torch.device | str) -> str:
    """``philox`` on CUDA, ``generator`` elsewhere (see the module docstring)."""
    return "philox" if torch.device(device).type == "cuda" else "generator"


#: the version of :class:`PhiloxStreams`' words-to-noise transform (2: Box–Muller's u₁ from 41 bits,
#: :func:`ddrs.core.philox.fine_unit_interval`); logs drawn from Philox streams record it
PHILOX_TRANSFORM = 2
#: the version of :class:`GeneratorStreams`' Gaussian draws (2: tails made exact,
#: :mod:`ddrs.core.gaussian_tail`); logs drawn from generator streams record it
GENERATOR_TRANSFORM = 2


def stream_settings(device: torch.device | str) -> dict[str, object]:
    """What a resumable log records of its noise's streams: the kind ``device`` draws from, the
    seeds' key layout and the version of the kind's transform to noise, so a partial log drawn otherwise starts
    over rather than mixing streams."""
    kind = default_stream_kind(device)
    if kind == "philox":
        return {"streams": kind, "stream_keys": KEY_SCHEME, "philox_transform": PHILOX_TRANSFORM}
    return {"streams": kind, "stream_keys": KEY_SCHEME, "generator_transform": GENERATOR_TRANSFORM}


def input_streams(
    seed: int,
    indices: Iterable[int],
    stream: Stream,
    device: torch.device | str,
    *,
    kind: str | None = None,
    compile: bool | None = None,
) -> InputStreams:
    """The ``stream`` of every test input ``idx`` in ``indices`` under run ``seed``, keyed by ``(seed, stream, idx)``.

    ``kind`` (:data:`STREAM_KINDS`; default :func:`default_stream_kind`) chooses the generator;
    ``compile`` (default: on CUDA) fuses Philox into one kernel (ignored by per-input generators).
    """
    device = torch.device(device)
    kind = kind or default_stream_kind(device)
    compile = device.type == "cuda" if compile is None else compile
    keys = [derived_seed(seed, stream, idx) for idx in indices]
    if kind == "philox":
        return PhiloxStreams(keys, device, compile=compile)
    if kind == "generator":
        return GeneratorStreams([make_generator(key, device) for key in keys])
    raise ValueError(f"unknown stream kind {kind!r}; choose one of {list(STREAM_KINDS)}")
