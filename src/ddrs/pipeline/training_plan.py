"""What each base classifier trains with (no torch): the ``ddrs train`` options of a run, the
model a DS² run fine-tunes, and which runs train the same model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddrs.methods import METHODS, get_method, variant_options
from ddrs.pipeline.grid import RunGrid
from ddrs.pipeline.layout import Run, scale_label
from ddrs.training.config import ALGORITHM2_FIELDS, SPEED_FIELDS


def merge_train(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """A ``train`` section with ``override``'s keys over ``base``'s; method sections merge field by field."""
    merged = dict(base)
    for key, value in override.items():
        merged[key] = {**merged.get(key, {}), **value} if key in METHODS else value
    return merged


class TrainingPlan:
    """The training options of a run grid's base classifiers."""

    def __init__(self, grid: RunGrid):
        self.grid = grid
        self.config = grid.config

    def trains_alike(self, a: Run, b: Run) -> bool:
        """Whether two runs train the same model: equal options, method hyper-parameters resolved."""

        def resolved(run: Run) -> dict[str, Any]:
            options = self.options(run)
            method = get_method(run.method)
            return {**options, method.name: method.make_params(options.get(method.name))}

        return resolved(a) == resolved(b)

    def init_run(self, run: Run) -> Run | None:
        """The model a run fine-tunes (``ddrs train --init``), or None when it trains from scratch.

        DS² fine-tunes the fixed-σ model of its method at the same σ₀ on a published dataset (DDRS
        §4.1, §4.2: the published ImageNet models) and where the dataset's ``ds_fine_tune`` names the
        method (§4.2: "We fine tune the SMOOTHADV trained models (either the retrained CIFAR10 models
        …) using Algorithm 2").
        """
        if run.mode != "ds":
            return None
        method = get_method(run.method).name
        if self.grid.is_published(run.dataset) or method in self.grid.datasets[run.dataset].get("ds_fine_tune", {}):
            return Run(run.dataset, run.method, "fs", run.sigma, run.replicate)
        return None

    def train_options(self, run: Run) -> dict[str, Any]:
        """What one base classifier is trained with, the ``ddrs train --config`` mapping (keys:
        ``TrainConfig`` fields): every option of :meth:`options` that decides the weights, so the
        workflow re-trains the model when one of them changes. The model it fine-tunes is its
        ``init`` (:meth:`init_run`, the path of that model)."""
        options = {key: value for key, value in self.options(run).items() if key not in SPEED_FIELDS}
        init = self.init_run(run)
        if init is not None:
            options["init"] = self.grid.layout.model(*init.wildcards)
        return options

    def train_speed(self, run: Run, threads: int) -> dict[str, Any]:
        """How fast one base classifier trains, the ``ddrs train --speed`` mapping: the options of
        :data:`~ddrs.training.config.SPEED_FIELDS` the config gives. A GPU job (``gpus_per_job`` > 0,
        device not the CPU) loads with its ``threads`` − 1 DataLoader workers unless ``num_workers``
        is given, so the job's other threads load and augment batches and the GPU never waits."""
        speed = {key: value for key, value in self.options(run).items() if key in SPEED_FIELDS}
        if "num_workers" not in speed and self.config["gpus_per_job"] > 0 and self.config["device"] != "cpu":
            speed["num_workers"] = max(0, threads - 1)
        return speed

    def options(self, run: Run) -> dict[str, Any]:
        """Every ``ddrs train`` option of one base classifier the config sets (keys: ``TrainConfig`` fields).

        The config's ``train`` section, overridden by the dataset's own ``train`` section, its
        ``train_by_method`` entry for the run's method (e.g. MACER's own schedule beside the seed
        papers' common one), its ``train_by_sigma`` entry for the run's σ₀ and, for DS², its
        ``ds_fine_tune`` entry for the run's method (the fine-tuning of :meth:`init_run`; method
        sections merged field by field), with the run's data, model, method, mode and scale (λ for
        uniform noise, converted here once: :meth:`noise_sigma`) and its training run (``replicate``,
        left out for replicate 0, whose options are those of earlier versions); of the method sections only
        the run's own, a variant's resolved by
        :func:`ddrs.methods.variant_options` (an ablation's switches; a matched variant's fields
        shared with the other method, e.g. ``smoothadv@smoothadv_consistency``'s attack). Algorithm 2 runs
        Algorithm 1 as certification does: ``optimize_sigma``'s objective, clamp and, where
        ``n_by_method`` names the method, its n. A fixed-σ run's options leave out what only
        Algorithm 2 reads (:data:`~ddrs.training.config.ALGORITHM2_FIELDS`), so its model is not
        re-trained when they change.
        """
        spec = self.grid.datasets[run.dataset]
        method = get_method(run.method).name
        train = merge_train(self.config["train"], spec.get("train", {}))
        train = merge_train(train, spec.get("train_by_method", {}).get(method, {}))
        train = merge_train(train, spec.get("train_by_sigma", {}).get(scale_label(run.sigma), {}))
        if run.mode == "ds":
            train = merge_train(train, spec.get("ds_fine_tune", {}).get(method, {}))
        options = {key: value for key, value in train.items() if key not in METHODS}
        if method in self.config["optimize_sigma"].get("n_by_method", {}):
            options["n"] = self.grid.algorithm1_n(method)
        own = variant_options(run.method, train)
        if own:
            options[method] = own
        options.update(
            dataset=run.dataset,
            arch=self.grid.datasets[run.dataset]["arch"],
            method=method,
            train_mode=run.mode,
            sigma=self.grid.noise_sigma(run.dataset, run.method, run.sigma),
            seed=self.config["seed"],
            **({"replicate": run.replicate} if run.replicate else {}),
            device=self.config["device"],
            data_root=self.config["data_root"],
            sigma_objective=self.config["optimize_sigma"]["objective"],
        )
        if "clamp" in self.config["optimize_sigma"]:
            options["sigma_clamp"] = self.config["optimize_sigma"]["clamp"]
        if run.mode != "ds":  # a fixed-σ model is the same whatever Algorithm 2 would do
            options = {key: value for key, value in options.items() if key not in ALGORITHM2_FIELDS}
        return options
