# Data-Dependent Randomized Smoothing: every table and figure of the paper as a DAG target.
# Quick start: snakemake --cores all results/tables/table1.csv  (embedded mnist5k default)
import sys

from snakemake.logging import logger
from snakemake.utils import min_version

from ddrs.pipeline.config_files import config_file_problem

min_version("9.0")


# The embedded default, unless a --configfile is given (its experiment grid replaces, not extends,
# the default's: `--configfile config/paper.yaml` runs the paper only). A YAML mistake in it stops
# the run in one line naming its file and line (ddrs.pipeline.config_files; the workflow profile
# checks the --configfile files so).
if not workflow.overwrite_configfiles:
    DEFAULT_CONFIG_PROBLEM = config_file_problem("config/config.yaml")
    if DEFAULT_CONFIG_PROBLEM:
        logger.error(DEFAULT_CONFIG_PROBLEM)
        sys.exit(1)

    configfile: "config/config.yaml"


include: "rules/config.smk"
include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/train.smk"
include: "rules/certify.smk"
include: "rules/audit.smk"
include: "rules/tables.smk"
include: "rules/published.smk"


report: "report/workflow.rst"


rule all:
    default_target: True
    input:
        EXP.tables(),
        EXP.figures(),
