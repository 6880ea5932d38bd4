"""Settings of the test-time runs — CERTIFY over a test set, Algorithm 1, the grid search — as plain values.

Torch-free, so the command line builds its parser (choices, defaults) without loading torch. Each
dataclass checks itself when built and names the first bad value; the loops of
:mod:`ddrs.jobs.certification` and :mod:`ddrs.jobs.sigma_search` take one of them instead of a long keyword list.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

#: Precisions of the base classifier's forward pass (``ddrs.core.device.autocast`` maps them to dtypes).
PRECISIONS = ("fp32", "bf16", "fp16")

#: Memory formats of the base classifier and its noisy inputs in CERTIFY: ``auto`` is
#: ``channels_last`` on CUDA (faster convolutions on tensor cores) and ``contiguous`` elsewhere.
MEMORY_FORMATS = ("auto", "contiguous", "channels_last")

#: CERTIFY's forward batch on a device where none is given and no memory probe applies (Cohen et al.'s 400).
DEFAULT_CERTIFY_BATCH = 400

#: Algorithm 1's objectives (:func:`ddrs.core.sigma.radius_objective`): ``released`` = the authors'
#: ``OptimzeSigma`` (top two entries of ψ at every step), ``fixed_class`` = Eq. 2/3 with c_A fixed.
SIGMA_OBJECTIVES = ("released", "fixed_class")

#: Each objective's clamp of E_A, E_B to [clamp, 1 − clamp] before Φ⁻¹. ``released``: the
#: authors' 0.02, so a saturated input's σ rises by lr·Φ⁻¹(0.98) ≈ 2.054·lr per step.
#: ``fixed_class``: 1e-6 keeps Φ⁻¹ finite (|Φ⁻¹| ≤ 4.75) and representable in float32 (spacing
#: 6e-8 below 1) while far beyond what a certificate resolves (n = 100,000 bounds p_A no tighter
#: than ≈ 1 − 7e-5); a saturated input's σ then rises by ≈ 4.75·lr per step.
DEFAULT_CLAMP = {"released": 0.02, "fixed_class": 1e-6}

#: How a uniform-noise scale is read (DDRS Table 4): ``yang_std`` = Yang et al.'s standard
#: deviation σ (rs4a's ``Uniform(sigma)``), half-width λ = σ√3; ``half_width`` = λ itself.
UNIFORM_CONVENTIONS = ("yang_std", "half_width")


def uniform_half_width(sigma: float, convention: str) -> float:
    """The half-width λ of U[−λ, λ]^d that a config's ``sigma`` names under ``convention``
    (:data:`UNIFORM_CONVENTIONS`)."""
    check_choice("uniform convention", convention, UNIFORM_CONVENTIONS)
    return float(sigma) * math.sqrt(3.0) if convention == "yang_std" else float(sigma)


def noise_sigma(noise: str, sigma: float, convention: str) -> float:
    """The σ the library draws with (:mod:`ddrs.core.noise`) for a config's σ of ``noise``: σ itself
    for Gaussian noise; for uniform noise the half-width λ (:func:`uniform_half_width`). The one
    place a config's σ becomes λ, for the workflow (:meth:`ddrs.pipeline.grid.RunGrid.noise_sigma`)
    and for ``ddrs train`` (:meth:`ddrs.training.TrainConfig.initial_sigma`)."""
    return uniform_half_width(sigma, convention) if noise == "uniform" else float(sigma)


#: Appendix B: forward + backward over n samples for K steps = 2nK = 200 evaluations (K=100, n=1).
GRID_BUDGET = 200

#: Test inputs a σ search solves together when none is given (speed only: rows never depend on it).
SIGMA_BATCH = 32


def check_choice(name: str, value: str, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``, else a ``ValueError`` listing them."""
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; choose one of {sorted(choices)}")
    return value


def check_precision(precision: str) -> str:
    """``precision`` if it is one of :data:`PRECISIONS`."""
    return check_choice("precision", precision, PRECISIONS)


def resolve_clamp(objective: str, clamp: float | None) -> float:
    """The clamp of ``objective``: ``clamp`` when given (checked to lie in (0, ½)), else its default."""
    check_choice("objective", objective, SIGMA_OBJECTIVES)
    if clamp is None:
        return DEFAULT_CLAMP[objective]
    if not 0 < clamp < 0.5:
        raise ValueError(f"clamp must lie in (0, 0.5), got {clamp}")
    return float(clamp)


def check_steps(steps: Sequence[int]) -> list[int]:
    """Validate the snapshot steps K: non-negative integers, returned sorted without repeats."""
    steps = list(steps)
    if not steps:
        raise ValueError("steps must name at least one K")
    for k in steps:
        if int(k) != k or k < 0:
            raise ValueError(f"every K must be an integer >= 0, got {k}")
    return sorted({int(k) for k in steps})


def resolve_memory_format(memory_format: str, device_type: str) -> str:
    """``contiguous`` or ``channels_last``: ``memory_format``, or for ``auto`` the one suiting ``device_type``."""
    check_choice("memory format", memory_format, MEMORY_FORMATS)
    if memory_format == "auto":
        return "channels_last" if device_type == "cuda" else "contiguous"
    return memory_format


def validate_certify_args(*, n0: int, n: int, alpha: float, batch_size: int | None) -> None:
    """Raise ``ValueError`` naming the first out-of-range CERTIFY parameter."""
    if n0 <= 0:
        raise ValueError(f"n0 must be positive, got {n0}")
    if n <= 0:
        raise ValueError(f"n must be positive, got {n}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if batch_size is not None and batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")


def settings_from(cls: type, source: Mapping[str, Any], **given: Any):
    """A settings object of class ``cls`` from the entries of ``source`` named as its fields (a
    command's arguments, a training config), ``given`` over them for the fields named otherwise."""
    names = {f.name for f in fields(cls)}
    return cls(**{**{key: value for key, value in source.items() if key in names}, **given})


def _positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be > 0, got {value}")


def _at_least_one(**values: int) -> None:
    for name, value in values.items():
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value}")


#: How CERTIFY spends its estimation draws: ``fixed`` = Cohen et al.'s n for every input;
#: ``sequential`` = in looks until the run's radii are decided (:mod:`ddrs.core.sequential`), at most n.
CERTIFY_MODES = ("fixed", "sequential")

#: Sequential certification's tests: confidence sequences and the grid test
#: (:data:`ddrs.core.sequential.CONFIDENCE_SEQUENCES`).
SEQUENCES = ("betting", "union_cp", "betting_cp", "grid")

#: Where a sequential test's bounds are checked: ``draw`` at every estimation draw, ``look`` at the
#: looks alone (what the looks' overshoot costs; :func:`ddrs.core.sequential.decide`).
CHECKS = ("draw", "look")

#: The sequences whose bounds hold at the looks only, not at every draw (union_cp spends α per look).
LOOK_ONLY_SEQUENCES = ("union_cp",)


@dataclass(frozen=True, kw_only=True)
class SequentialSettings:
    """Sequential certification (:mod:`ddrs.core.sequential`): what decides when an input stops.

    ``sequence`` (:data:`SEQUENCES`) decides the radii at every look at once (``grid``: one test per
    radius, closed testing; the others: a confidence sequence for p_A); the looks fall at
    ``first_look`` estimation draws and then every ×``growth`` (Voráček 2024's β = 1.1), up to
    CERTIFY's n, the cap. ``checks`` (:data:`CHECKS`) says whether the bounds are checked at every
    draw of a look's block or at the look alone (:data:`LOOK_ONLY_SEQUENCES` need ``look``). An input
    stops once every radius of ``radii`` (the run's grid, in the noise's norm; radius 0 always) is
    decided. ``futility`` (β′; 0: off) gives a radius up once the remaining draws, at the rate of
    p_A's Clopper–Pearson upper bound at level β′, could not reach it (:func:`ddrs.core.sequential.
    credited_correct`): it costs power, never soundness. ``acr_fraction`` spends draws for ACR: an input goes
    on while its radius could still grow by more than that fraction of its scale (None: off).
    ``pool`` inputs are in flight at once (default: enough to fill a forward pass with first
    looks); it changes speed, not rows.
    """

    sequence: str = "grid"
    radii: tuple[float, ...] = (0.0,)
    first_look: int = 32
    growth: float = 1.1
    checks: str = "draw"
    futility: float = 0.001
    acr_fraction: float | None = None
    pool: int | None = None

    def __post_init__(self) -> None:
        check_choice("confidence sequence", self.sequence, SEQUENCES)
        check_choice("sequential checks", self.checks, CHECKS)
        if self.checks == "draw" and self.sequence in LOOK_ONLY_SEQUENCES:
            raise ValueError(
                f"{self.sequence} holds at its looks only: set checks to 'look' (the draw checks need one of "
                f"{sorted(set(SEQUENCES) - set(LOOK_ONLY_SEQUENCES))})"
            )
        if not (isinstance(self.futility, int | float) and 0 <= self.futility < 0.5):
            raise ValueError(
                f"futility must lie in [0, 0.5) (β′ of the Clopper–Pearson upper bound; 0: off), got {self.futility}"
            )
        object.__setattr__(self, "radii", tuple(sorted({0.0, *(float(r) for r in self.radii)})))
        if any(not (math.isfinite(r) and r >= 0) for r in self.radii):
            raise ValueError(f"every radius must be finite and >= 0, got {list(self.radii)}")
        _at_least_one(first_look=self.first_look)
        if not (math.isfinite(self.growth) and self.growth > 1):
            raise ValueError(f"growth must be > 1, got {self.growth}")
        if self.acr_fraction is not None:
            _positive("acr_fraction", self.acr_fraction)
        if self.pool is not None:
            _at_least_one(pool=self.pool)


@dataclass(frozen=True, kw_only=True)
class CertifySettings:
    """CERTIFY's statistics for every input of a run (Cohen et al. 2019, §3.2.2; defaults are theirs):
    what decides a log's rows. How fast the machine computes them is :class:`DeviceSettings`.

    ``noise`` is the smoothing distribution's name (``gaussian``: σ, ℓ2; ``uniform``: half-width
    λ, ℓ1). ``n0`` selection and ``n`` estimation draws, failure probability ``alpha``. Input
    ``idx``'s draws are seeded from ``(seed, idx)``. ``precision`` fixes one base classifier for
    selection and estimation alike. ``mode`` (:data:`CERTIFY_MODES`): ``sequential`` draws in looks
    until ``sequential``'s stopping rule holds, with ``n`` the cap (:mod:`ddrs.core.sequential`).
    """

    noise: str = "gaussian"
    n0: int = 100
    n: int = 100_000
    alpha: float = 0.001
    seed: int = 0
    precision: str = "fp32"
    mode: str = "fixed"
    sequential: SequentialSettings = field(default_factory=SequentialSettings)

    def __post_init__(self) -> None:
        if isinstance(self.sequential, Mapping):  # a job document's section (``dataclasses.asdict``)
            object.__setattr__(self, "sequential", SequentialSettings(**self.sequential))
        validate_certify_args(n0=self.n0, n=self.n, alpha=self.alpha, batch_size=None)
        check_choice("certify mode", self.mode, CERTIFY_MODES)
        check_precision(self.precision)

    def resume_settings(self) -> dict[str, object]:
        """The settings that decide a log's rows: a partial log resumes only under the same ones,
        and the workflow re-runs a job when they change. In fixed mode the sequential stopping rule
        decides nothing and is left out; its ``pool`` changes speed only (:func:`certify_speed`)."""
        settings = asdict(self)
        if self.mode == "fixed":  # as before the mode existed, so fixed-n partial logs still resume
            del settings["mode"], settings["sequential"]
        else:
            del settings["sequential"]["pool"]
        return settings


@dataclass(frozen=True, kw_only=True)
class DeviceSettings:
    """How fast CERTIFY runs on the machine, never what it writes (:class:`CertifySettings` decides the rows).

    ``batch_size`` noisy copies per forward pass; None chooses it from the device's free memory on
    CUDA (:func:`ddrs.core.device.auto_batch_size`) and :data:`DEFAULT_CERTIFY_BATCH` elsewhere.
    ``inputs_per_call`` inputs share a CERTIFY call (default: enough to fill one forward pass with
    selection draws). ``memory_format`` (:data:`MEMORY_FORMATS`) lays out the model and its noisy
    inputs; ``compile`` runs the base classifier through ``torch.compile``. A job resolves them once
    for its device (:func:`ddrs.core.device.prepare_certification`: the batch and the memory format
    become concrete, the model is laid out and compiled), and the layers below take them resolved.
    """

    batch_size: int | None = DEFAULT_CERTIFY_BATCH
    inputs_per_call: int | None = None
    memory_format: str = "auto"
    compile: bool = False

    def __post_init__(self) -> None:
        if self.batch_size is not None and self.batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {self.batch_size}")
        if self.inputs_per_call is not None and self.inputs_per_call <= 0:
            raise ValueError(f"inputs_per_call must be positive, got {self.inputs_per_call}")
        check_choice("memory format", self.memory_format, MEMORY_FORMATS)

    @property
    def resolved(self) -> bool:
        """Whether the batch and the memory format are concrete (what the layers below a job's entry take)."""
        return self.batch_size is not None and self.memory_format != "auto"

    @property
    def channels_last(self) -> bool:
        """Whether noisy inputs are laid out channels-last (the memory format resolved)."""
        if not self.resolved:
            raise ValueError(f"{self} is not resolved for a device; see ddrs.core.device.prepare_certification")
        return self.memory_format == "channels_last"


def certify_speed(settings: CertifySettings, device: DeviceSettings) -> dict[str, object]:
    """What changes only how fast CERTIFY runs, as ``ddrs job --speed`` takes it: ``device``'s fields
    and the sequential ``pool`` of ``settings`` (the other half of :meth:`CertifySettings.resume_settings`)."""
    return {**asdict(device), "pool": settings.sequential.pool}


def certify_from_parts(rows: Mapping[str, Any], speed: Mapping[str, Any]) -> tuple[CertifySettings, DeviceSettings]:
    """The statistics whose :meth:`~CertifySettings.resume_settings` are ``rows`` and the device
    settings, with the sequential pool, of ``speed`` (:func:`certify_speed`)."""
    speed = dict(speed)
    pool = {"pool": speed.pop("pool")} if "pool" in speed else {}
    settings = CertifySettings(**{**rows, "sequential": {**rows.get("sequential", {}), **pool}})
    return settings, DeviceSettings(**speed)


@dataclass(frozen=True, kw_only=True)
class SigmaSettings:
    """What every σ-log run shares (DDRS §3.4): c_A from σ₀-smoothing, the objective and the noise draws.

    ``sigma0`` is σ₀ (λ₀ for uniform noise); c_A, the σ₀-smoothed prediction written to the log's
    ``c_a`` column, is counted over ``n0`` draws. ``n`` draws of ε̂ estimate ψ per step (Algorithm 1)
    or per grid point (Appendix B). ``objective`` and ``clamp`` choose E_A, E_B
    (:func:`ddrs.core.sigma.radius_objective`); ``clamp=None`` becomes the objective's default.
    Input ``idx``'s draws are seeded from ``(seed, idx)``. How many inputs are solved together changes
    speed only and is the job's (``batch`` of :func:`ddrs.jobs.sigma_search.sigma_log_dataset`).
    """

    sigma0: float
    noise: str = "gaussian"
    n: int = 1
    objective: str = "released"
    clamp: float | None = None
    n0: int = 100
    seed: int = 0
    precision: str = "fp32"

    def __post_init__(self) -> None:
        _positive("sigma0", self.sigma0)
        _at_least_one(n=self.n, n0=self.n0)
        object.__setattr__(self, "clamp", resolve_clamp(self.objective, self.clamp))
        check_precision(self.precision)

    def resume_settings(self) -> dict[str, object]:
        """Every setting: a partial σ log resumes only under the same ones, and the workflow re-runs
        a job when they change."""
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class Algorithm1Settings(SigmaSettings):
    """Algorithm 1 (DDRS §3.4): ``lr``-sized ascent steps from σ₀, σ recorded after every K in ``steps``.

    After each step σ is projected onto [``min_sigma``, ``max_sigma``] (no upper bound when None).
    """

    steps: tuple[int, ...] = field(default=(100,))
    lr: float = 1e-4
    min_sigma: float = 1e-3
    max_sigma: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "steps", tuple(check_steps(self.steps)))
        _positive("lr", self.lr)
        _positive("min_sigma", self.min_sigma)
        if self.max_sigma is not None and not self.max_sigma > self.min_sigma:
            raise ValueError(f"max_sigma must exceed min_sigma={self.min_sigma}, got {self.max_sigma}")
        if not self.min_sigma <= self.sigma0 <= (self.max_sigma or math.inf):
            raise ValueError(
                f"sigma0={self.sigma0} lies outside [min_sigma, max_sigma] = [{self.min_sigma}, {self.max_sigma}]: "
                "the first step's projection would move every σ to that bound, whatever its gradient"
            )


@dataclass(frozen=True, kw_only=True)
class GridSearchSettings(SigmaSettings):
    """The Appendix-B baseline (Eq. 5): the scale of ``grid`` with the largest n-sample objective."""

    grid: tuple[float, ...]

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "grid", tuple(float(sigma) for sigma in self.grid))
        if not self.grid:
            raise ValueError("grid must be a non-empty list of scales")
        for sigma in self.grid:
            _positive("every grid scale", sigma)
