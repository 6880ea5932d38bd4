"""Cohen et al.'s PREDICT and CERTIFY (2019, §3.2 and Appendix C), batched over inputs and noise.

Every input carries its own smoothing scale (σ for Gaussian noise, half-width λ for uniform
noise), so fixed-scale certification and DDRS's data-dependent certification (§3.4) share one
code path. Noise is drawn with :mod:`ddrs.core.noise` in pixel space.

Randomness: ``generator`` is one ``torch.Generator`` shared by the whole batch, or one stream per
input (:mod:`ddrs.core.streams`; a list of generators is one per input). With a stream per input, the
draws an input sees depend only on its own stream, never on which other inputs share the batch,
so batched and one-at-a-time runs agree exactly (what resumable certification relies on).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor, nn

from ddrs.core.binomial import clopper_pearson_lower
from ddrs.core.certificate import ABSTAIN
from ddrs.core.device import BaseClassifier, autocast, copy_to
from ddrs.core.noise import SmoothingNoise, add_noise, get_noise
from ddrs.core.settings import CertifySettings, resolve_memory_format, validate_certify_args
from ddrs.core.streams import Generators, as_streams


class CertifyResult(NamedTuple):
    """CERTIFY's output for a batch of inputs (CPU tensors of length B)."""

    #: c_A, or :data:`ABSTAIN` (-1) when p̲_A < ½
    predict: Tensor
    #: certified radius (ℓ2 for Gaussian, ℓ1 for uniform noise); 0 on abstain
    radius: Tensor
    #: one-sided (1 − α) Clopper–Pearson lower bound on p_A
    p_a_lower: Tensor


def _sigmas(sigma: Tensor | float, x: Tensor) -> Tensor:
    """One positive σ per input, as a ``(B,)`` tensor on ``x``'s device."""
    sigmas = torch.as_tensor(sigma, dtype=x.dtype).to(x.device, non_blocking=True)
    if sigmas.ndim == 0:
        sigmas = sigmas.expand(x.shape[0])
    if sigmas.shape != x.shape[:1]:
        raise ValueError(f"sigma has shape {tuple(sigmas.shape)}, expected ({x.shape[0]},)")
    bad = ~(sigmas.detach().cpu() > 0)
    if bad.any():
        raise ValueError(f"sigma must be positive, got {sigmas.cpu()[bad][0].item()}")
    return sigmas


def _schedule(nums: Sequence[int], batch_size: int) -> list[list[tuple[int, int]]]:
    """Group ``nums[i]`` draws of each input ``i`` into forward passes of at most ``batch_size``.

    Each input's draws come in blocks of ``batch_size`` plus one remainder block; a block
    always lands whole in one forward pass, so an input's noise is drawn in the same sizes
    however many inputs share the call. Full blocks fill a pass alone; remainder blocks of
    several inputs are packed together in input order, a pass closing when the next block does
    not fit, so small counts (e.g. n0) still fill the device. Returns a list of passes, each a
    list of ``(input, draws)`` blocks.
    """
    passes = [[(i, batch_size)] for i, num in enumerate(nums) for _ in range(num // batch_size)]
    packed, room = [], batch_size
    for i, num in enumerate(nums):
        rest = num % batch_size
        if not rest:
            continue
        if rest > room:
            passes.append(packed)
            packed, room = [], batch_size
        packed.append((i, rest))
        room -= rest
    if packed:
        passes.append(packed)
    return passes


@dataclass(frozen=True)
class NoiseDraws:
    """How one call's noisy copies are drawn and classified (SampleUnderNoise's knobs, Cohen et al. 2019,
    Appendix C): the smoothing ``noise``, its source ``generator`` (one shared, or one stream per input),
    ``batch_size`` copies per forward pass, the pass's ``precision`` and ``channels_last`` layout of the
    noisy image batches (same values, same draws), and the ``num_classes`` the base classifier must score
    (None: unchecked). :meth:`counts` and
    :meth:`predictions` draw with them; CERTIFY builds one from its settings (:meth:`certifying`).
    """

    noise: SmoothingNoise
    generator: Generators | None
    batch_size: int
    precision: str = "fp32"
    channels_last: bool = False
    num_classes: int | None = None

    @classmethod
    def certifying(
        cls, settings: CertifySettings, classifier: BaseClassifier, generator: Generators | None
    ) -> NoiseDraws:
        """CERTIFY's draws: the noise and precision of ``settings``, the forward batch and layout of the
        ``classifier``'s device settings (resolved for its device, :func:`ddrs.core.device.prepare_certification`)
        and the classes it scores."""
        noise, on_device = get_noise(settings.noise), classifier.device_settings
        return cls(
            noise, generator, on_device.batch_size, settings.precision, on_device.channels_last, classifier.num_classes
        )

    def counts(self, model: nn.Module, x: Tensor, sigma: Tensor | float, num: int | Sequence[int]) -> Tensor:
        """SampleUnderNoise for a batch: class counts ``(B, C)`` of ``num`` (or ``num[b]``) noisy copies
        ``x_b + σ_b · ε̂`` of every input, all on ``x``'s device; the only host synchronisation is the
        caller's read of the result. ``model`` must be on ``x``'s device and in eval mode. Counting uses
        ``index_add_`` into one ``(B·C,)`` vector (row ``b`` offset by ``b·C``): unlike
        ``torch.bincount``, it does not synchronise with the host on CUDA to size its output."""
        counts = None
        ones = torch.ones(self.batch_size, dtype=torch.long, device=x.device)
        for rows, classes, num_outputs in _noisy_argmax(model, x, sigma, num, self):
            if counts is None:
                num_classes = num_outputs
                counts = torch.zeros(x.shape[0] * num_classes, dtype=torch.long, device=x.device)
            counts.index_add_(0, classes + rows * num_classes, ones[: len(classes)])
        return counts.view(x.shape[0], num_classes)

    def predictions(self, model: nn.Module, x: Tensor, sigma: Tensor | float, num: int | Sequence[int]) -> Tensor:
        """The draws of :meth:`counts` one by one: the base classifier's class on each noisy copy,
        ``(Σ num,)``, input 0's draws in the order drawn, then input 1's, and so on (same draws, same
        classes as the counts). What sequential certification checks at every draw
        (:func:`ddrs.core.sequential.miss_prefixes`)."""
        rows, classes = [], []
        for pass_rows, pass_classes, _ in _noisy_argmax(model, x, sigma, num, self):
            rows.append(torch.full_like(pass_classes, pass_rows) if isinstance(pass_rows, int) else pass_rows)
            classes.append(pass_classes)
        # an input's blocks come in draw order (:func:`_schedule`), so a stable sort by input keeps it
        return torch.cat(classes)[torch.sort(torch.cat(rows), stable=True).indices]


def sample_counts(
    model: nn.Module,
    x: Tensor,
    sigma: Tensor | float,
    num: int | Sequence[int],
    noise: str | SmoothingNoise,
    batch_size: int,
    generator: Generators | None,
    precision: str = "fp32",
    *,
    channels_last: bool = False,
) -> Tensor:
    """SampleUnderNoise (Cohen et al. 2019, Appendix C): :meth:`NoiseDraws.counts` with the draws' knobs
    as arguments (Algorithm 1's c_A, :mod:`ddrs.training.correctness`): class counts ``(B, C)``."""
    draws = NoiseDraws(_noise(noise), generator, batch_size, precision, channels_last)
    return draws.counts(model, x, sigma, num)


def sample_predictions(
    model: nn.Module,
    x: Tensor,
    sigma: Tensor | float,
    num: int | Sequence[int],
    noise: str | SmoothingNoise,
    batch_size: int,
    generator: Generators | None,
    precision: str = "fp32",
    *,
    num_classes: int,
    channels_last: bool = False,
) -> Tensor:
    """:meth:`NoiseDraws.predictions` with the draws' knobs as arguments: the class of every draw,
    ``(Σ num,)``. Raises if the model has not ``num_classes`` outputs."""
    draws = NoiseDraws(_noise(noise), generator, batch_size, precision, channels_last, num_classes)
    return draws.predictions(model, x, sigma, num)


def _noise(noise: str | SmoothingNoise) -> SmoothingNoise:
    return get_noise(noise) if isinstance(noise, str) else noise


def _noisy_argmax(
    model: nn.Module, x: Tensor, sigma: Tensor | float, num: int | Sequence[int], draws: NoiseDraws
) -> Iterator[tuple[int | Tensor, Tensor, int]]:
    """Per forward pass of :func:`_schedule`: the input of its rows (one index when the pass holds one
    input's block, else a ``(rows,)`` tensor), the base classifier's argmax over each row's noisy
    copy, and the model's output count (checked against ``draws.num_classes`` when given)."""
    nums = [num] * x.shape[0] if isinstance(num, int) else [int(count) for count in num]
    if any(count <= 0 for count in nums) or len(nums) != x.shape[0]:
        raise ValueError(f"num must be positive, one count or one per input, got {num}")
    if draws.batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {draws.batch_size}")
    sigmas = _sigmas(sigma, x)
    if x.shape[0] == 0:
        raise ValueError("x holds no inputs (batch dimension 0)")
    streams = as_streams(draws.generator, x.shape[0])
    passes = _schedule(nums, draws.batch_size)
    mixed_rows = _mixed_pass_rows(passes, x.device)
    with torch.inference_mode(), autocast(x.device, draws.precision):
        for blocks in passes:
            eps = streams.draw(draws.noise, blocks, x)
            rows = blocks[0][0] if len(blocks) == 1 else next(mixed_rows)
            batch = add_noise(x[rows], sigmas[rows], eps, in_place=True)
            if draws.channels_last and batch.ndim == 4:
                batch = batch.contiguous(memory_format=torch.channels_last)
            logits = model(batch)
            if draws.num_classes is not None and logits.shape[1] != draws.num_classes:
                raise ValueError(f"model has {logits.shape[1]} outputs, expected num_classes={draws.num_classes}")
            yield rows, logits.argmax(dim=1), logits.shape[1]


def _mixed_pass_rows(passes: list[list[tuple[int, int]]], device: torch.device):
    """For each pass holding several inputs' blocks, the input index of every row, on ``device``.

    Built on the host and sent in one non-blocking copy, so the loop never waits for a transfer.
    """
    mixed = [blocks for blocks in passes if len(blocks) > 1]
    if not mixed:
        return iter(())
    inputs = torch.tensor([i for blocks in mixed for i, _ in blocks])
    sizes = torch.tensor([size for blocks in mixed for _, size in blocks])
    rows = copy_to(torch.repeat_interleave(inputs, sizes), device)
    return iter(rows.split([sum(size for _, size in blocks) for blocks in mixed]))


def lower_confidence_bound(count_a: Tensor, n: int, alpha: float) -> Tensor:
    """LowerConfBound: one-sided (1 − α) Clopper–Pearson bound on p_A (Cohen et al., App. C).

    The α quantile of Beta(k, n − k + 1), and 0 at k = 0 (:func:`ddrs.core.binomial.clopper_pearson_lower`).
    """
    return torch.from_numpy(clopper_pearson_lower(count_a.cpu().double().numpy(), n, alpha))


def certify_batch(
    classifier: BaseClassifier,
    x: Tensor,
    sigma: Tensor | float,
    settings: CertifySettings,
    *,
    generator: Generators | None,
) -> CertifyResult:
    """CERTIFY (Cohen et al. 2019, §3.2.2) for a batch of inputs, each with its own scale.

    c_A is the top class of ``n0`` selection draws; p̲_A comes from ``n`` fresh estimation
    draws; abstain when p̲_A < ½, else certify ``noise.radius(p̲_A, σ)`` (Theorem 1 with
    p̄_B = 1 − p̲_A; 2λ(p̲_A − ½) in ℓ1 for uniform noise). With probability ≥ 1 − α per input,
    a returned class is the smoothed prediction throughout the certified ball (Proposition 2).
    ``settings`` (:class:`~ddrs.core.settings.CertifySettings`, checked when built) give the noise,
    ``n0``, ``n``, ``alpha`` and ``precision``; ``classifier``, prepared for ``x``'s device
    (:func:`ddrs.core.device.prepare_certification`), the model as it is used, the forward batch and
    the inputs' memory format.
    """
    draws = NoiseDraws.certifying(settings, classifier, generator)
    sigmas, model = _sigmas(sigma, x), classifier.model
    top = draws.counts(model, x, sigmas, settings.n0).argmax(dim=1)
    count_a = draws.counts(model, x, sigmas, settings.n).gather(1, top[:, None]).squeeze(1)
    return _certificate(top, lower_confidence_bound(count_a, settings.n, settings.alpha), draws.noise, sigmas)


def _certificate(top: Tensor, p_a_lower: Tensor, noise: SmoothingNoise, sigmas: Tensor) -> CertifyResult:
    """c_A = ``top`` certified within ``noise.radius(p̲_A, σ)`` where p̲_A ≥ ½, else an abstention
    (Cohen et al. 2019, §3.2.2: Theorem 1 with p̄_B = 1 − p̲_A)."""
    certified = p_a_lower >= 0.5
    radius = torch.where(certified, noise.radius(p_a_lower, sigmas.double().cpu()), 0.0)
    predict = torch.where(certified, top.cpu(), ABSTAIN)
    return CertifyResult(predict=predict, radius=radius, p_a_lower=p_a_lower)


def predict_batch(
    model: nn.Module,
    x: Tensor,
    sigma: Tensor | float,
    *,
    noise: str | SmoothingNoise,
    n: int,
    alpha: float,
    batch_size: int,
    generator: Generators | None,
    precision: str = "fp32",
) -> Tensor:
    """PREDICT (Cohen et al. 2019, §3.2.1) for a batch: top class, or ABSTAIN when the two-sided
    binomial test of count₁ vs count₂ against p = ½ has p-value > α (Proposition 1)."""
    from scipy.stats import binomtest  # here, not at the top: scipy.stats takes a second to import

    validate_certify_args(n0=1, n=n, alpha=alpha, batch_size=batch_size)
    counts = sample_counts(model, x, sigma, n, noise, batch_size, generator, precision).cpu()
    top2 = counts.topk(2, dim=1)
    predictions = []
    for (count1, count2), (first, _) in zip(top2.values.tolist(), top2.indices.tolist(), strict=True):
        p_value = binomtest(count1, count1 + count2, p=0.5).pvalue
        predictions.append(ABSTAIN if p_value > alpha else first)
    return torch.tensor(predictions, dtype=torch.long)


class Smooth:
    """The smoothed classifier g(x) = argmax_c P(f(x + ε) = c) with locuslab/smoothing's interface (``core.Smooth``).

    :param base_classifier: f, mapping a batch ``(B, *input_shape)`` to ``(B, num_classes)`` scores;
        it is put in eval mode by :meth:`predict` and :meth:`certify`.
    :param num_classes: the number of classes f scores.
    :param sigma: the noise scale: σ of N(0, σ²I), or the half-width λ of U[−λ, λ]^d for
        ``noise="uniform"``.
    :param noise: ``"gaussian"`` (ℓ2 certificates, Cohen et al. 2019) or ``"uniform"`` (ℓ1, DDRS §4.4).
    """

    ABSTAIN = ABSTAIN

    def __init__(self, base_classifier: nn.Module, num_classes: int, sigma: float, noise: str = "gaussian"):
        if sigma <= 0:
            raise ValueError(f"sigma must be positive, got {sigma}")
        self.base_classifier = base_classifier
        self.num_classes = num_classes
        self.sigma = sigma
        self.noise = get_noise(noise)

    def certify(
        self, x: Tensor, n0: int, n: int, alpha: float, batch_size: int, *, generator: Generators | None = None
    ) -> tuple[int, float]:
        """CERTIFY (Cohen et al. 2019, §3.2.2): certify that g's prediction is constant in a ball around ``x``.

        With probability at least 1 − ``alpha`` over the noise drawn here, the class returned is
        g(x) and g predicts it everywhere within the returned radius of ``x`` — an ℓ2 ball for
        Gaussian noise, ℓ1 for uniform (Proposition 2).

        :param x: one input without batch dimension, on the base classifier's device.
        :param n0: the number of Monte Carlo samples used to select the top class c_A.
        :param n: the number of Monte Carlo samples used to estimate a lower bound on p_A.
        :param alpha: the failure probability.
        :param batch_size: the number of noisy copies per forward pass of the base classifier.
        :param generator: the source of the noise (default: torch's global generator, as in Cohen's code).
            One generator draws torch's ``randn`` as it is, whose CPU tail stops at radius 5.77 per pair
            of coordinates; ``GeneratorStreams([generator])`` (:mod:`ddrs.core.streams`), what the
            pipeline certifies with, draws the tail exactly (:mod:`ddrs.core.gaussian_tail`).
        :return: ``(predicted class, certified radius)``; on abstention ``(Smooth.ABSTAIN, 0.0)``.
        """
        self.base_classifier.eval()
        validate_certify_args(n0=n0, n=n, alpha=alpha, batch_size=batch_size)
        x = x.unsqueeze(0)
        channels_last = resolve_memory_format("auto", x.device.type) == "channels_last"
        draws = NoiseDraws(self.noise, generator, batch_size, channels_last=channels_last, num_classes=self.num_classes)
        sigma = _sigmas(self.sigma, x)
        c_a = draws.counts(self.base_classifier, x, sigma, n0).argmax(dim=1)  # selection: _sample_noise(x, n0)
        count_a = draws.counts(self.base_classifier, x, sigma, n).gather(1, c_a[:, None]).squeeze(1)  # estimation
        result = _certificate(c_a, lower_confidence_bound(count_a, n, alpha), self.noise, sigma)
        return int(result.predict[0]), float(result.radius[0])

    def predict(
        self, x: Tensor, n: int, alpha: float, batch_size: int, *, generator: torch.Generator | None = None
    ) -> int:
        """PREDICT (Cohen et al. 2019, §3.2.1): g's prediction at ``x``, or an abstention.

        With probability at least 1 − ``alpha`` over the noise drawn here, the class returned is
        g(x) (Proposition 1): the two top counts are compared by a two-sided binomial test against
        p = ½ (Hung & Fithian 2019), and PREDICT abstains when its p-value exceeds ``alpha``.

        :param x: one input without batch dimension, on the base classifier's device.
        :param n: the number of Monte Carlo samples.
        :param alpha: the failure probability.
        :param batch_size: the number of noisy copies per forward pass of the base classifier.
        :param generator: the source of the noise (default: torch's global generator, as in Cohen's code).
        :return: the predicted class, or ``Smooth.ABSTAIN``.
        """
        self.base_classifier.eval()
        return int(
            predict_batch(
                self.base_classifier,
                x.unsqueeze(0),
                self.sigma,
                noise=self.noise,
                n=n,
                alpha=alpha,
                batch_size=batch_size,
                generator=generator,
            )[0]
        )
