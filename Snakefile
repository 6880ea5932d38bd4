# Data-Dependent Randomized Smoothing: every table and figure of the paper as a DAG target.
# Quick start: snakemake --cores all results/tables/table1.csv  (embedded mnist5k default)
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

from ddrs.pipeline.validation import schema_problems

min_version("9.0")


# The embedded default, unless a --configfile is given (its experiment grid replaces, not extends,
# the default's: `--configfile config/paper.yaml` runs the paper only).
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


SCHEMA = "config/schema/config.schema.yaml"


# One line per problem, naming its config key (never the whole schema); then Snakemake's validate
# fills every key the config leaves out with the schema's default (the embedded default's value).
PROBLEMS = schema_problems(config, Path(workflow.basedir) / SCHEMA)
if PROBLEMS:
    raise WorkflowError("\n".join(PROBLEMS))
validate(config, SCHEMA, set_default=True)


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/train.smk"
include: "rules/certify.smk"
include: "rules/tables.smk"
include: "rules/published.smk"


report: "report/workflow.rst"


rule all:
    default_target: True
    input:
        EXP.tables(),
        EXP.figures(),
