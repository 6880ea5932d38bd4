"""Seeds derived from the config's one seed, so every random draw is reproducible.

Each test input gets its own random streams, keyed by ``(seed, stream, idx)`` (:mod:`ddrs.core.streams`):
results do not depend on how inputs were batched or on where an interrupted run resumed. The streams are independent;
in particular CERTIFY's draws never reuse the draws that chose σ*ₓ, which the data-dependent
certificate needs to stay sound (DDRS §3.5), nor any draw that trained the base classifier (Cohen
et al.'s certificate holds for a classifier fixed before the noise is drawn).

A stream is named by its first key, a purpose: the values of :class:`Stream`, :class:`TrainingStream`
and :class:`StudyStream` are disjoint, and :func:`derived_seed` mixes in the number of keys, so no
two streams of a run share a 64-bit seed (the CPU's mt19937 reads only 32 of them: :mod:`ddrs.core.streams`).
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

#: the version of the key layout :func:`derived_seed` is given (2: purpose first, key count mixed in);
#: resumable logs record it, so a partial log drawn under another layout starts over
KEY_SCHEME = 2


class Stream(IntEnum):
    """The independent random streams of one test input, keyed further by its ``idx``."""

    SELECTION = 0  #: c_A, the σ₀-smoothed prediction (the σ log's c_a; the class ``fixed_class`` holds)
    OPTIMIZE = 1  #: Algorithm 1's or the grid search's noise draws
    CERTIFY = 2  #: Cohen's CERTIFY at the chosen scale
    TAIL = 3  #: a CPU stream's exact-tail refinements (:mod:`ddrs.core.gaussian_tail`), keyed by the stream's seed


class TrainingStream(IntEnum):
    """The independent random streams of one training run, each keyed further by epoch (and input)."""

    GLOBAL = 10  #: torch's global generator during an epoch (draws of the model itself, e.g. dropout)
    SHUFFLE = 11  #: the order of an epoch's shuffled pass
    NOISE = 12  #: the smoothing noise of the method's loss and of Algorithm 2
    EVAL = 13  #: the per-epoch noisy accuracy
    INIT = 14  #: the initial weights
    PLAN = 15  #: the method's epoch plan (:mod:`ddrs.training.epoch_plan`)
    AUGMENT = 16  #: one input's data augmentation in one epoch, keyed by (epoch, idx[, visit > 0])
    LOADER = 17  #: the DataLoader's worker base seed (what workers draw outside torch)
    REPLICATE = 18  #: the seed of every other training stream of replicate r > 0 (``TrainConfig.run_seed``)


class StudyStream(IntEnum):
    """The streams of the studies: of one training input in Sun et al.'s gradient-norm study, keyed
    further by its ``idx``; of the variance budget's re-certifications; of the certificate audit (issue 69); of the
    semi-elastic σ(x)."""

    P_CORRECT = 20  #: the draws that count p_A (easy or hard)
    GRADIENT = 21  #: the draws of the loss whose gradient is measured
    RECERTIFY = 22  #: the CERTIFY seed of a model's Monte Carlo re-certification d (the variance budget), keyed by d
    ORDER = 23  #: one seeded order of a log's inputs through Algorithm 3 (order dependence), keyed by the order
    AUDIT_SIGMA = 24  #: Algorithm 1 at the points an audit's attacker sends (:mod:`ddrs.jobs.audit`), keyed by idx
    AUDIT_ATTACK = 25  #: the soft smoothed classifier's draws of an audit's attacks, keyed by idx
    AUDIT_PREDICT = 26  #: PREDICT's draws confirming an audit's candidates, keyed by idx
    SEMI_ELASTIC = 27  #: the semi-elastic σ(x)'s reference and calibration subsamples and its check, keyed by draw


def derived_seed(seed: int, *keys: int) -> int:
    """A well-mixed 64-bit seed for the stream ``keys`` of run ``seed`` (numpy's SeedSequence).

    The number of keys is mixed in first: SeedSequence ignores trailing zero words of its entropy,
    so ``(seed, a)`` and ``(seed, a, 0)`` would otherwise name one stream.
    """
    return int(np.random.SeedSequence([int(seed), len(keys), *map(int, keys)]).generate_state(1, np.uint64)[0])
