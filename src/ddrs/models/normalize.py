"""The normalising first layer every model starts with."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn


class Normalize(nn.Module):
    """``(x − mean) / std`` per channel, as the model's first layer.

    Keeping normalisation inside the model means smoothing noise is added in pixel space, where
    the certified radius is measured (Cohen et al. 2019, ``NormalizeLayer``). ``mean`` and ``std``
    are buffers, so a checkpoint records the exact normaliser its weights were trained behind.
    """

    def __init__(self, mean: Sequence[float], std: Sequence[float]):
        super().__init__()
        if len(mean) != len(std):
            raise ValueError(f"mean has {len(mean)} channels but std has {len(std)}")
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(-1, 1, 1))
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(-1, 1, 1))

    def forward(self, x: Tensor) -> Tensor:
        return (x - self.mean) / self.std

    def extra_repr(self) -> str:
        return f"mean={self.mean.flatten().tolist()}, std={self.std.flatten().tolist()}"
