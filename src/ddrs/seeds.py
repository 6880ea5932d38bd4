"""Seeds derived from the config's one seed, so every random draw is reproducible.

Each test input gets its own random streams, keyed by ``(seed, idx, stream)`` (:mod:`ddrs.streams`):
results do not depend on how inputs were batched or on where an interrupted run resumed. The streams are independent;
in particular CERTIFY's draws never reuse the draws that chose σ*ₓ, which the data-dependent
certificate needs to stay sound (DDRS §3.5).
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np


class Stream(IntEnum):
    """The independent random streams of one test input."""

    SELECTION = 0  #: c_A, the σ₀-smoothed prediction (the σ log's c_a; the class ``fixed_class`` holds)
    OPTIMIZE = 1  #: Algorithm 1's or the grid search's noise draws
    CERTIFY = 2  #: Cohen's CERTIFY at the chosen scale


class TrainingStream(IntEnum):
    """The independent random streams of one training run, each keyed further by epoch (and input)."""

    GLOBAL = 0  #: torch's global generator during an epoch (draws of the model itself, e.g. dropout)
    SHUFFLE = 1  #: the order of an epoch's shuffled pass
    NOISE = 2  #: the smoothing noise of the method's loss and of Algorithm 2
    EVAL = 3  #: the per-epoch noisy accuracy
    INIT = 4  #: the initial weights
    PLAN = 5  #: the method's epoch plan (:mod:`ddrs.training.epoch_plan`)
    AUGMENT = 6  #: one input's data augmentation in one epoch, keyed by (epoch, idx)
    LOADER = 7  #: the DataLoader's worker base seed (what workers draw outside torch)


def derived_seed(seed: int, *keys: int) -> int:
    """A well-mixed 64-bit seed for the stream ``keys`` of run ``seed`` (numpy's SeedSequence)."""
    return int(np.random.SeedSequence([int(seed), *map(int, keys)]).generate_state(1, np.uint64)[0])
