"""Snakemake adapter: build one table or figure of the catalogue (ddrs.targets) from its inputs."""

import sys
import time

from ddrs.build import build
from ddrs.work_time import report_work

sys.stderr = open(snakemake.log[0], "w")
started = time.perf_counter()
build(snakemake.rule, snakemake.params.arguments, dict(snakemake.output.items()))
report_work(snakemake.rule, started)
