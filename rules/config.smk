# The config's checks before any job: each refusal names the file that set its key, in a few
# lines (ddrs.pipeline.validation); then Snakemake's validate fills every key left out.
import sys
from pathlib import Path

from snakemake.logging import logger
from snakemake.utils import validate

from ddrs.pipeline.config_files import configfile_problem
from ddrs.pipeline.validation import ConfigSources, schema_problems

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
