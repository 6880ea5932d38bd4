# The config's checks before any job: each refusal names the file that set its key, in a few
# lines (ddrs.pipeline.validation); Snakemake's validate fills every key left out; then the
# experiment the config designs (EXP) is checked, and the inputs a job would miss are named.
import sys
from pathlib import Path

from snakemake.logging import logger
from snakemake.utils import validate

from ddrs.pipeline import Experiment
from ddrs.pipeline.catalogue import CATALOGUE
from ddrs.pipeline.config_files import configfile_problem
from ddrs.pipeline.missing_inputs import (
    missing_captions_message,
    missing_checkpoints_message,
    missing_data_message,
    missing_logs_message,
    missing_own_logs_message,
)
from ddrs.pipeline.validation import (
    ConfigError,
    ConfigSources,
    check_algorithm1_options,
    check_training_options,
    methods_left_out,
    schema_problems,
)

SCHEMA = Path(workflow.basedir) / "config/schema/config.schema.yaml"


def stop(message):
    """End the run before any job with `message` alone: an error raised in a workflow file prints
    after a line naming that file and line, and before its frame."""
    logger.error(message)
    sys.exit(1)


# A target after --configfile is read as a config file: name it and the fix. (The workflow profile
# names it before Snakemake reads the config files; this holds where --workflow-profile replaces it.)
CONFIGFILE_PROBLEM = configfile_problem(
    workflow.overwrite_configfiles, config.get("results", "results")
)
if CONFIGFILE_PROBLEM:
    stop(CONFIGFILE_PROBLEM)
# Each problem on one line after the file that set its key (never the whole schema); then
# Snakemake's validate fills every key the config leaves out with the schema's default.
SOURCES = ConfigSources.read(
    workflow.overwrite_configfiles or workflow.configfiles,
    workflow.config_settings.config,
)
PROBLEMS = schema_problems(config, SCHEMA, SOURCES)
if PROBLEMS:
    stop("\n".join(PROBLEMS))
validate(config, str(SCHEMA), set_default=True)
# What the schema cannot say (ddrs.pipeline.validation), before any job runs: the experiment the
# config designs, every run's training options and Algorithm 1 settings; a config the library
# refuses is named in its one message, after the file that set its key (every config file, where
# the message names a run, not a key), without the library's traceback.
try:
    EXP = Experiment(config)
    check_training_options(EXP)
    check_algorithm1_options(EXP)
except ConfigError as error:
    stop(SOURCES.refusal(error))
except ValueError as error:
    stop(SOURCES.named((), str(error)))
for line in methods_left_out(EXP.grid):
    logger.warning(line)
# Published checkpoints are downloaded by hand, ImageNet too, given logs put in place by hand,
# captions written by hand: name each missing one before building the DAG.
CONFIGFILES = [str(path) for path in workflow.overwrite_configfiles] or [
    "config/config.yaml"
]
MISSING = (
    missing_checkpoints_message(EXP.grid, CONFIGFILES)
    or missing_data_message(EXP.grid, EXP.runs(), CONFIGFILES)
    or missing_logs_message(EXP.grid)
    or missing_own_logs_message(EXP)
    or missing_captions_message(CATALOGUE, Path(workflow.basedir) / "report")
)
if MISSING:
    stop(MISSING)
