"""Snakemake adapter: read one leaderboard dataset's published logs once, for its four jobs
(ddrs.published.builders.dataset_entries)."""

import sys
import time

from ddrs.logs.work_time import report_work
from ddrs.published.builders import dataset_entries

sys.stderr = open(snakemake.log[0], "w")
started = time.perf_counter()
dataset_entries(
    list(snakemake.input.manifests),
    snakemake.params.dataset,
    snakemake.output.entries,
    registry=snakemake.params.registry,
    families=snakemake.params.families,
    own=snakemake.params.own,
)
report_work(snakemake.rule, started)
