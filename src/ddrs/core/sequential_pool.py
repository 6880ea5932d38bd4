"""Sequential CERTIFY over many inputs: a pool of inputs in flight, drawn for in rounds.

Each round draws, in one :func:`ddrs.core.smoothing.sample_predictions` call, the next block of
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
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor, nn

from ddrs.core.certificate import ABSTAIN
from ddrs.core.device import copy_to
from ddrs.core.noise import get_noise
from ddrs.core.sequential import confidence_sequence, decide, look_schedule
from ddrs.core.settings import CertifySettings, DeviceSettings, SequentialSettings, resolve_memory_format
from ddrs.core.smoothing import Smooth, sample_predictions
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


def certify_sequentially(
    model: nn.Module,
    x: Tensor,
    sigma: Tensor,
    settings: CertifySettings,
    *,
    device_settings: DeviceSettings,
    num_classes: int,
    streams: InputStreams,
    device: torch.device,
) -> Iterator[tuple[int, SequentialResult]]:
    """Certify ``x[i]`` (host tensor ``(M, …)``) at ``sigma[i]`` for every i, yielding ``(i, result)``
    as each input stops (not in order). ``streams`` holds input i's stream at row i; ``model`` is on
    ``device``, in eval mode. ``settings.sequential`` holds the stopping rule, ``settings.n`` the cap;
    ``device_settings``, resolved for ``device`` (:func:`ddrs.core.device.prepare_certification`), the
    forward batch and the inputs' memory format.
    """
    rule = settings.sequential
    noise = get_noise(settings.noise)
    sequence = confidence_sequence(rule.sequence, settings.alpha, settings.n)
    schedule = look_schedule(rule.first_look, rule.growth, settings.n)
    blocks = np.diff(schedule, prepend=0)
    channels_last, batch_size = device_settings.channels_last, device_settings.batch_size
    capacity = rule.pool or max(1, math.ceil(batch_size / min(settings.n0, rule.first_look)))
    sigma = sigma.double()
    radii = torch.tensor(rule.radii, dtype=torch.float64)
    thresholds = noise.threshold(radii[None, :], sigma[:, None]).numpy()

    # per input in the pool (parallel arrays): position in x, look done (0: selection only), c_A, counts, bounds
    members: list[int] = []
    look = np.zeros(0, dtype=np.int64)
    top = np.zeros(0, dtype=np.int64)
    correct = np.zeros(0, dtype=np.int64)
    lower = np.zeros(0)
    upper = np.zeros(0)
    queue = iter(range(len(x)))
    selected = np.zeros(0, dtype=bool)  # the member has drawn its selection block
    while True:
        arrivals = [i for _, i in zip(range(capacity - len(members)), queue, strict=False)]
        members += arrivals
        look = np.concatenate([look, np.zeros(len(arrivals), dtype=np.int64)])
        top = np.concatenate([top, np.zeros(len(arrivals), dtype=np.int64)])
        correct = np.concatenate([correct, np.zeros(len(arrivals), dtype=np.int64)])
        lower = np.concatenate([lower, np.zeros(len(arrivals))])
        upper = np.concatenate([upper, np.ones(len(arrivals))])
        selected = np.concatenate([selected, np.zeros(len(arrivals), dtype=bool)])
        if not members:
            return
        nums = np.where(selected, blocks[np.minimum(look, len(blocks) - 1)], settings.n0)
        pool_x, pool_sigma = copy_to(x[members], device), sigma[members].to(x.dtype)
        predictions = sample_predictions(
            model, pool_x, pool_sigma, nums.tolist(), noise, batch_size, streams.select(members),
            settings.precision, channels_last=channels_last, num_classes=num_classes,
        ).cpu().numpy()  # fmt: skip
        drawn = np.split(predictions, np.cumsum(nums)[:-1])
        for m in np.flatnonzero(~selected):
            top[m] = np.bincount(drawn[m], minlength=num_classes).argmax()
        rows = np.flatnonzero(selected)  # the members that drew estimation draws this round
        misses = [np.flatnonzero(drawn[r] != top[r]) for r in rows]
        correct[rows] += nums[rows] - np.array([len(m) for m in misses], dtype=np.int64)
        look[rows] += 1
        selected[:] = True
        if not rows.size:
            continue
        member_sigma = sigma[[members[r] for r in rows]].numpy()
        decision = decide(
            sequence,
            schedule,
            look[rows],
            correct[rows],
            lower[rows],
            upper[rows],
            thresholds[[members[r] for r in rows]],
            misses=misses if rule.checks == "draw" else None,
            gain_below=None if rule.acr_fraction is None else rule.acr_fraction * member_sigma,
            radius=lambda p, s=member_sigma: noise.radius(torch.from_numpy(p), torch.from_numpy(s)).numpy(),
            futility=rule.futility,
        )
        lower[rows], upper[rows] = decision.lower, decision.upper
        stopped = rows[decision.stop]
        for r, settled in zip(stopped, decision.decided[decision.stop], strict=True):
            certified = lower[r] >= 0.5
            radius = float(noise.radius(torch.tensor(lower[r]), sigma[members[r]])) if certified else 0.0
            if certified:  # p̲_A ≥ p_r certifies r itself, where σΦ⁻¹(Φ(r/σ)) may round to either side of it
                reached = float(radii.numpy()[thresholds[members[r]] <= lower[r]].max())
                radius = reached if sequence.grid_valued else max(radius, reached)
            result = SequentialResult(
                predict=int(top[r]) if certified else ABSTAIN,
                radius=radius,
                p_a_lower=float(lower[r]),
                draws=int(settings.n0 + schedule[look[r] - 1]),
                decided=bool(settled),
            )
            yield members[r], result
        keep = np.ones(len(members), dtype=bool)
        keep[stopped] = False
        members = [m for m, kept in zip(members, keep, strict=True) if kept]
        look, top, correct, lower, upper, selected = (a[keep] for a in (look, top, correct, lower, upper, selected))


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
        ((_, result),) = certify_sequentially(
            self.base_classifier, x.unsqueeze(0), torch.tensor([float(self.sigma)]), settings,
            device_settings=on_device, num_classes=self.num_classes, streams=as_streams(generator, 1),
            device=x.device,
        )  # fmt: skip
        return result
