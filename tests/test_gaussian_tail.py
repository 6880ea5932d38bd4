"""Exact Gaussian tails on the CPU (ddrs.core.gaussian_tail): torch's cut is measured, then removed."""

import math

import pytest
import torch
from scipy import stats

from ddrs.core.gaussian_tail import BLOCK, CELL, REFINED_CELLS, refine_tail
from ddrs.core.noise import get_noise
from ddrs.core.streams import GeneratorStreams

GAUSSIAN = get_noise("gaussian")
#: torch's largest Box–Muller radius on the CPU, squared: u₁ = 2⁻²⁴
CUT = -2 * math.log(CELL)
#: the least squared radius of a refined pair
FIRST = -2 * math.log(REFINED_CELLS * CELL)
#: a seed whose first 2²² values hold a pair at torch's cut (found by search), and where it sits
SEED_AT_CUT, BLOCK_AT_CUT, COLUMN_AT_CUT = 17, 165_176, 0


def squared_radii(values: torch.Tensor) -> torch.Tensor:
    """Each Box–Muller pair's squared radius (coordinates j and j + 8 of a block of 16), in float64."""
    pairs = values.double().view(-1, 2, BLOCK // 2)
    return pairs.square().sum(dim=1)


def angle(values: torch.Tensor) -> torch.Tensor:
    """Each Box–Muller pair's angle."""
    pairs = values.double().view(-1, 2, BLOCK // 2)
    return torch.atan2(pairs[:, 1], pairs[:, 0])


def randn(seed: int, count: int = 2**22) -> torch.Tensor:
    return torch.randn(count // BLOCK, BLOCK, generator=torch.Generator().manual_seed(seed))


def test_torch_cpu_randn_pairs_coordinates_j_and_j_plus_8_and_cuts_the_tail_at_5_77():
    radii = squared_radii(randn(SEED_AT_CUT))
    assert radii[BLOCK_AT_CUT, COLUMN_AT_CUT].item() == pytest.approx(CUT, abs=1e-4)
    assert radii.max().item() <= CUT + 1e-4  # nothing beyond the cut: the tail 2⁻²⁴ per pair is missing
    # the pairing is (j, j + 8): neighbours (j, j + 1) show no pair at the cut
    neighbours = randn(SEED_AT_CUT).double().view(-1, 8, 2).square().sum(dim=2)
    assert (neighbours - CUT).abs().min().item() > 1e-2


def test_streams_draw_beyond_the_cut_and_leave_torch_values_outside_the_tail():
    raw = randn(SEED_AT_CUT)
    streams = GeneratorStreams([torch.Generator().manual_seed(SEED_AT_CUT)])
    drawn = streams.draw(GAUSSIAN, [(0, len(raw))], torch.zeros(1, BLOCK))
    raw_radii, drawn_radii = squared_radii(raw), squared_radii(drawn)
    assert drawn_radii[BLOCK_AT_CUT, COLUMN_AT_CUT].item() > CUT  # the pair at the cut now lies in the tail
    cell = torch.round(torch.exp(-raw_radii / 2) / CELL)
    refined = cell <= REFINED_CELLS
    assert 0 < refined.sum() < 10_000
    assert torch.equal(drawn[~refined.repeat(1, 2)], raw[~refined.repeat(1, 2)])  # torch's own values elsewhere
    # refined pairs keep their angle and stay in their own 24-bit cell of u₁, ((m − 1)·2⁻²⁴, m·2⁻²⁴]
    assert torch.allclose(angle(drawn)[refined], angle(raw)[refined], atol=1e-5)
    u1_cells = torch.exp(-drawn_radii[refined] / 2) / CELL
    assert (u1_cells > cell[refined] - 1 - 0.05).all() and (u1_cells <= cell[refined] + 0.05).all()


def test_refined_tail_has_the_gaussian_mass_and_shape():
    """Measures the tail: beyond radius 3.72 pairs occur at rate 2⁻¹⁰ and r² − 13.86 is 2·Exp(1) (χ²₂ is memoryless)."""
    pairs, beyond, recovery = 0, [], 0.0
    for seed in range(4):
        raw = randn(seed, 2**24)
        radii = squared_radii(raw)
        candidates = radii[radii >= FIRST - 0.01]
        exact = torch.exp(-candidates / 2) / CELL
        recovery = max(recovery, (exact - exact.round()).abs().max().item())
        drawn = squared_radii(refine_tail(raw, torch.Generator().manual_seed(100 + seed)))
        pairs += drawn.numel()
        beyond.append(drawn[drawn >= FIRST])
    beyond = torch.cat(beyond)
    assert recovery < 0.1  # the 24-bit cell is read back from the float32 pair without doubt
    assert stats.binomtest(len(beyond), pairs, REFINED_CELLS * CELL).pvalue > 1e-3
    assert stats.kstest((beyond - FIRST).numpy(), stats.expon(scale=2).cdf).pvalue > 1e-3


def test_pairs_at_the_cut_are_spread_over_the_whole_tail():
    """20,000 pairs planted at torch's cut: their refined r² − 33.27 follows 2·Exp(1), so no tail mass is lost."""
    angles = torch.rand(20_000, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 2 * math.pi
    radius = math.sqrt(CUT)
    values = torch.cat([radius * torch.cos(angles), radius * torch.sin(angles)], dim=1).float()
    drawn = squared_radii(refine_tail(values, torch.Generator().manual_seed(1))).flatten()
    assert stats.kstest((drawn - CUT).numpy(), stats.expon(scale=2).cdf).pvalue > 1e-3


def test_refinements_do_not_depend_on_how_draws_are_grouped():
    sample = torch.zeros(1, 3, 16, 16)
    one = GeneratorStreams([torch.Generator().manual_seed(5)]).draw(GAUSSIAN, [(0, 40)], sample)
    split = GeneratorStreams([torch.Generator().manual_seed(5)])
    parts = torch.cat([split.draw(GAUSSIAN, [(0, count)], sample) for count in (7, 1, 32)])
    raw = torch.randn(40, 768, generator=torch.Generator().manual_seed(5))
    assert not torch.equal(one.flatten(1), raw)  # some draws were refined
    assert torch.equal(one, parts)


def test_refined_pairs_take_the_tail_uniforms_in_the_order_of_the_values():
    """Pair k of the refined ones, counted along ``values``, sits at u₁ = (m − v_k)·2⁻²⁴ with v_k the
    tail generator's k-th uniform (read back to 0.05 of a cell: float32 rounds a pair by < 0.02)."""
    raw = randn(SEED_AT_CUT, 2**20)
    drawn = refine_tail(raw.clone(), torch.Generator().manual_seed(3))
    cell = torch.round(torch.exp(-squared_radii(raw) / 2) / CELL)
    refined = cell <= REFINED_CELLS  # (blocks, 8): row-major is the order of the values
    within = torch.rand(int(refined.sum()), generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    read_back = cell[refined] - torch.exp(-squared_radii(drawn)[refined] / 2) / CELL
    assert refined.sum() > 100
    assert (read_back - within).abs().max().item() < 0.05
