# Thin lookups into the experiment design and the job plan (ddrs.pipeline, unit-tested). Nothing
# here decides what the paper needs or builds a command line.
import json
import re
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from ddrs.pipeline import Experiment
from ddrs.pipeline.audit_plan import AuditPlan
from ddrs.pipeline.job_plan import JobPlan
from ddrs.pipeline.layout import REPLICATE_PATTERN, SCALE_PATTERN, run_file
from ddrs.pipeline.missing_inputs import (
    missing_captions_message,
    missing_checkpoints_message,
    missing_data_message,
    missing_own_logs_message,
    missing_logs_message,
)
from ddrs.pipeline.validation import (
    ConfigError,
    check_algorithm1_options,
    check_training_options,
    methods_left_out,
)
from ddrs.methods import METHODS
from ddrs.pipeline.catalogue import CATALOGUE
from ddrs.pipeline.resources import job_minutes
from ddrs.pipeline.target import REPORTED

# What the schema cannot say (ddrs.pipeline.validation), before any job runs: a config the
# library refuses is named in its one message, after the file that set its key (every config
# file, where the message names a run, not a key), without the library's traceback.
try:
    EXP = Experiment(config)
    check_training_options(EXP)
    check_algorithm1_options(EXP)
except ConfigError as error:
    stop(SOURCES.named(error.key, str(error)))
except ValueError as error:
    stop(SOURCES.named((), str(error)))
PLAN = JobPlan(EXP.grid)
AUDIT = AuditPlan(EXP)
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
LAYOUT = EXP.layout
RESULTS = config["results"]
# A logs-only config (every dataset `source: logs`) may leave out what only computing jobs read.
GPUS = config.get("gpus_per_job", 0)
THREADS = config.get("threads_per_job", 1)

# Path patterns of one base classifier's directory and job name, from the one layout.
RUN = LAYOUT.run_dir("{dataset}", "{method}", "{mode}", "{sigma}", "{replicate}")
JOB = LAYOUT.job("{dataset}", "{method}", "{mode}", "{sigma}", "{replicate}")
MODEL = LAYOUT.model("{dataset}", "{method}", "{mode}", "{sigma}", "{replicate}")


wildcard_constraints:
    dataset="|".join(EXP.grid.datasets),
    method="|".join(
        re.escape(name)
        for method in METHODS.values()
        for name in (method.name, *method.variants(), *method.matched_variants())
    ),
    mode="fs|ds",
    sigma=SCALE_PATTERN,
    replicate=REPLICATE_PATTERN,
    k=r"[0-9]+",
    draw=r"[0-9]+",
    n=r"[0-9]+",


def run_of(wildcards):
    """The run a job's wildcards name, looked up in the experiment (no number parsed back)."""
    try:
        return EXP.run_at(
            wildcards.dataset,
            wildcards.method,
            wildcards.mode,
            wildcards.sigma,
            wildcards.replicate,
        )
    except ValueError as error:
        raise WorkflowError(str(error)) from None


def data_marker(wildcards):
    """The prepare_data output every job reading a dataset waits for."""
    return LAYOUT.data_marker(wildcards.dataset)


# --- training ---


def train_inputs(wildcards):
    """The dataset, and the fixed-σ model a DS² run fine-tunes (published, or ds_fine_tune)."""
    inputs = {"data": data_marker(wildcards)}
    init = EXP.training.init_run(run_of(wildcards))
    if init is not None:
        inputs["init"] = LAYOUT.model(*init.wildcards)
    return inputs


def train_options(wildcards):
    """The `ddrs train --config -` mapping of one model, as JSON (YAML reads it): every option that
    decides its weights, the model it fine-tunes (`init`) included. A function of the wildcards
    alone, so Snakemake compares it and re-trains the model when it changes."""
    return json.dumps(EXP.training.train_options(run_of(wildcards)), sort_keys=True)


def train_speed(wildcards, threads):
    """The `ddrs train --speed` mapping: what changes how fast the model trains, never its weights.
    It depends on the job's threads, so Snakemake 9 counts it as derived and does not compare it.
    """
    return json.dumps(
        EXP.training.train_speed(run_of(wildcards), threads), sort_keys=True
    )


# --- certification-side jobs: each hands `ddrs job --config -` its document (ddrs.pipeline.job_plan) ---


def job_document(name, **given):
    """The JSON document of one job of the plan (``JobPlan.<name>``), for `ddrs job --config -`."""
    return lambda wildcards: json.dumps(
        getattr(PLAN, name)(
            run_of(wildcards), **{k: wildcards[v] for k, v in given.items()}
        )
    )


def job_speed(wildcards, resources):
    """The `ddrs job --speed` mapping (``JobPlan.speed``): what changes only how fast the job runs.
    It reads the job's resources, so Snakemake 9 counts it as derived and does not compare it: an
    edit of certify.batch re-runs nothing."""
    return json.dumps(PLAN.speed(run_of(wildcards)), sort_keys=True)


#: The shell of a job that writes a σ log (Algorithm 1's or the grid search's), certifies at it and
#: makes each certificate sound with Algorithm 3: the data-dependent and grid-search rules.
SIGMA_LOG_SHELL = (
    "echo {params.document:q} | ddrs --threads {threads} job --config - --speed {params.speed:q} "
    "--checkpoint {input.model} --sigma-log {output.sigmas} --out {output.certified} "
    "--memory-out {output.memory} 2> {log}"
)


def audit_document(wildcards):
    """The JSON document of a certificate audit (``AuditPlan.document``), for `ddrs audit --config -`: of
    the run's fixed-σ log, or of its log at Algorithm 1's ``{k}``."""
    k = int(wildcards.k) if "k" in wildcards.keys() else None
    return json.dumps(AUDIT.document(run_of(wildcards), k))


def certify_runtime(wildcards, passes=1):
    return job_minutes(EXP.grid, "certify", wildcards.dataset, passes)


def train_runtime(wildcards):
    return job_minutes(EXP.grid, "train", wildcards.dataset)
