"""The training methods' hyper-parameter classes: one frozen dataclass per method, each checking
its own values (the fields are ``train.<method>`` config keys and ``ddrs train --<method>-<field>``
flags; :mod:`ddrs.methods.registry` names which class a method uses). A field with a fixed set of values
names it in its metadata (``choices``), which its check and the config schema's enum read."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


def _at_least(params: Any, low: float, *names: str) -> None:
    for name in names:
        if not getattr(params, name) >= low:
            raise ValueError(f"{name} must be >= {low}, got {getattr(params, name)!r}")


@dataclass(frozen=True)
class NoParams:
    """A method without hyper-parameters of its own (uniform data augmentation)."""


@dataclass(frozen=True)
class GaussianParams:
    """Gaussian data augmentation (Cohen et al. 2019, §3.3) with m draws per input.

    The loss is the mean cross-entropy over the m noisy copies; m = 1 is Cohen et al.'s training.
    Sun et al. (2024, §6) train their Gaussian baseline with m = 4, as their own method.
    """

    m: int = field(default=1, metadata={"help": "noise draws per input; the loss averages their cross-entropy"})

    def __post_init__(self) -> None:
        _at_least(self, 1, "m")


#: what SmoothAdv's attack ascends (:func:`ddrs.training.losses.smoothadv_attack`): Salman et al.'s
#: ``PGD_L2`` on the logits, or the DDRS authors' copy of it on their softmax output
SMOOTHADV_ATTACKS = ("salman", "released")


@dataclass(frozen=True)
class SmoothAdvParams:
    """SmoothAdv (Salman et al. 2019; DDRS §4.2: 2 PGD steps, ζ = 0.25, m = 1 on CIFAR-10)."""

    steps: int = field(default=2, metadata={"help": "PGD steps of the attack on the soft smoothed classifier"})
    epsilon: float = field(default=0.25, metadata={"help": "attack radius ζ (ℓ2)"})
    m: int = field(default=1, metadata={"help": "noise draws per input, shared by the attack and the loss"})
    warmup: int = field(default=10, metadata={"help": "epochs over which ζ grows linearly from 0 to ζ"})
    attack: str = field(
        default="salman",
        metadata={
            "choices": SMOOTHADV_ATTACKS,
            "help": "salman = Salman et al.'s PGD_L2 on the soft smoothed classifier (cross-entropy of the logits; "
            "m > 1: of the mean softmax); released = the DDRS authors' attacker.py, the same steps on their "
            "network's softmax output, i.e. on softmax(logits) taken as logits (a double softmax)",
        },
    )

    def __post_init__(self) -> None:
        _at_least(self, 1, "steps", "m")
        _at_least(self, 0, "epsilon", "warmup")
        _choice(self, "attack")


def _draws_per_pass() -> Any:
    """The ``draws_per_pass`` field of the methods whose loss couples m draws per input
    (:func:`ddrs.training.losses.chunked_copies_logits`): a memory setting, not a hyper-parameter."""
    return field(
        default=0,
        metadata={
            "help": "draws per forward pass, activations recomputed in backward (0: all m at once); less "
            "memory, the same gradient without batch-norm (with it, each chunk is normalised by its own "
            "batch statistics)"
        },
    )


#: MACER's robustness term (:func:`ddrs.training.losses.macer_objective`): Zhai et al.'s, or the
#: DDRS authors' ``CIFAR10/train_macer.py``
MACER_FORMS = ("zhai", "released")


@dataclass(frozen=True)
class MacerParams:
    """MACER (Zhai et al. 2020; DDRS §4.3: m = 64 draws, λ = 12, γ = 8, β = 16).

    ``deferred`` = d > 0 trains with λ = 0 while the 0-based epoch is ≤ d, as Jeong & Shin's MNIST
    MACER runs (``train_macer.py --deferred``: ``if args.deferred and epoch <= args.lr_step_size:
    lbd = 0``, d their ``--lr_step_size``): d + 1 epochs of the cross-entropy alone.
    """

    m: int = field(default=64, metadata={"help": "noise draws per input"})
    lam: float = field(default=12.0, metadata={"help": "weight λ of the robustness (hinge) term"})
    gamma: float = field(default=8.0, metadata={"help": "hinge margin γ on ξ = Φ⁻¹(p̂A) − Φ⁻¹(p̂B)"})
    beta: float = field(default=16.0, metadata={"help": "inverse temperature β of the soft smoothed classifier"})
    deferred: int = field(
        default=0,
        metadata={
            "help": "d > 0: λ = 0 (the cross-entropy term alone) while the 0-based epoch is <= d, i.e. d + 1 "
            "epochs (Jeong & Shin's --deferred with --lr_step_size d); 0: λ from the first epoch"
        },
    )
    form: str = field(
        default="zhai",
        metadata={
            "choices": MACER_FORMS,
            "help": "zhai = MACER's robustness term, λ·σ/2·(γ − ξ) over correct inputs with ξ ≤ γ on the β-tempered "
            "smoothed classifier, divided by the batch; released = the DDRS train_macer.py's, λ·mean over correct "
            "inputs of relu(γ − σ/2·ξ) on the untempered one, p̂A, p̂B clamped to [0.02, 0.98] (β unused)",
        },
    )
    draws_per_pass: int = _draws_per_pass()

    def __post_init__(self) -> None:
        _at_least(self, 1, "m")
        _at_least(self, 0, "lam", "gamma", "deferred", "draws_per_pass")
        _choice(self, "form")
        if not self.beta > 0:
            raise ValueError(f"beta must be > 0, got {self.beta!r}")


#: the consistency term between the m noisy predictions, named by what it computes
#: (:mod:`ddrs.training.consistency`; Jeong & Shin 2020, supplement Table 4)
DIVERGENCES = ("mean_kl", "mean_cross_entropy", "pairwise_mse")
#: the names these terms had before, each pointing to the term that computes the same
RENAMED_DIVERGENCES = {"kl": "mean_kl", "ce": "mean_cross_entropy", "mse": "pairwise_mse"}


def _choice(params: Any, name: str) -> None:
    """Refuse a value outside the field's ``choices`` (its metadata: the registry constant the config
    schema's enum is rendered from, :mod:`ddrs.pipeline.schema`)."""
    choices = next(f.metadata["choices"] for f in fields(params) if f.name == name)
    if getattr(params, name) not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {getattr(params, name)!r}")


def _check_consistency(params: Any) -> None:
    _at_least(params, 2, "m")
    _at_least(params, 0, "lam", "eta", "draws_per_pass")
    if params.divergence in RENAMED_DIVERGENCES:
        raise ValueError(
            f"divergence {params.divergence!r} was renamed {RENAMED_DIVERGENCES[params.divergence]!r} (the same term; "
            f"the names now say what each computes: {', '.join(DIVERGENCES)})"
        )
    _choice(params, "divergence")


@dataclass(frozen=True)
class ConsistencyParams:
    """Consistency regularization (Jeong & Shin 2020): CE over m draws + λ·consistency + η·entropy.

    Defaults: their CIFAR-10 runs at σ = 0.5 and 1.0 (m = 2, λ = 10, η = 0.5; λ = 20 at σ = 0.25),
    read off the certification logs of jh-jeong/smoothing-consistency, which match the supplement's
    Table 7 row for row.
    """

    m: int = field(default=2, metadata={"help": "noise draws per input (>= 2: the term compares the draws)"})
    lam: float = field(default=10.0, metadata={"help": "weight λ of the consistency term"})
    eta: float = field(default=0.5, metadata={"help": "weight η of the entropy of the mean prediction"})
    divergence: str = field(
        default="mean_kl",
        metadata={
            "choices": DIVERGENCES,
            "help": "mean_kl = mean over the draws of KL(mean prediction ‖ draw) (with η = 0.5: their default loss, "
            "filed under 'Cross-entropy' in supplement Table 4), mean_cross_entropy = mean over the draws of the "
            "cross-entropy of each draw against the mean prediction (mean_kl + its entropy), pairwise_mse = "
            "squared distance between the draws' softmaxes, averaged over pairs",
        },
    )
    draws_per_pass: int = _draws_per_pass()

    def __post_init__(self) -> None:
        _check_consistency(self)


@dataclass(frozen=True)
class SmoothAdvConsistencyParams:
    """SmoothAdv + Consistency (Jeong & Shin 2020): SmoothAdv's attack, then the consistency loss on
    the adversarial point's m draws. Defaults: their CIFAR-10 runs at σ = 0.5 and 1.0 (10 PGD steps,
    ζ = 512/256 = 2.0, m = 2, λ = 1, η = 0.5, 10 warm-up epochs; at σ = 0.25: ζ = 255/256, m = 4, λ = 2)."""

    steps: int = field(default=10, metadata={"help": "PGD steps of the attack on the soft smoothed classifier"})
    epsilon: float = field(default=2.0, metadata={"help": "attack radius ζ (ℓ2)"})
    m: int = field(default=2, metadata={"help": "noise draws per input, shared by the attack and the loss (>= 2)"})
    warmup: int = field(default=10, metadata={"help": "epochs over which ζ grows linearly from 0 to ζ"})
    lam: float = field(default=1.0, metadata={"help": "weight λ of the consistency term"})
    eta: float = field(default=0.5, metadata={"help": "weight η of the entropy of the mean prediction"})
    divergence: str = field(
        default="mean_kl",
        metadata={"choices": DIVERGENCES, "help": "mean_kl, mean_cross_entropy or pairwise_mse (as for consistency)"},
    )
    draws_per_pass: int = _draws_per_pass()

    def __post_init__(self) -> None:
        _at_least(self, 1, "steps")
        _at_least(self, 0, "epsilon", "warmup")
        _check_consistency(self)


#: the stability term between the clean and the noisy prediction (:func:`ddrs.training.losses.stability_objective`)
STABILITY_DIVERGENCES = ("cross_entropy", "kl")


@dataclass(frozen=True)
class StabilityParams:
    """Stability training (Li et al. 2019): CE on the clean input + γ·(stability term).

    Defaults are what produced Jeong & Shin's (2020) Stability rows, their ``train_stab.py``:
    γ = 2 (``--lbd 2``; supplement B) and the term ``cross_entropy`` −Σ p_clean·log p_noisy, which
    is KL(p_clean ‖ p_noisy) plus the clean prediction's entropy, with gradients through both
    passes. ``kl`` is the stability term as Zheng et al. (2016) write it, without the entropy.
    """

    gamma: float = field(default=2.0, metadata={"help": "weight γ of the stability term"})
    divergence: str = field(
        default="cross_entropy",
        metadata={
            "choices": STABILITY_DIVERGENCES,
            "help": "cross_entropy = −Σ softmax(clean)·log softmax(noisy) (Jeong & Shin's train_stab.py), "
            "kl = KL(softmax(clean) ‖ softmax(noisy)) (cross_entropy minus the clean entropy)",
        },
    )

    def __post_init__(self) -> None:
        _at_least(self, 0, "gamma")
        _choice(self, "divergence")


#: how Sun et al.'s E_t is read (:func:`ddrs.training.easy_focus.first_focus_epoch`): as their code
#: runs it, or as their Algorithm 2 prints it
EASY_FOCUS_SCHEDULES = ("code", "paper")


@dataclass(frozen=True)
class EasyFocusParams:
    """Gaussian training focused on easy inputs (Sun et al. 2024, "ACR is a poor metric", §5).

    Plain Gaussian training with m draws until E_t (``start_epoch``); from E_t on, each switchable:
    hard inputs (p_A < p_t) are discarded once (§5.1), inputs are sampled with weight
    max(1, Φ⁻¹(p̂_A)/Φ⁻¹(p̂_min)) re-estimated every 10 epochs (§5.2), and every noise draw is attacked
    on its sphere (§5.3, Algorithm 1). ``schedule`` says where E_t falls: ``code`` (their
    ``code/train.py``, the default) — E_t plain epochs (0-based epochs ``0 … E_t − 1``), and without
    discarding every component from the first epoch (``ds_epochs = [0]``); ``paper`` — their Algorithm
    2, epochs counted from 1: E_t − 1 plain epochs, every component from E_t. Defaults: σ = 0.5 on
    CIFAR-10 (Table 4: E_t = 70, p_t = 0.4, T = 6, ε = 0.25; Appendix A.1: m = 4, N = 100 and 16,
    α = 0.1, p_min = 0.75).
    """

    m: int = field(default=4, metadata={"help": "noise draws per input"})
    start_epoch: int = field(
        default=70,
        metadata={
            "help": "E_t: schedule code = the number of plain epochs before the components (their --ds_epoch); "
            "paper = the first epoch, counted from 1, with them on"
        },
    )
    schedule: str = field(
        default="code",
        metadata={
            "choices": EASY_FOCUS_SCHEDULES,
            "help": "code = Sun et al.'s code/train.py: E_t plain epochs, and without discarding (the ablation) "
            "reweighing, the attack and the sampling with replacement from the first epoch; paper = their "
            "Algorithm 2: E_t - 1 plain epochs, every component from epoch E_t",
        },
    )
    discard: bool = field(default=True, metadata={"help": "discard the inputs with p_A < threshold at epoch E_t"})
    threshold: float = field(default=0.4, metadata={"help": "p_t: inputs with p_A below it are discarded"})
    discard_draws: int = field(default=100, metadata={"help": "noise draws estimating p_A for discarding"})
    reweigh: bool = field(default=True, metadata={"help": "sample inputs with weights from their certified radius"})
    reweigh_every: int = field(default=10, metadata={"help": "epochs between weight updates (from E_t on)"})
    reweigh_draws: int = field(default=16, metadata={"help": "noise draws N of the weights' lower bound on p_A"})
    reweigh_alpha: float = field(default=0.1, metadata={"help": "α of the weights' (1 − α) lower bound on p_A"})
    p_min: float = field(
        default=0.75, metadata={"help": "p_min: a weight is the radius estimated at p_A over the one at p_min (>= 1)"}
    )
    attack: bool = field(default=True, metadata={"help": "attack every noise draw on its sphere (Algorithm 1)"})
    steps: int = field(default=6, metadata={"help": "T: at most this many ℓ2 PGD steps per noise draw"})
    epsilon: float = field(default=0.25, metadata={"help": "ε: step size of each ℓ2 PGD step"})

    def __post_init__(self) -> None:
        _at_least(self, 1, "m", "start_epoch", "discard_draws", "reweigh_every", "reweigh_draws", "steps")
        _choice(self, "schedule")
        if not 0 <= self.threshold <= 1:
            raise ValueError(f"threshold must lie in [0, 1], got {self.threshold!r}")
        if not 0 < self.reweigh_alpha < 1:
            raise ValueError(f"reweigh_alpha must lie in (0, 1), got {self.reweigh_alpha!r}")
        if not 0.5 < self.p_min <= 1:
            raise ValueError(f"p_min must lie in (0.5, 1], got {self.p_min!r}")
        if not self.epsilon > 0:
            raise ValueError(f"epsilon must be > 0, got {self.epsilon!r}")
