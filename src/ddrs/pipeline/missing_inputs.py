"""Published checkpoints the experiment imports (DDRS §4: ImageNet's fixed-σ models), the data its
models read (``data_root``, ImageNet's folders), given certification logs it tabulates (``source:
logs``) and the captions of the catalogue's reported outputs: which are missing, and what a user
should do about it, said before the DAG is built."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from ddrs.methods import get_method
from ddrs.pipeline.grid import RunGrid
from ddrs.pipeline.layout import Run, scale_label
from ddrs.pipeline.target import REPORTED, Target

#: where each published checkpoint layout (``ddrs.methods.Method.published_format``) is downloaded from
PUBLISHED_AT = {
    "cohen": "Cohen et al. (2019): https://github.com/locuslab/smoothing (its README links the trained models)",
    "smoothadv": "Salman et al. (2019): https://github.com/Hadisalman/smoothing-adversarial (its README links "
    "the pretrained models)",
    "macer": "Zhai et al. (2020): https://github.com/RuntianZ/macer",
    "rs4a": "Yang et al. (2020): https://github.com/tonyduan/rs4a (its README links the trained models)",
}


def missing_checkpoints(grid: RunGrid) -> list[tuple[Run, str]]:
    """Every published checkpoint the experiment imports (a configured method's σ₀ on a published
    dataset) whose file is not there, with its path."""
    missing = []
    for dataset in grid.datasets:
        if not grid.is_published(dataset):
            continue
        for method in grid.methods:
            for sigma in grid.sigmas(dataset, method):
                run = Run(dataset, method, "fs", sigma)
                if not Path(path := grid.published_checkpoint(run)).is_file():
                    missing.append((run, path))
    return missing


def missing_checkpoints_message(grid: RunGrid, configfiles: Sequence[str] = ("<config>",)) -> str | None:
    """What to do about :func:`missing_checkpoints` (None when every file is there): each file under
    its config path, who publishes it, and how to run the other datasets of ``configfiles`` alone."""
    missing = missing_checkpoints(grid)
    if not missing:
        return None
    named = [f'  datasets.{r.dataset}.checkpoints.{r.method}."{scale_label(r.sigma)}": {path}' for r, path in missing]
    lines = [
        f"{len(missing)} published checkpoints named in the config are missing (paths from the working directory):",
        *capped(named, 2),
    ]
    origins = dict.fromkeys(
        PUBLISHED_AT.get(get_method(run.method).published_format or "", "its authors") for run, _ in missing
    )
    lines.append(
        f"Download them from {'; '.join(origins)} (docs/protocol.md, 'Published checkpoints', names each file) "
        "to these paths, or set each config path to where the file is."
    )
    return "\n".join(lines + _others_alone(grid, {run.dataset for run, _ in missing}, configfiles))


def _others_alone(grid: RunGrid, datasets: set[str], configfiles: Sequence[str]) -> list[str]:
    """How to run the configured datasets but ``datasets`` (the command), if there are any."""
    others, left_out = [d for d in grid.datasets if d not in datasets], sorted(datasets)
    if not others:
        return []
    return [
        f"To run {', '.join(others)} alone, leave {', '.join(left_out)} out: snakemake --cores all "
        f"--configfile {' '.join(configfiles)} --config 'exclude_datasets=[{','.join(left_out)}]'"
    ]


def capped(lines: list[str], at: int) -> list[str]:
    """``lines`` if there are at most ``at``, else the first ``at - 1`` and how many more: a message
    stays a few lines however many files are missing."""
    return lines if len(lines) <= at else [*lines[: at - 1], f"  … and {len(lines) - at + 1} more"]


def missing_data_message(grid: RunGrid, runs: Sequence[Run], configfiles: Sequence[str] = ("<config>",)) -> str | None:
    """What stops ``runs`` (the models a config trains or imports) from reading their data, said before the DAG
    is built (None when nothing does): a ``data_root`` that is not a folder and cannot be created, or a
    split of a dataset no loader downloads (:attr:`ddrs.data.DatasetInfo.local_folder`: ImageNet) that is not
    there, with where to get it. Datasets shipped in a package need nothing there but a folder to save their
    split in; MNIST and CIFAR-10 are downloaded into it by the first job (``prepare_data``)."""
    from ddrs.data import get_info

    if not runs:
        return None
    root = Path(grid.config["data_root"])
    if root.exists() and not root.is_dir():
        return f"data_root: {root} is a file, not a folder; set data_root to a folder (datasets are saved there)"
    # the folder that would hold it: "." or "/" at the latest
    existing = next(folder for folder in (root, *root.parents) if folder.exists())
    if existing != root and not (existing.is_dir() and os.access(existing, os.W_OK)):
        return (
            f"data_root: {root} does not exist and cannot be created ({existing} is not a folder you can write); "
            "create it, or set data_root to a folder you can write (datasets are saved there)"
        )
    lines, datasets = [], set()
    for dataset in dict.fromkeys(run.dataset for run in runs):
        info = get_info(dataset)
        if info.local_folder is None:
            continue
        trains = any(run.dataset == dataset and not (grid.is_published(dataset) and run.mode == "fs") for run in runs)
        for split in ("train", "test") if trains else ("test",):
            folder = info.local_folder(root, split)
            if not folder.is_dir():
                lines.append(f"{dataset} {split} images are missing: {folder}")
                datasets.add(dataset)
    if not lines:
        return None
    fixes = {get_info(dataset).obtain for dataset in sorted(datasets)}
    lines += [f"To get them: {fix}; or set data_root to where they are." for fix in sorted(fixes)]
    return "\n".join(lines + _others_alone(grid, datasets, configfiles))


def missing_own_logs_message(exp) -> str | None:
    """A user's own logs (``published_logs.own.<name>.path``) that are not there, one line each under
    its config path; None when all are. Snakemake takes a missing input of an existing output for no
    reason to run, so the leaderboard would keep the log it read before."""
    own = {} if exp.published is None else exp.published.own
    lines = [f"  published_logs.own.{name}.path: {spec['path']}" for name, spec in own.items()]
    lines = [line for line, spec in zip(lines, own.values(), strict=True) if not Path(spec["path"]).is_file()]
    if not lines:
        return None
    return "\n".join(
        ["Your own logs named in the config are missing (config path: file, from the working directory):",
         *capped(lines, 3),
         "Put each file there, or change its path (or leave it out of published_logs.own)."]
    )  # fmt: skip


def own_logs_checked(exp) -> tuple[str | None, list[str]]:
    """Each of a user's own logs that is there, checked before the DAG is built as far as it can be
    without the published logs (:func:`ddrs.published.own_logs.checked_own_log`: its settings, every
    value, the radius cap): the refusal of the first that fails, in a line after its config key (None
    when none does), and the warnings of the others (a log without ``n``), each a line. Snakemake
    prints both before any job, where a job's would reach only its log. Its job checks the rest (its
    inputs are one published input set's)."""
    from ddrs.errors import DDRSError
    from ddrs.published.own_logs import checked_own_log

    warned: list[str] = []
    for name, spec in ({} if exp.published is None else exp.published.own).items():
        if not Path(spec["path"]).is_file():
            continue  # missing_own_logs_message names it
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                checked_own_log(name, spec)
            except DDRSError as error:
                return f"published_logs.own.{name} is refused: {error}", warned
        warned += [str(warning.message) for warning in caught]
    return None, warned


def missing_logs_message(grid: RunGrid) -> str | None:
    """Each ``source: logs`` dataset whose ``logs`` directory is not there (None when all are):
    its logs would silently be absent from every table."""
    missing = {
        d: spec["logs"] for d, spec in grid.datasets.items() if grid.is_logs(d) and not Path(spec["logs"]).is_dir()
    }
    if not missing:
        return None
    lines = ["Certification-log directories named in the config are missing (paths from the working directory):"]
    lines += [f"  datasets.{dataset}.logs: {path}" for dataset, path in missing.items()]
    lines.append(
        "Put the logs there as <method>/<fs|ds>/sigma<σ>/<log>.tsv, or set datasets.<dataset>.logs to where they are."
    )
    return "\n".join(lines)


def missing_captions_message(catalogue: Mapping[str, Target], report_dir: str | Path) -> str | None:
    """The catalogue entries whose reported output (a table's CSV, a figure's PNG) has no caption
    file ``<report_dir>/<caption>.rst``, one line each with the file to write; ``None`` when every one has
    its caption. Snakemake reads a caption only when the report is built, long after the jobs ran."""
    lines = [
        f"catalogue entry {name}: its caption {Path(report_dir) / target.caption}.rst does not exist; write it "
        "(ddrs.pipeline.catalogue: each reported table or figure has a caption under report/)"
        for name, target in catalogue.items()
        if set(target.outputs) & set(REPORTED) and not (Path(report_dir) / f"{target.caption}.rst").is_file()
    ]
    return "\n".join(lines) or None
