"""The workflow's certification jobs over a checkpoint, and the steps the commands share with them.

A job document (:mod:`ddrs.pipeline.job_plan`) names its ``kind`` (:data:`ddrs.cli.job.KINDS`);
:func:`run_certification`, what ``ddrs job`` calls, turns a certification document into the job's
settings objects, once, and runs it: :func:`certify_logs` at one σ, or :func:`write_sigma_log` and then
:func:`certify_logs` at every column of the σ log. The commands ``ddrs certify`` and ``ddrs
optimize-sigma`` build the same settings from their flags and call the same functions, so a person
typing a command runs what the workflow runs (the gradient-norm job is
:func:`ddrs.training.gradient_norms.write_gradient_norms`). Torch is imported when a job runs, not
with this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ddrs.core.distance_sigma import DistanceSigma, DistanceSigmaSettings
from ddrs.core.settings import (
    SIGMA_BATCH,
    Algorithm1Settings,
    CertifySettings,
    DeviceSettings,
    GridSearchSettings,
    certify_from_parts,
)

if TYPE_CHECKING:
    import torch
    from torch import nn
    from torch.utils.data import Dataset


@dataclass(frozen=True)
class LoadedTestSet:
    """The base classifier on its device and the test inputs a job visits."""

    model: nn.Module
    dataset: Dataset
    indices: list[int]
    num_classes: int
    device: torch.device
    #: what names the model in the settings of a resumable log (the checkpoint's digest)
    provenance: dict


def load_test_inputs(
    checkpoint: str, *, dataset: str, data_root: str, skip: int, max: int | None, seed: int, device: str
) -> LoadedTestSet:
    """Load ``checkpoint`` (checked against ``dataset``) and every ``skip``-th test input before
    index ``max`` (Cohen's ``--skip/--max``), the embedded datasets' split drawn with ``seed``, which
    must be the one the model trained on."""
    from ddrs.core.device import select_device
    from ddrs.data import get_info, load_dataset, subsample_indices
    from ddrs.io import file_digest
    from ddrs.models import load_checkpoint

    info = get_info(dataset)
    chosen = select_device(device)
    model, meta = load_checkpoint(checkpoint, dataset=dataset, device=chosen)
    trained_seed = (meta.get("config") or {}).get("seed")
    if info.arrays is not None and trained_seed is not None and trained_seed != seed:
        raise ValueError(
            f"{checkpoint} was trained on the {dataset} split of seed {trained_seed}, but --seed "
            f"{seed} draws another train/test split, whose test inputs the model partly trained on; "
            f"use --seed {trained_seed}"
        )
    test = load_dataset(dataset, "test", root=data_root, seed=seed)
    return LoadedTestSet(
        model=model,
        dataset=test,
        indices=subsample_indices(len(test), skip, max),
        num_classes=info.num_classes,
        device=chosen,
        provenance={"checkpoint": file_digest(checkpoint)},
    )


def certify_logs(
    settings: CertifySettings,
    device_settings: DeviceSettings,
    jobs: Sequence[tuple[str, float | dict[int, float], str]],
    inputs: LoadedTestSet,
    memory_outs: Sequence[str] | None = None,
) -> None:
    """Certify the inputs once per ``(what, sigmas, out)`` of ``jobs`` (one σ, or σ per idx), each
    log made sound by Algorithm 3 into its entry of ``memory_outs`` when given. ``device_settings``
    are resolved once for the job's device (:func:`ddrs.core.device.prepare_certification`), for all its logs."""
    from ddrs.core.device import BaseClassifier, prepare_certification
    from ddrs.jobs.certification import LogFile, LogInputs, certify_dataset
    from ddrs.jobs.memory_log import memory_certify_log
    from ddrs.logs.certification_log import kept_partials

    memory_outs = memory_outs or [None] * len(jobs)
    inputs.model.eval()
    sample_shape = tuple(inputs.dataset[inputs.indices[0]][0].shape) if inputs.indices else None
    loaded = BaseClassifier(inputs.model, inputs.num_classes, inputs.device, device_settings)
    classifier = prepare_certification(loaded, settings, sample_shape)
    resolved = classifier.device_settings
    with kept_partials():
        for (what, sigmas, out), memory_out in zip(jobs, memory_outs, strict=True):
            logged = LogInputs(inputs.dataset, inputs.indices, sigmas)
            path = certify_dataset(classifier, logged, settings, LogFile(out, provenance=inputs.provenance))
            print(
                f"certify: {len(inputs.indices)} inputs, {settings.noise} noise, {what}, "
                f"n0={settings.n0}, n={settings.n}, {settings.precision}, {resolved.memory_format}"
                f"{', compiled' if resolved.compile else ''}"
                f"{f', sequential ({settings.sequential.sequence})' if settings.mode == 'sequential' else ''} -> {path}"
            )
            if memory_out is not None:
                counts = memory_certify_log(path, inputs.dataset, memory_out)
                print(f"memory: {counts} -> {memory_out}")


def sigma_log_jobs(
    sigma_log: str, columns: Sequence[str], outs: Sequence[str]
) -> list[tuple[str, dict[int, float], str]]:
    """``(what, σ per idx, out)`` of every σ-log column, each certified into its log."""
    from ddrs.logs.sigma_log import read_sigma_log

    return [
        (f"{column} of {sigma_log}", read_sigma_log(sigma_log, column=column), out)
        for column, out in zip(columns, outs, strict=True)
    ]


def write_sigma_log(
    settings: Algorithm1Settings | GridSearchSettings, inputs: LoadedTestSet, out: str, batch: int = SIGMA_BATCH
) -> None:
    """σ per input by Algorithm 1 or, for grid-search settings, the Appendix-B grid search → the σ log
    ``out``, ``batch`` inputs solved together (speed only)."""
    from ddrs.jobs.sigma_search import sigma_log_dataset

    if isinstance(settings, GridSearchSettings):
        interval = f"[{settings.grid[0]}, {settings.grid[-1]}]"
        what = f"grid search over {len(settings.grid)} scales in {interval} with n={settings.n}"
    else:
        what = f"Algorithm 1 with K in {list(settings.steps)}, n={settings.n}, lr={settings.lr}"
    path = sigma_log_dataset(
        inputs.model,
        inputs.dataset,
        inputs.indices,
        out,
        settings,
        batch=batch,
        num_classes=inputs.num_classes,
        device=inputs.device,
        provenance=inputs.provenance,
    )
    print(f"optimize-sigma: {len(inputs.indices)} inputs, {what}, {settings.objective} objective -> {path}")


def semi_elastic_certification(
    inputs: LoadedTestSet, design: DistanceSigma, settings: CertifySettings, device_settings: DeviceSettings, files
) -> None:
    """Súkeník et al.'s semi-elastic σ(x) (``design``) of every input into ``files``' σ log, CERTIFY at it
    into its first log, then their certificate into its second: the ``semi_elastic_certification`` kind
    (docs/protocol.md, "A soundly certified data-dependent row")."""
    from ddrs.jobs.semi_elastic_log import semi_elastic_certify_log, write_semi_elastic_sigmas
    from ddrs.logs.certification_log import kept_partials

    certified, sound = files.outs
    points = np.stack([np.asarray(inputs.dataset[i][0], dtype=np.float32) for i in inputs.indices])
    sigmas = write_semi_elastic_sigmas(design, points, inputs.indices, files.sigma_log, seed=settings.seed)
    with kept_partials():
        certify_logs(settings, device_settings, [(f"σ(x) of {files.sigma_log}", sigmas, certified)], inputs)
    kept = semi_elastic_certify_log(certified, sound, design.rate, int(points[0].size))
    print(f"semi-elastic: r={design.rate:g}, {kept} of {len(points)} inputs certified -> {sound}")


def _semi_elastic_job(document, settings, device_settings, files) -> None:
    """The ``semi_elastic_certification`` kind from its document: the design over the training split."""
    from ddrs.data import load_images
    from ddrs.jobs.semi_elastic_log import distance_design

    data = document["inputs"]
    if settings.mode != "fixed":
        raise ValueError("the semi-elastic certification is Cohen's fixed-n CERTIFY: its document's certify mode")
    if files.sigma_log is None or len(files.outs) != 2 or files.memory_outs:
        raise ValueError("a semi-elastic job writes --sigma-log and two --out logs: CERTIFY's, then the sound one")
    training = load_images(data["dataset"], "train", root=data["data_root"], seed=data["seed"])
    options = DistanceSigmaSettings(**document["semi_elastic"])
    design = distance_design(training, float(document["sigma"]), options, seed=data["seed"])
    loaded = load_test_inputs(files.checkpoint, **data)
    semi_elastic_certification(loaded, design, settings, device_settings, files)


def sigma_search_settings(document: Mapping[str, Any]):
    """The document's σ search (Algorithm 1 or the Appendix-B grid), or None for a fixed σ."""
    if "algorithm1" in document:
        return Algorithm1Settings(**document["algorithm1"])
    if "grid_search" in document:
        from ddrs.core.sigma import grid_for_budget

        search = dict(document["grid_search"])
        grid = grid_for_budget(search.pop("low"), search.pop("high"), search["n"], search.pop("budget"))
        return GridSearchSettings(**search, grid=grid.tolist())
    return None


@dataclass(frozen=True)
class JobFiles:
    """The files of one ``ddrs job``, named on its command line: the base classifier it reads, the logs
    (or table) it writes, the σ log a σ search writes first and each log made sound by Algorithm 3."""

    checkpoint: str
    outs: Sequence[str]
    sigma_log: str | None = None
    memory_outs: Sequence[str] | None = None

    @property
    def written(self) -> list[str]:
        """Every file the job writes."""
        return [*self.outs, *(self.memory_outs or []), *([self.sigma_log] if self.sigma_log else [])]

    def check(self, columns: Sequence[str] | None) -> None:
        """Refuse files that do not fit the job: a fixed-σ job (``columns`` None) writes one log; a σ
        search its σ log, then one log (and one sound log) per σ-log column of ``columns``."""
        memory_outs = len(self.memory_outs or [])
        if columns is None and (self.sigma_log is not None or len(self.outs) != 1 or memory_outs > 1):
            raise ValueError("a fixed-σ job writes one --out log (and at most one --memory-out) and no --sigma-log")
        if columns is not None and self.sigma_log is None:
            raise ValueError("a σ-search job needs --sigma-log")
        if columns is not None and (len(self.outs) != len(columns) or memory_outs not in (0, len(columns))):
            raise ValueError(
                f"the σ search writes {len(columns)} column(s) {columns}: give one --out (and --memory-out) each"
            )


def search_columns(search: Algorithm1Settings | GridSearchSettings) -> list[str]:
    """The σ-log columns a σ search writes: one per K of Algorithm 1, or the grid search's one."""
    from ddrs.logs.sigma_log import grid_column, sigma_column

    if isinstance(search, Algorithm1Settings):
        return [sigma_column(k) for k in search.steps]
    return [grid_column(search.n)]


def run_certification(document: Mapping[str, Any], speed: Mapping[str, Any], files: JobFiles) -> None:
    """Run the certification job ``document`` describes with ``speed``'s settings
    (:meth:`~ddrs.pipeline.job_plan.JobPlan.speed`), on and into ``files``: CERTIFY with one σ (the
    ``fixed_certification`` kind), or σ per input by the document's σ search into the σ log, then
    CERTIFY at every column it wrote, each log made sound by Algorithm 3 (the
    ``data_dependent_certification`` and ``grid_search_certification`` kinds, DDRS §3.3–3.4, Appendix
    B), the model loaded once. The document's statistics become the job's one :class:`CertifySettings`."""
    from ddrs.data import get_info, subsample_indices
    from ddrs.logs.certification_log import kept_partials

    inputs = dict(document["inputs"])
    get_info(inputs["dataset"])
    subsample_indices(0, inputs["skip"], inputs["max"])
    settings, device_settings = certify_from_parts(document["certify"], speed.get("certify", {}))
    if document["kind"] == "semi_elastic_certification":
        _semi_elastic_job(document, settings, device_settings, files)
        return
    if document["kind"] == "fixed_certification":
        files.check(None)
        sigma = float(document["sigma"])
        loaded = load_test_inputs(files.checkpoint, **inputs)
        certify_logs(settings, device_settings, [(f"sigma {sigma}", sigma, files.outs[0])], loaded, files.memory_outs)
        return
    search = sigma_search_settings(document)
    columns = search_columns(search)
    files.check(columns)
    if "threads" in document:  # the σ search sums on the threads its document names (JobPlan.search_order)
        import torch

        torch.set_num_threads(document["threads"])
    loaded = load_test_inputs(files.checkpoint, **inputs)
    with kept_partials():
        write_sigma_log(search, loaded, files.sigma_log, document.get("search_batch", SIGMA_BATCH))
        jobs = sigma_log_jobs(files.sigma_log, columns, files.outs)
        certify_logs(settings, device_settings, jobs, loaded, files.memory_outs)
