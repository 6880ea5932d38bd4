"""Snakemake adapter: build one table or figure of the catalogue (ddrs.pipeline.catalogue) from its inputs."""

import sys
import time

from ddrs.pipeline.build import build
from ddrs.logs.work_time import report_work

sys.stderr = open(snakemake.log[0], "w")
started = time.perf_counter()
build(snakemake.rule, snakemake.params.arguments, dict(snakemake.output.items()), list(snakemake.input))
report_work(snakemake.rule, started)
