"""What a job asks of the machine: its run time (the SLURM profile's ``--time``)."""

from __future__ import annotations

import math

from ddrs.data import DATASETS
from ddrs.data.subsample import subsample_indices
from ddrs.pipeline.grid import RunGrid

#: the longest a job asks for unless the config's ``max_job_minutes`` says otherwise: a common limit
#: of SLURM clusters' GPU partitions
MAX_JOB_MINUTES = 24 * 60


def job_minutes(grid: RunGrid, stage: str, dataset: str, passes: int = 1) -> int:
    """Minutes a job of ``stage`` asks for on ``dataset`` (the SLURM profile's ``--time``), at
    most ``max_job_minutes``: a longer job resumes from its partial files over the profile's
    retries.

    ``train``: the dataset registry's ``train_minutes``. ``certify``: ``passes`` passes of
    CERTIFY over the test subset at n0 + n draws per input, at twice the registry's
    ``certify_seconds`` (the DDRS paper's GPU, Appendix F) and at least an hour.
    """
    info = DATASETS[dataset]
    if stage == "train":
        minutes = info.train_minutes
    else:
        spec = grid.datasets[dataset]
        inputs = len(subsample_indices(info.test_size, spec.get("test_skip", 1), spec.get("test_max")))
        draws = grid.config["certify"]["n0"] + grid.config["certify"]["n"]
        minutes = max(60, math.ceil(passes * 2 * inputs * draws / 100_000 * info.certify_seconds / 60))
    return min(minutes, grid.config.get("max_job_minutes", MAX_JOB_MINUTES))
