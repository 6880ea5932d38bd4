"""The training-method registry: one :class:`Method` entry per method, torch-free.

An entry is everything the pipeline knows about a method: the paper's row label, its loss (a
``module:function`` path imported only when training, so the workflow and the tables never
import torch), its hyper-parameter dataclass, its smoothing noise, the training modes it runs in
and the DDRS-style table (Method / Method-DS / Method-DS²) its rows feed. Everything else follows
from the entry: ``ddrs train --method`` choices and ``--<method>-<field>`` flags, the keys of the
config's ``train.<method>`` section, the workflow's wildcard values and targets, the schema's
allowed values (checked by a test) and the table row names.

Adding a method: write its loss with the signature
``loss(model, x, y, sigma, generator, params, epoch) -> Tensor`` (``sigma`` holds one σᵢ per
example; ``params`` is an instance of the entry's dataclass) and add one entry to :data:`METHODS`.
A method that also decides which training inputs an epoch visits names an epoch plan
(``Method.epoch_plan``, the protocol :class:`ddrs.training.epoch_plan.EpochPlan`); the trainer
calls it before every epoch and keeps its state in the training checkpoint.

Variant names (ablations, matched baselines) are resolved in :mod:`ddrs.methods.variants`.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from ddrs.methods import hyperparameters as hp
from ddrs.methods.names import base_name, matched_name, variant_name

#: Fixed σ ("fs") or data-dependent σ per example ("ds", DDRS Algorithm 2).
TRAIN_MODES = ("fs", "ds")


@dataclass(frozen=True)
class Method:
    """One training method and what the pipeline derives from it."""

    #: the config value, wildcard value and ``ddrs train --method`` choice
    name: str
    #: how the paper prints the method's rows (Cohen, Cohen-DS, Cohen-DS², …)
    display: str
    #: ``module:function`` of the loss, imported when a model is trained
    loss: str
    #: the hyper-parameter dataclass: fields are ``--<name>-<field>`` flags and ``train.<name>`` keys
    params: type = hp.NoParams
    #: smoothing noise: ``gaussian`` (ℓ2 certificates) or ``uniform`` (ℓ1, DDRS §4.4)
    noise: str = "gaussian"
    #: training modes the method's table has rows for
    train_modes: tuple[str, ...] = TRAIN_MODES
    #: the DDRS-style table (Method / -DS / -DS²) the method's rows feed
    table: str = ""
    #: the layout of the method's published checkpoints (a ``ddrs.models.published.SOURCES`` key), which
    #: ``ddrs import-checkpoint --method`` reads; None when its authors published none
    published_format: str | None = None
    #: ``module:Class`` of an epoch-level hook deciding which training inputs each epoch visits
    #: (:class:`ddrs.training.epoch_plan.EpochPlan`), or ``""`` for one shuffled pass over all of them
    epoch_plan: str = ""
    #: boolean hyper-parameters whose on/off combinations form the method's ablation (Sun et al.
    #: 2024, Table 3); each combination is a variant named ``<method>.<on fields joined by +>``
    ablation: tuple[str, ...] = ()
    #: the methods a study requires this one to share hyper-parameters with, each with the fields
    #: shared: ``(("smoothadv_consistency", ("steps", "epsilon", "m", "warmup")),)`` makes the
    #: variant ``smoothadv@smoothadv_consistency`` (:func:`variant_options`)
    matches: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: whether its authors' code splits every loaded batch into ``m`` chunks with one SGD step each
    #: (``noise_batching: split`` of :class:`ddrs.training.config.TrainConfig`)
    splits_batch: bool = False

    def variants(self) -> list[str]:
        """Every ablation variant's name, from all components off (``<method>.none``) to all on."""
        if not self.ablation:
            return []
        combinations = itertools.product((False, True), repeat=len(self.ablation))
        return [
            variant_name(self.name, [f for f, on in zip(self.ablation, c, strict=True) if on]) for c in combinations
        ]

    def matched_variants(self) -> list[str]:
        """Every matched variant's name (``<method>@<other method>``), one per entry of ``matches``."""
        return [matched_name(self.name, other) for other, _ in self.matches]

    def matched_fields(self, other: str) -> tuple[str, ...]:
        """The hyper-parameters this method takes from ``other`` in the variant ``<method>@<other>``."""
        for name, fields in self.matches:
            if name == other:
                return fields
        raise ValueError(
            f"{matched_name(self.name, other)!r}: {self.name} is matched to "
            f"{[name for name, _ in self.matches] or 'no method'}, not {other!r}"
        )

    @property
    def norm(self) -> int:
        """The ℓp norm of the certificate: 1 for uniform noise, else 2."""
        return 1 if self.noise == "uniform" else 2

    def load_loss(self):
        """The loss function (imports torch)."""
        return _load(self.loss)

    def load_epoch_plan(self):
        """The epoch plan's class (imports torch), or ``None`` when the method has none."""
        return _load(self.epoch_plan) if self.epoch_plan else None

    def make_params(self, values: Mapping[str, Any] | None = None, source: str = "config") -> Any:
        """The hyper-parameters from a mapping of field → value; unknown keys name ``source``."""
        values = dict(values or {})
        known = {f.name for f in dataclasses.fields(self.params)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"{source}: unknown {self.name} option(s) {unknown}; known {self.name} options: {sorted(known)}"
            )
        return self.params(**values)


#: Jeong & Shin (2020): the SmoothAdv baseline shares SmoothAdv+Consistency's attack (supplement A.3,
#: App. B: "a fixed configuration of hyperparameters when SmoothAdv is used")
_SMOOTHADV_ATTACK = ("steps", "epsilon", "m", "warmup")

METHODS: dict[str, Method] = {
    method.name: method
    for method in (
        Method(
            "cohen",
            "Cohen",
            "ddrs.training.losses:cohen_loss",
            hp.GaussianParams,
            table="table1",
            published_format="cohen",
            matches=(("easy_focus", ("m",)),),  # Sun et al. §6: m = 4 "for Gaussian training and our method"
            splits_batch=True,  # Sun et al.'s code, as Jeong & Shin's (m = 1 leaves Cohen's batches whole)
        ),
        Method(
            "smoothadv",
            "SmoothAdv",
            "ddrs.training.losses:smoothadv_loss",
            hp.SmoothAdvParams,
            table="table2",
            published_format="smoothadv",
            matches=(("smoothadv_consistency", _SMOOTHADV_ATTACK),),
            splits_batch=True,  # Salman et al.'s train_pgd.py: get_minibatches(batch, num_noise_vec)
        ),
        # Zhai et al.'s macer_train (and Jeong & Shin's train_macer.py) takes the whole batch
        Method(
            "macer",
            "MACER",
            "ddrs.training.losses:macer_loss",
            hp.MacerParams,
            table="table3",
            published_format="macer",
        ),
        # Yang et al. (2020): uniform noise, ℓ1 certificates; DDRS Table 4 has YANG and YANG-DS only
        Method(
            "uniform",
            "YANG",
            "ddrs.training.losses:uniform_loss",
            noise="uniform",
            train_modes=("fs",),
            table="table4",
            published_format="rs4a",
        ),
        # Jeong & Shin (2020): consistency regularization, alone and on top of SmoothAdv; their
        # train_consistency.py splits every batch into m chunks (_chunk_minibatch)
        Method(
            "consistency",
            "Consistency",
            "ddrs.training.consistency:consistency_loss",
            hp.ConsistencyParams,
            table="table_consistency",
            splits_batch=True,
        ),
        Method(
            "smoothadv_consistency",
            "SmoothAdv+Consistency",
            "ddrs.training.consistency:smoothadv_consistency_loss",
            hp.SmoothAdvConsistencyParams,
            train_modes=("fs",),  # a fixed-σ row of Jeong & Shin's tables: Method and Method-DS here
            table="table_smoothadv_consistency",
            splits_batch=True,
        ),
        # Li et al. (2019), the baseline row of Jeong & Shin's MNIST table (fixed σ, as uniform)
        Method(
            "stability",
            "Stability",
            "ddrs.training.losses:stability_loss",
            hp.StabilityParams,
            train_modes=("fs",),
            table="table_stability",
        ),
        # Sun et al. (2024), §5: Gaussian training focused on easy inputs
        Method(
            "easy_focus",
            "EasyFocus",
            "ddrs.training.easy_focus:easy_focus_loss",
            hp.EasyFocusParams,
            epoch_plan="ddrs.training.easy_focus:EasyFocusPlan",
            ablation=("discard", "reweigh", "attack"),
            table="table_easy_focus",
            splits_batch=True,
        ),
    )
}


def _load(path: str):
    """The object a ``module:name`` path names."""
    module, name = path.split(":")
    return getattr(import_module(module), name)


def get_method(name: str) -> Method:
    """The registry entry called ``name`` (or a variant's method); an unknown name lists the choices."""
    try:
        return METHODS[base_name(name)]
    except KeyError:
        raise ValueError(f"unknown training method {name!r}; choose one of {sorted(METHODS)}") from None
