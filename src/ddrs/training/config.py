"""Every training hyper-parameter in one dataclass, with defaults from the papers.

Optimiser defaults are Cohen et al.'s ``code/train.py`` (also SmoothAdv's ``train_pgd.py``):
SGD, lr 0.1, momentum 0.9, weight decay 1e-4, lr × 0.1 every 30 epochs, batch 256, 90 epochs.
Jeong & Shin's supplement (A.1) trains CIFAR-10 for 150 epochs with decays at 50 and 100; MACER
uses lr 0.01 with decays at 200 and 400 (``lr_milestones``). DDRS §4 trains CIFAR-10 for 200 epochs,
the first 50 with fixed σ (``warmup_epochs``) then Algorithm 2 with K = 1, n = 1, α = 1e-4.

``lr_drop`` says in which epoch a decay takes effect (:data:`LR_DROP_DELAYS`): ``paper``, at its
milestone, as the papers state and as Cohen et al.'s and Salman et al.'s ``scheduler.step(epoch)``
before epoch ``epoch`` and Sun et al.'s and the DDRS scripts' ``scheduler.step()`` after it do;
``late``, one epoch after it, as Jeong & Shin's ``scheduler.step(epoch)`` after epoch ``epoch``
(``code/train_consistency.py`` line 105): their decays at 50 and 100 take effect in the 0-based
epochs 51 and 101; ``early``, one epoch before it, as MACER's ``main.py`` calls
``scheduler.step()`` at the top of each epoch (line 158), which since torch 1.1 "will skip the
first value of the learning rate schedule" (torch's documentation; MACER's ``requirements.txt``
asks for torch ≥ 1.2): its decays at 200 and 400 take effect in 199 and 399.

``noise_batching`` says what one SGD step sees for a method with m noise draws per input:
``whole`` = ``batch_size`` inputs, each with its m noisy copies (batch_size·m samples);
``split`` = what Salman et al.'s ``train_pgd.py``, Jeong & Shin's ``train_consistency.py`` and
Sun et al.'s code do: every loaded batch is split into m chunks of batch_size/m inputs with one
step each, so a step sees batch_size noisy samples and an epoch takes m times the steps. It
applies to the methods whose authors split (``Method.splits_batch``); MACER's code, for one,
keeps the whole batch.

``feed`` says how training batches reach the model: ``loader``, a DataLoader that reads and
augments one image at a time (torchvision's transforms, as the authors' code); ``device``, the
whole training split held on the training device, each epoch augmented there in one batched pass
and cut into batches without any per-step host work (:mod:`ddrs.training.device_feed`); ``auto``,
``device`` wherever the dataset allows it (every dataset but ImageNet). Both draw each input's
augmentation from ``(seed, epoch, idx)`` and from the same distribution, but not the same draws.

``init`` names a ddrs checkpoint to fine-tune from (DDRS §4.1–4.2: the DS² models of ImageNet,
and of SmoothAdv, start from the fixed-σ model).

YAML files use the field names as keys, plus one section per method named after it holding that
method's hyper-parameters (:mod:`ddrs.methods`); an unknown key is an error naming it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ddrs.core.seeds import TrainingStream, derived_seed
from ddrs.core.settings import (
    MEMORY_FORMATS,
    PRECISIONS,
    SIGMA_OBJECTIVES,
    UNIFORM_CONVENTIONS,
    Algorithm1Settings,
    noise_sigma,
    resolve_clamp,
)
from ddrs.data import get_info
from ddrs.methods import METHODS, TRAIN_MODES, get_method

C_A_RULES = ("clean", "smoothed")
#: what one SGD step sees: ``batch_size`` inputs with their m noisy copies each, or the authors'
#: split of every batch into m chunks (module docstring)
NOISE_BATCHINGS = ("whole", "split")
#: how batches reach the model (module docstring)
FEEDS = ("auto", "loader", "device")
#: the model's mode while Algorithm 2 optimises σ (``TrainConfig.sigma_model_mode``)
SIGMA_MODEL_MODES = ("eval", "train")
#: epochs a decay of the learning rate takes effect after its milestone, by ``lr_drop`` (module docstring)
LR_DROP_DELAYS = {"paper": 0, "late": 1, "early": -1}
#: the allowed values of the fields that name a choice
CHOICES = {
    "train_mode": TRAIN_MODES,
    "noise_batching": NOISE_BATCHINGS,
    "c_a": C_A_RULES,
    "sigma_model_mode": SIGMA_MODEL_MODES,
    "sigma_objective": SIGMA_OBJECTIVES,
    "uniform_convention": UNIFORM_CONVENTIONS,
    "precision": tuple(PRECISIONS),
    "memory_format": MEMORY_FORMATS,
    "feed": FEEDS,
    "lr_drop": tuple(LR_DROP_DELAYS),
}
#: the fields that change how fast a model trains, never what it learns: DataLoader workers (each
#: input's augmentation is seeded per (seed, epoch, idx)), page-locked copies and activation
#: recomputation (the same step, batch-norm included). The workflow hands them to ``ddrs train
#: --speed`` apart from the options it compares (docs/architecture.md, "What re-runs").
SPEED_FIELDS = frozenset({"num_workers", "pin_memory", "activation_checkpoints"})
#: the fields only Algorithm 2 reads (DDRS §3.6), so a fixed-σ run (``train_mode: fs``) ignores them;
#: the workflow leaves them out of a fixed-σ model's options (docs/architecture.md, "What re-runs")
ALGORITHM2_FIELDS = frozenset(
    ("warmup_epochs", "k", "n", "sigma_lr", "min_sigma")  # K steps of Algorithm 1 per batch, from epoch warmup_epochs
    + ("sigma_objective", "sigma_clamp", "c_a", "c_a_n0", "sigma_model_mode")  # how each step is taken
)
#: the numeric fields' bounds: (fields, the check, what it says)
BOUNDS = (
    (("epochs", "batch_size", "lr_step", "n", "c_a_n0", "eval_max"), lambda value: value >= 1, ">= 1"),
    (
        ("warmup_epochs", "k", "num_workers", "activation_checkpoints", "weight_decay", "momentum"),
        lambda value: value >= 0,
        ">= 0",
    ),
    (("lr", "sigma_lr", "lr_gamma"), lambda value: value > 0, "> 0"),
)


@dataclass
class TrainConfig:
    """One training run: data, model, method (§4.1–4.4), Algorithm 2 (§3.6) and optimiser."""

    dataset: str
    arch: str
    method: str
    sigma: float
    train_mode: str = "fs"
    epochs: int = 90
    # optimiser and schedule (Cohen et al.'s train.py)
    batch_size: int = 256
    lr: float = 0.1
    momentum: float = 0.9
    nesterov: bool = False
    weight_decay: float = 1e-4
    lr_step: int = 30
    lr_gamma: float = 0.1
    #: epochs at which the lr is multiplied by ``lr_gamma``; replaces ``lr_step`` when non-empty
    lr_milestones: list[int] = field(default_factory=list)
    #: the epoch a decay takes effect in: ``paper`` = at its milestone, ``late`` = one epoch after
    #: it (Jeong & Shin's code), ``early`` = one before it (MACER's) (:data:`LR_DROP_DELAYS`, module docstring)
    lr_drop: str = "paper"
    #: ``whole`` or ``split`` (:data:`NOISE_BATCHINGS`, module docstring)
    noise_batching: str = "whole"
    #: a ddrs checkpoint (same arch and dataset) whose weights training starts from; ``None`` = a fresh model
    init: str | None = None
    # Algorithm 2 (DDRS §3.6): K = 0 during the warm-up epochs, then ``k`` steps of Algorithm 1
    warmup_epochs: int = 0
    k: int = 1
    n: int = 1
    sigma_lr: float = 1e-4
    min_sigma: float = 1e-3
    #: Algorithm 1's objective (:data:`ddrs.core.settings.SIGMA_OBJECTIVES`): ``released`` = the authors'
    #: code (top two classes of ψ each step, clamp 0.02), ``fixed_class`` = Eq. 2/3 with c_A fixed
    sigma_objective: str = "released"
    #: E_A, E_B clamp before Φ⁻¹; ``None`` = the objective's own (0.02 / 1e-6)
    sigma_clamp: float | None = None
    #: c_A for training-time Algorithm 1 with ``fixed_class``: ``clean`` = argmax of f on x (the σ₀ → 0 limit, §3.4),
    #: ``smoothed`` = the smoothed prediction at the stored σᵢ from ``c_a_n0`` draws
    c_a: str = "clean"
    c_a_n0: int = 16
    #: the model's mode during Algorithm 2's σ steps: ``eval`` = batch-norm on its running statistics,
    #: the classifier that is certified; ``train`` = each forward normalised by its noisy batch and
    #: updating the running statistics, as the DDRS training scripts' ``get_sigma`` runs
    sigma_model_mode: str = "eval"
    #: the method's hyper-parameters: an instance of its registry entry's dataclass (or a mapping
    #: of its fields); ``None`` takes the method's defaults
    params: Any = None
    #: how ``sigma`` is read for uniform noise: the half-width λ the library uses everywhere, or
    #: Yang et al.'s standard deviation (λ = σ√3)
    uniform_convention: str = "half_width"
    #: the training run: replicate r > 0 draws every training stream (initial weights, data order,
    #: augmentation, training noise) from its own seed, the data split and test inputs staying those of
    #: ``seed``; replicate 0 is the single run of earlier versions (:attr:`run_seed`)
    replicate: int = 0
    # runtime
    seed: int = 0
    device: str = "auto"
    precision: str = "fp32"
    #: layout of the model and its input batches (:data:`ddrs.core.settings.MEMORY_FORMATS`); ``auto``:
    #: channels_last on CUDA (faster convolutions, float results differ in the last bits), contiguous
    #: elsewhere. It may change on resume (:data:`ddrs.training.checkpointing.RUNTIME_FIELDS`).
    memory_format: str = "auto"
    #: ``loader``, ``device`` or ``auto`` (:data:`FEEDS`, module docstring)
    feed: str = "auto"
    #: DataLoader worker processes (0: load in the training process), kept alive across epochs.
    #: Every input's augmentation is seeded from (seed, epoch, idx) (:mod:`ddrs.training.loader_feed`),
    #: so every count trains identically
    num_workers: int = 0
    #: page-locked batches for asynchronous host-to-GPU copies; ``None``: on CUDA only
    pin_memory: bool | None = None
    #: places where the training forward pass is cut into runs that keep only their input and are
    #: recomputed in backward (:mod:`ddrs.training.recompute`): the same step in less memory, one
    #: more forward pass per step; 0: none. It may change on resume.
    activation_checkpoints: int = 0
    data_root: str = "data"
    augment: bool = True
    #: test inputs scored for the per-epoch log (clean and noisy accuracy)
    eval_max: int = 1000

    def __post_init__(self) -> None:
        self.lr_milestones = [int(epoch) for epoch in self.lr_milestones]
        method = get_method(self.method)
        if self.method != method.name:
            raise ValueError(
                f"method {self.method!r} is a variant of {method.name!r}; train {method.name!r} with the "
                "variant's options (ddrs.methods.variant_options)"
            )
        if self.params is None or isinstance(self.params, Mapping):
            self.params = method.make_params(self.params, source=f"{self.method} options")
        elif not isinstance(self.params, method.params):
            raise ValueError(f"params of {self.method} must be a {method.params.__name__}, got {self.params!r}")
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first invalid field."""
        for name, choices in CHOICES.items():
            _choice(name, getattr(self, name), choices)
        resolve_clamp(self.sigma_objective, self.sigma_clamp)
        if self.feed == "device" and not get_info(self.dataset).fits_on_device:
            raise ValueError(
                f"feed 'device' holds the training split on the training device, which {self.dataset} "
                "does not fit (its images are read from files and augmented one by one); use feed 'loader' or 'auto'"
            )
        if not (isinstance(self.sigma, (int, float)) and math.isfinite(self.sigma) and self.sigma > 0):
            raise ValueError(f"sigma must be a positive number, got {self.sigma!r}")
        for names, holds, bound in BOUNDS:
            for name in names:
                if not holds(getattr(self, name)):
                    raise ValueError(f"{name} must be {bound}, got {getattr(self, name)!r}")
        if not (isinstance(self.seed, int) and 0 <= self.seed < 2**32):
            raise ValueError(f"seed must be an integer in [0, 2**32), got {self.seed!r}")
        if not (isinstance(self.replicate, int) and self.replicate >= 0):
            raise ValueError(f"replicate must be an integer >= 0, got {self.replicate!r}")
        if not 0 < self.min_sigma < self.sigma:
            raise ValueError(f"min_sigma must be in (0, sigma={self.sigma}), got {self.min_sigma!r}")
        if self.batch_size % self.chunks:
            raise ValueError(
                f"noise_batching 'split' cuts every batch into m = {self.chunks} chunks; batch_size "
                f"{self.batch_size} is not a multiple of it"
            )

    @property
    def run_seed(self) -> int:
        """The seed of this training run's streams (:class:`~ddrs.core.seeds.TrainingStream`): ``seed``
        for replicate 0, else one derived from ``(seed, REPLICATE, replicate)``. The data split is
        always ``seed``'s, so every replicate trains and is tested on the same inputs."""
        if self.replicate == 0:
            return self.seed
        return derived_seed(self.seed, TrainingStream.REPLICATE, self.replicate)

    @property
    def chunks(self) -> int:
        """SGD steps per loaded batch: the method's m under ``split`` when its authors split, else 1."""
        if self.noise_batching != "split" or not get_method(self.method).splits_batch:
            return 1
        return int(getattr(self.params, "m", 1))

    @property
    def resolved_feed(self) -> str:
        """``loader`` or ``device``: ``feed`` with ``auto`` resolved for the dataset."""
        if self.feed != "auto":
            return self.feed
        return "device" if get_info(self.dataset).fits_on_device else "loader"

    @property
    def augmented_by(self) -> str | None:
        """The feed whose draws augment the training split (they differ between feeds), ``None``
        when it is not augmented: what a resumed run must keep."""
        if not self.augment or get_info(self.dataset).augmentation is None:
            return None
        return self.resolved_feed

    @property
    def noise_name(self) -> str:
        """The method's smoothing noise: ``uniform`` for YANG (Yang et al. 2020, DDRS §4.4), else ``gaussian``."""
        return get_method(self.method).noise

    def library_sigma(self, value: float) -> float:
        """The σ ``ddrs.core.noise`` draws with for the config's ``value``: σ, or the uniform half-width λ
        (:func:`~ddrs.core.settings.noise_sigma`)."""
        return noise_sigma(self.noise_name, value, self.uniform_convention)

    @property
    def initial_sigma(self) -> float:
        """σ₀ (or λ₀) every example's σ starts from (DDRS Algorithm 2)."""
        return self.library_sigma(self.sigma)

    @functools.cached_property
    def algorithm1(self) -> Algorithm1Settings:
        """Algorithm 1 as Algorithm 2 runs it on each batch (DDRS §3.5): ``k`` steps of ``sigma_lr``
        from the stored σᵢ, with this config's n, objective, clamp, noise, lower bound and precision."""
        return Algorithm1Settings(
            sigma0=self.initial_sigma,
            steps=(self.k,),
            n=self.n,
            lr=self.sigma_lr,
            objective=self.sigma_objective,
            clamp=self.sigma_clamp,
            noise=self.noise_name,
            min_sigma=self.library_sigma(self.min_sigma),
            precision=self.precision,
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], source: str = "config") -> TrainConfig:
        """Build from a mapping whose keys are field names or method names.

        A method-named key holds that method's hyper-parameters; every such section is checked, and
        the chosen method's becomes ``params``. Unknown or missing keys name ``source``.
        """
        values = dict(values)
        sections = {name: values.pop(name) for name in METHODS if name in values}
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"{source}: unknown training option(s) {unknown}; known options: {sorted(known | set(METHODS))}"
            )
        for name, section in sections.items():
            if not isinstance(section, Mapping):
                raise ValueError(f"{source}: {name} must hold a mapping of option: value, got {section!r}")
            get_method(name).make_params(section, source=f"{source}: {name}")
        if values.get("method") in sections and values.get("params") is None:
            values["params"] = sections[values["method"]]
        required = [
            f.name
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        missing = [name for name in required if values.get(name) is None]
        if missing:
            raise ValueError(f"{source}: missing required training option(s) {missing}")
        return cls(**values)


def read_yaml(path: str | Path) -> dict[str, Any]:
    """The mapping in a YAML (or JSON) config file, or standard input for ``-`` (empty → empty mapping)."""
    if str(path) == "-":
        text = sys.stdin.read()
    else:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"training config {path} does not exist")
        text = path.read_text()
    content = yaml.safe_load(text) or {}
    if not isinstance(content, dict):
        raise ValueError(f"training config {path} must hold a mapping of option: value, got {type(content).__name__}")
    return content


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; choose one of {list(choices)}")
