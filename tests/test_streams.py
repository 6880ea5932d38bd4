"""Per-input random streams (ddrs.core.streams) and the counter-based generator behind them (ddrs.core.philox)."""

import math

import pytest
import torch
from scipy import stats

from ddrs.core.noise import get_noise
from ddrs.core.philox import fine_unit_interval, open_unit_interval, philox4x32
from ddrs.core.seeds import Stream, StudyStream, TrainingStream, derived_seed
from ddrs.core.settings import Algorithm1Settings
from ddrs.core.sigma import optimize_sigma
from ddrs.core.smoothing import sample_counts
from ddrs.core.streams import (
    GENERATOR_TRANSFORM,
    PHILOX_TRANSFORM,
    GeneratorStreams,
    PhiloxStreams,
    default_stream_kind,
    input_streams,
    stream_settings,
)

CPU = torch.device("cpu")
DEVICES = [CPU] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
GAUSSIAN, UNIFORM = get_noise("gaussian"), get_noise("uniform")

#: Random123's known-answer vectors for philox4x32_10 (kat_vectors): counter, key, output
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize("device", DEVICES, ids=str)
@pytest.mark.parametrize(("counter", "key", "expected"), KNOWN_ANSWERS)
def test_philox_matches_random123_known_answers(counter, key, expected, device):
    words = philox4x32(
        tuple(torch.tensor([c], device=device) for c in counter), tuple(torch.tensor([k], device=device) for k in key)
    )
    assert [int(w) for w in words] == list(expected)


def x_batch(batch: int = 3, shape=(2, 3, 3)) -> torch.Tensor:
    return torch.rand(batch, *shape, generator=torch.Generator().manual_seed(5))


def test_uniforms_are_the_centres_of_2_to_the_23_cells_and_never_0_or_1():
    """Box–Muller takes log u and uniform noise maps u to (−λ, λ): u must stay strictly inside (0, 1)."""
    words = torch.tensor([0, 1 << 9, 0x7FFFFFFF, 0xFFFFFC00, 0xFFFFFFFF], dtype=torch.int64)
    u = open_unit_interval(words)
    assert u.dtype == torch.float32 and bool(((u > 0) & (u < 1)).all())
    cells = (words >> 9).to(torch.float64)
    assert torch.equal(u.double(), (cells + 0.5) * 2.0**-23)  # exact: no two cells merge
    assert u[-1] < 1 and u[-2] < u[-1]


def test_box_muller_draws_the_gaussian_tail_a_23_bit_uniform_cuts_off():
    """u₁ has 41 bits, the smallest 2⁻⁴²: a pair's radius reaches √(84 ln 2) ≈ 7.63, where 23 bits
    stopped at 5.77 and left out a tail of mass 2⁻²³ per pair (4.5·10⁻³ of 3×224×224 images)."""
    first = torch.tensor([0, 0, 1, 0xFFFFFFFF], dtype=torch.int64)
    second = torch.tensor([0, 0x1FF, 0, 0xFFFFFFFF], dtype=torch.int64)
    u1 = fine_unit_interval(first, second)
    assert u1.tolist() == [2.0**-42, 511.5 * 2.0**-41, 2.0**-32 + 2.0**-42, 1.0]
    pairs = GAUSSIAN.from_words(torch.stack((first, second), dim=-1).flatten()).view(-1, 2)
    radius = torch.linalg.vector_norm(pairs.double(), dim=1)
    assert radius[0].item() == pytest.approx((84 * math.log(2)) ** 0.5, rel=1e-6) and radius[0] > 7.6
    assert radius[3].item() == 0.0 and bool(torch.isfinite(pairs).all())
    assert math.sqrt(-2 * math.log(open_unit_interval(torch.tensor([0])).item())) < 5.8  # the old cut


@pytest.mark.parametrize("kind", ["philox", "generator"])
@pytest.mark.parametrize("noise", [GAUSSIAN, UNIFORM], ids=lambda n: n.name)
@pytest.mark.parametrize("shape", [(1, 4, 4), (1, 5, 5)], ids=["16-values", "25-values"])
def test_an_inputs_draws_do_not_depend_on_the_batch_or_the_block_sizes(noise, kind, shape):
    # 25 values: torch's CPU randn redraws a call's last 16 values unless its size is a multiple of
    # 16, so unpadded generator draws depended on how they were grouped into calls
    x = torch.rand(3, *shape, generator=torch.Generator().manual_seed(0))
    together = input_streams(0, [10, 11, 12], Stream.CERTIFY, CPU, kind=kind)
    drawn = together.draw(noise, [(0, 3), (1, 5), (2, 2), (1, 4)], x)
    alone = input_streams(0, [11], Stream.CERTIFY, CPU, kind=kind)
    first, second = (alone.draw(noise, [(0, size)], x[1:2]) for size in (2, 7))  # other block sizes
    assert torch.equal(drawn[3:8], torch.cat([first, second])[:5])
    assert torch.equal(drawn[10:14], torch.cat([first, second])[5:9])
    each = input_streams(0, [10, 11, 12], Stream.CERTIFY, CPU, kind=kind).draw_each(noise, 3, x)
    assert torch.equal(each[0], drawn[:3]) and torch.equal(each[1], drawn[3:6])


def test_streams_differ_by_input_purpose_and_seed():
    x = x_batch(1)
    draws = [
        input_streams(seed, [idx], stream, CPU, kind="philox").draw(GAUSSIAN, [(0, 4)], x)
        for seed, idx, stream in [
            (0, 1, Stream.CERTIFY),
            (0, 2, Stream.CERTIFY),
            (0, 1, Stream.OPTIMIZE),
            (1, 1, Stream.CERTIFY),
        ]
    ]
    for i in range(len(draws)):
        for j in range(i):
            assert not torch.allclose(draws[i], draws[j])


def test_philox_gaussian_and_uniform_noise_have_their_distributions():
    x = torch.zeros(2, 1, 50, 50)  # 2,500 values a draw
    streams = input_streams(3, [0, 1], Stream.CERTIFY, CPU, kind="philox")
    gaussian = streams.draw_each(GAUSSIAN, 40, x)  # 100,000 values per input
    for values in gaussian.flatten(1):
        assert stats.kstest(values.double().numpy(), "norm").pvalue > 1e-3
    assert abs(float(torch.corrcoef(gaussian.flatten(1))[0, 1])) < 0.02  # the two inputs are unrelated
    uniform = streams.draw_each(UNIFORM, 40, x).flatten()
    assert stats.kstest(uniform.double().numpy(), stats.uniform(-1, 2).cdf).pvalue > 1e-3
    assert float(uniform.abs().max()) < 1


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(18, 4)
        torch.nn.init.normal_(self.layer.weight, generator=torch.Generator().manual_seed(0))

    def forward(self, x):
        return self.layer(x.flatten(1))


def test_counts_with_philox_streams_do_not_depend_on_batching_or_forward_batch_size():
    """In float64, so that no argmax sits on a tie that another batch size's float32 rounding could break."""
    model, x = Linear().double().eval(), x_batch().double()

    def counts(indices, rows, batch_size):
        streams = input_streams(0, indices, Stream.CERTIFY, CPU, kind="philox")
        return sample_counts(model, x[rows], 0.5, 50, GAUSSIAN, batch_size, streams)

    together = counts([10, 11, 12], slice(None), 16)
    assert together.sum(dim=1).tolist() == [50, 50, 50]
    for i in range(3):
        for batch_size in (7, 50, 64):
            assert torch.equal(counts([10 + i], slice(i, i + 1), batch_size)[0], together[i])


def test_algorithm1_with_philox_streams_solves_each_input_as_if_alone():
    """In float64: batches of 3 and of 1 sum the products in other orders (float32 would differ by ~1e-6)."""
    model, x = Linear().double().eval(), x_batch().double()
    settings = Algorithm1Settings(sigma0=0.3, n=4, steps=(0, 5), lr=0.01)
    together = optimize_sigma(
        model, x, settings, generator=input_streams(0, [4, 5, 6], Stream.OPTIMIZE, CPU, kind="philox")
    )
    for i in range(3):
        alone = optimize_sigma(
            model, x[i : i + 1], settings, generator=input_streams(0, [4 + i], Stream.OPTIMIZE, CPU, kind="philox")
        )
        torch.testing.assert_close(alone[:, 0], together[:, i], rtol=1e-10, atol=0)


def test_each_device_gets_its_kind_of_stream_and_bad_kinds_are_named():
    assert default_stream_kind("cpu") == "generator" and default_stream_kind("cuda") == "philox"
    # a log records its streams' transform to noise, so one drawn under another starts over
    assert stream_settings("cuda")["philox_transform"] == PHILOX_TRANSFORM
    assert stream_settings("cpu")["generator_transform"] == GENERATOR_TRANSFORM
    assert "philox_transform" not in stream_settings("cpu") and "generator_transform" not in stream_settings("cuda")
    assert isinstance(input_streams(0, [1, 2], Stream.CERTIFY, CPU), GeneratorStreams)
    assert isinstance(input_streams(0, [1, 2], Stream.CERTIFY, CPU, kind="philox"), PhiloxStreams)
    with pytest.raises(ValueError, match="unknown stream kind 'mt'"):
        input_streams(0, [1], Stream.CERTIFY, CPU, kind="mt")
    with pytest.raises(ValueError, match="got 2 generators for 3 inputs"):
        sample_counts(Linear().eval(), x_batch(), 0.5, 4, GAUSSIAN, 8, input_streams(0, [1, 2], Stream.CERTIFY, CPU))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("compile", [False, True], ids=["eager", "compiled"])
def test_cuda_philox_draws_the_cpus_values(compile):
    cuda = torch.device("cuda")
    x = x_batch()
    blocks = [(0, 3), (2, 5), (1, 2)]
    on_cpu = input_streams(7, [1, 2, 3], Stream.CERTIFY, CPU, kind="philox").draw(GAUSSIAN, blocks, x)
    on_cuda = input_streams(7, [1, 2, 3], Stream.CERTIFY, cuda, compile=compile).draw(GAUSSIAN, blocks, x.to(cuda))
    torch.testing.assert_close(on_cuda.cpu(), on_cpu, rtol=1e-5, atol=1e-5)  # transcendental functions' ulps


def test_no_two_streams_of_a_run_share_a_seed():
    """A certificate needs CERTIFY's draws independent of every draw that trained the classifier
    or chose σ: before the keys named their purpose first and counted themselves, input 2's
    SELECTION, OPTIMIZE and CERTIFY streams were training's NOISE of epochs 0, 1 and 2."""
    inputs, epochs = range(40), range(12)
    keys = [(stream, idx) for stream in (*Stream, *StudyStream) for idx in inputs]
    keys += [(stream,) for stream in (TrainingStream.INIT, TrainingStream.LOADER)]
    keys += [(stream, epoch) for stream in TrainingStream for epoch in epochs]
    keys += [(TrainingStream.AUGMENT, epoch, idx) for epoch in epochs for idx in inputs]
    seeds = [derived_seed(0, *key) for key in keys]
    assert len(set(seeds)) == len(keys)
    assert derived_seed(0, 3) != derived_seed(0, 3, 0)  # numpy's SeedSequence alone ignores the trailing 0
    purposes = [int(stream) for enum in (Stream, TrainingStream, StudyStream) for stream in enum]
    assert len(set(purposes)) == len(purposes)  # a stream is named by its first key
