"""How often the base classifier labels noisy copies of a training input correctly (p_A of its label).

Sun et al. (2024, §5 and their ``p_correct``) estimate a training input's p_A as the fraction of
N noisy copies x + σ·ε the base classifier assigns to the input's label: it decides which inputs
are hard (discarded), how much each easy one weighs, and which inputs count as easy or hard when
gradient norms are compared (their Table 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset, Subset

from ddrs.core.smoothing import Generators, sample_counts


@torch.no_grad()
def correct_counts(
    model: nn.Module,
    dataset: Dataset,
    indices: Sequence[int],
    sigmas: Tensor,
    draws: int,
    *,
    noise: str,
    generator: Generators,
    batch_size: int,
    device: torch.device,
    precision: str = "fp32",
    num_workers: int = 0,
) -> Tensor:
    """For each ``dataset[i]``, ``i`` in ``indices``: how many of ``draws`` noisy copies at σ =
    ``sigmas[k]`` the base classifier labels correctly; a CPU ``LongTensor`` aligned with ``indices``.

    ``generator`` is one generator for the whole pass or one per listed input. ``batch_size`` is
    the number of noisy copies per forward pass. The model runs in eval mode; its mode is restored.
    """
    if len(sigmas) != len(indices):
        raise ValueError(f"got {len(sigmas)} sigmas for {len(indices)} inputs")
    per_input = generator is not None and not isinstance(generator, torch.Generator)
    if per_input and len(generator) != len(indices):
        raise ValueError(f"got {len(generator)} generators for {len(indices)} inputs")
    was_training = model.training
    model.eval()
    counts, start = [], 0
    try:
        loader = DataLoader(Subset(dataset, list(indices)), batch_size=batch_size, num_workers=num_workers)
        for x, y in loader:
            stop = start + len(y)
            x, y = x.to(device), torch.as_tensor(y).to(device)
            sources = generator[start:stop] if per_input else generator
            classes = sample_counts(
                model, x, sigmas[start:stop].to(device), draws, noise, batch_size, sources, precision
            )
            counts.append(classes.gather(1, y.view(-1, 1)).squeeze(1).cpu())
            start = stop
    finally:
        model.train(was_training)
    return torch.cat(counts) if counts else torch.zeros(0, dtype=torch.long)
