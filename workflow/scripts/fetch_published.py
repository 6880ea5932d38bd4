"""Snakemake adapter: fetch one repository's published logs into the cache and write its manifest
(ddrs.published.manifest.fetch_repository)."""

import sys
import time

from ddrs.logs.work_time import report_work
from ddrs.published.manifest import fetch_repository
from ddrs.published.log_registry import load_registry

sys.stderr = open(snakemake.log[0], "w")
started = time.perf_counter()
fetch = snakemake.params.fetch
fetch_repository(
    load_registry(fetch["registry"]),
    fetch["repository"],
    fetch["cache"],
    snakemake.output.manifest,
    mirror=fetch["mirror"],
    base_url=fetch["base_url"],
)
report_work(snakemake.rule, started)
