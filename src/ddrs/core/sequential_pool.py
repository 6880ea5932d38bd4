"""Sequential CERTIFY over many inputs: a pool of inputs in flight, drawn for in rounds.

Each round draws, in one :meth:`ddrs.core.smoothing.NoiseDraws.predictions` call, the next block of
every input in the pool: the n0 selection draws of an input that just entered (its c_A is their
top class, and they are never counted again), else the draws up to its next look
(:func:`ddrs.core.sequential.look_schedule`), whose misses (draws not of c_A) let the bounds be
checked at every draw. Then :func:`ddrs.core.sequential.decide` retires the inputs it stops, and
inputs from the queue take their places, so the forward passes stay full while inputs need very
different numbers of draws. Every input draws from its own stream
(:mod:`ddrs.core.streams`) in a fixed sequence of block sizes, so its result does not depend on
which inputs shared its rounds: a pool of one and a pool of a hundred give the same rows.
:class:`SequentialSmooth` is the door for one input at a time, beside Cohen's ``Smooth.certify``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from ddrs.core.certificate import ABSTAIN
from ddrs.core.device import BaseClassifier, copy_to
from ddrs.core.noise import SmoothingNoise, get_noise
from ddrs.core.sequential import ConfidenceSequence, confidence_sequence, decide, look_schedule
from ddrs.core.settings import CertifySettings, DeviceSettings, SequentialSettings, resolve_memory_format
from ddrs.core.smoothing import NoiseDraws, Smooth
from ddrs.core.streams import InputStreams, as_streams


class SequentialResult(NamedTuple):
    """One input's sequential certificate."""

    #: c_A, or :data:`ABSTAIN` when the running lower bound stayed below ½
    predict: int
    #: the certified radius at the stop (σΦ⁻¹(p̲_A) or 2λ(p̲_A − ½)); 0 on abstain
    radius: float
    #: the running lower bound on p_A at the stop
    p_a_lower: float
    #: forward passes spent on the input, selection included
    draws: int
    #: every radius of the grid was decided (False: stopped by the cap)
    decided: bool


#: One input in flight, a record of the pool's state (one row per input, filtered as inputs stop):
#: its row of ``x``, the looks it has done (0: selection only), whether it has drawn its selection
#: block, c_A, the correct estimation draws so far and its running bounds on p_A.
IN_FLIGHT = np.dtype(
    [
        ("position", np.int64),
        ("look", np.int64),
        ("selected", np.bool_),
        ("top", np.int64),
        ("correct", np.int64),
        ("lower", np.float64),
        ("upper", np.float64),
    ]
)


def _entering(positions: Sequence[int]) -> np.ndarray:
    """The records of inputs entering the pool: nothing drawn, bounds [0, 1]."""
    records = np.zeros(len(positions), dtype=IN_FLIGHT)
    records["position"], records["upper"] = positions, 1.0
    return records


@dataclass(frozen=True)
class _Rule:
    """What every round of one :func:`certify_sequentially` call shares: the statistics, the test, the
    looks' schedule, every input's σ (float64) and the thresholds p_r of its radii."""

    settings: CertifySettings
    noise: SmoothingNoise
    sequence: ConfidenceSequence
    schedule: np.ndarray
    sigma: Tensor
    thresholds: np.ndarray

    @classmethod
    def of(cls, settings: CertifySettings, sigma: Tensor) -> _Rule:
        """The rule of ``settings`` for inputs at ``sigma``: p_r = the least p̲_A that certifies radius r."""
        rule, noise, sigma = settings.sequential, get_noise(settings.noise), sigma.double()
        thresholds = noise.threshold(torch.tensor(rule.radii, dtype=torch.float64)[None, :], sigma[:, None]).numpy()
        sequence = confidence_sequence(rule.sequence, settings.alpha, settings.n)
        return cls(
            settings, noise, sequence, look_schedule(rule.first_look, rule.growth, settings.n), sigma, thresholds
        )

    def block_sizes(self, pool: np.ndarray) -> np.ndarray:
        """Each member's draws this round: n0 for its selection, else up to its next look."""
        blocks = np.diff(self.schedule, prepend=0)
        return np.where(pool["selected"], blocks[np.minimum(pool["look"], len(blocks) - 1)], self.settings.n0)

    def radius(self, p: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The certified radius of p̲_A = ``p`` for the inputs at ``positions``."""
        sigma = self.sigma[positions.tolist()]
        return self.noise.radius(torch.from_numpy(p), sigma).numpy()


def certify_sequentially(
    classifier: BaseClassifier, x: Tensor, sigma: Tensor, settings: CertifySettings, *, streams: InputStreams
) -> Iterator[tuple[int, SequentialResult]]:
    """Certify ``x[i]`` (host tensor ``(M, …)``) at ``sigma[i]`` for every i, yielding ``(i, result)``
    as each input stops (not in order). ``streams`` holds input i's stream at row i; ``classifier``,
    prepared for its device (:func:`ddrs.core.device.prepare_certification`), gives the model in eval
    mode, the forward batch and the inputs' memory format. ``settings.sequential`` holds the stopping
    rule, ``settings.n`` the cap.
    """
    rule = _Rule.of(settings, sigma)
    draws = NoiseDraws.certifying(settings, classifier, streams)
    first = min(settings.n0, settings.sequential.first_look)
    capacity = settings.sequential.pool or max(1, math.ceil(classifier.device_settings.batch_size / first))
    queue, pool = iter(range(len(x))), np.zeros(0, dtype=IN_FLIGHT)
    while True:
        pool = np.concatenate([pool, _entering(list(islice(queue, capacity - len(pool))))])
        if not len(pool):
            return
        positions = pool["position"].tolist()
        round_draws = replace(draws, generator=streams.select(positions))
        sizes = rule.block_sizes(pool)
        inputs, sigmas = copy_to(x[positions], classifier.device), rule.sigma[positions].to(x.dtype)
        predictions = round_draws.predictions(classifier.model, inputs, sigmas, sizes.tolist())
        rows, misses = _count(pool, np.split(predictions.cpu().numpy(), np.cumsum(sizes)[:-1]), classifier.num_classes)
        if not rows.size:
            continue
        stopped, decided = _decide(rule, pool, rows, misses)
        for r, settled in zip(stopped, decided, strict=True):
            yield int(pool["position"][r]), _result(rule, pool[r], settled)
        pool = np.delete(pool, stopped)


def _count(pool: np.ndarray, drawn: list[np.ndarray], num_classes: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Take a round's classes ``drawn`` per member into ``pool``: c_A from a selection block, else the
    correct draws and the look. Returns the members that drew estimation draws and, for each, the
    positions of its misses (draws not of c_A) in its block."""
    for m in np.flatnonzero(~pool["selected"]):
        pool["top"][m] = np.bincount(drawn[m], minlength=num_classes).argmax()
    rows = np.flatnonzero(pool["selected"])
    misses = [np.flatnonzero(drawn[r] != pool["top"][r]) for r in rows]
    pool["correct"][rows] += np.array(
        [len(drawn[r]) - len(m) for r, m in zip(rows, misses, strict=True)], dtype=np.int64
    )
    pool["look"][rows] += 1
    pool["selected"] = True
    return rows, misses


def _decide(rule: _Rule, pool: np.ndarray, rows: np.ndarray, misses: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~ddrs.core.sequential.decide` for the members ``rows`` after their look: their bounds
    updated in ``pool``; returns the members that stop and whether each decided every radius."""
    sequential, positions = rule.settings.sequential, pool["position"][rows]
    gain_below = (
        None if sequential.acr_fraction is None else sequential.acr_fraction * rule.sigma[positions.tolist()].numpy()
    )
    members = pool[rows]
    decision = decide(
        rule.sequence,
        rule.schedule,
        members["look"],
        members["correct"],
        members["lower"],
        members["upper"],
        rule.thresholds[positions],
        misses=misses if sequential.checks == "draw" else None,
        gain_below=gain_below,
        radius=lambda p: rule.radius(p, positions),
        futility=sequential.futility,
    )
    pool["lower"][rows], pool["upper"][rows] = decision.lower, decision.upper
    return rows[decision.stop], decision.decided[decision.stop]


def _result(rule: _Rule, member: np.void, decided: bool) -> SequentialResult:
    """The certificate of an input that stops (``member``, its record)."""
    lower, position = member["lower"], int(member["position"])
    certified = lower >= 0.5
    radius = float(rule.noise.radius(torch.tensor(lower), rule.sigma[position])) if certified else 0.0
    if certified:  # p̲_A ≥ p_r certifies r itself, where σΦ⁻¹(Φ(r/σ)) may round to either side of it
        radii = np.array(rule.settings.sequential.radii)
        reached = float(radii[rule.thresholds[position] <= lower].max())
        radius = reached if rule.sequence.grid_valued else max(radius, reached)
    return SequentialResult(
        predict=int(member["top"]) if certified else ABSTAIN,
        radius=radius,
        p_a_lower=float(lower),
        draws=int(rule.settings.n0 + rule.schedule[member["look"] - 1]),
        decided=bool(decided),
    )


class SequentialSmooth(Smooth):
    """Cohen's :class:`~ddrs.core.smoothing.Smooth` (``certify``, ``predict``) with sequential CERTIFY
    beside ``certify``: one input at a time from a notebook, as Cohen's ``Smooth.certify`` is called."""

    def certify_sequential(
        self,
        x: Tensor,
        n0: int,
        n: int,
        alpha: float,
        batch_size: int,
        radii: Sequence[float],
        *,
        sequence: str = SequentialSettings.sequence,
        checks: str = SequentialSettings.checks,
        futility: float = SequentialSettings.futility,
        generator: torch.Generator | None = None,
    ) -> SequentialResult:
        """Sequential CERTIFY (``docs/protocol.md``, "Sequential certification"): :meth:`certify`'s
        guarantee, drawing only until every radius of ``radii`` is decided, at most ``n`` draws.

        c_A is the top class of ``n0`` selection draws, as in :meth:`certify`; then estimation draws
        come in looks (:func:`ddrs.core.sequential.look_schedule`) until ``sequence``
        (:data:`ddrs.core.settings.SEQUENCES`) certifies each radius or shows it out of reach. With
        probability at least 1 − ``alpha``, the class returned is g(x) and g predicts it within the
        returned radius, whatever the input's draws.

        :param radii: the radius grid the certificate is for (0 is always included).
        :param sequence: the sequential test (``grid``: one test per radius; ``betting_cp``: a
            confidence sequence on p_A).
        :param checks: ``draw``: the bounds are checked at every draw; ``look``: at the looks alone
            (``union_cp`` needs it).
        :param futility: β′ of the futility rule, which gives a radius up once the remaining draws at
            the rate of p_A's Clopper–Pearson upper bound at level β′ could not reach it (0: only once
            no stream could); it costs power, never soundness.
        :return: :class:`SequentialResult`: ``predict`` (or ``Smooth.ABSTAIN``), ``radius``,
            ``p_a_lower``, ``draws`` (forward passes spent, selection included) and ``decided``
            (False: stopped by the cap ``n``).
        """
        self.base_classifier.eval()
        rule = SequentialSettings(sequence=sequence, checks=checks, futility=futility, radii=tuple(radii))
        settings = CertifySettings(noise=self.noise.name, n0=n0, n=n, alpha=alpha, mode="sequential", sequential=rule)
        on_device = DeviceSettings(batch_size=batch_size, memory_format=resolve_memory_format("auto", x.device.type))
        classifier = BaseClassifier(self.base_classifier, self.num_classes, x.device, on_device)
        ((_, result),) = certify_sequentially(
            classifier, x.unsqueeze(0), torch.tensor([float(self.sigma)]), settings, streams=as_streams(generator, 1)
        )
        return result
