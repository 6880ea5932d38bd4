# Thin lookups into the experiment design (EXP, checked in rules/config.smk) and the job plan
# (ddrs.pipeline, unit-tested): wildcards to runs and inputs, each job's JSON document and what
# changes only its speed. Nothing here checks the config, decides what the paper needs or builds a
# command line.
import json
import re

from snakemake.exceptions import WorkflowError

from ddrs.methods import METHODS
from ddrs.pipeline.audit_plan import AuditPlan
from ddrs.pipeline.job_plan import JobPlan
from ddrs.pipeline.layout import REPLICATE_PATTERN, SCALE_PATTERN, run_file
from ddrs.pipeline.resources import job_minutes

PLAN = JobPlan(EXP.grid)
AUDIT = AuditPlan(EXP)
LAYOUT = EXP.layout
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
    It reads the job's threads, so Snakemake counts it as derived and does not compare it (job_speed).
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
    `resources` is unread: a param function that takes input, output, threads or resources is
    "derived", and Snakemake leaves derived params out of the params it compares to decide a re-run
    (its changelog, 8.23.2: "ignore derived parameters when ... inferring rerun necessity of jobs",
    #3154; 9.1.5, #3507), so an edit of certify.batch re-runs nothing. tests/test_workflow_rerun.py
    and tests/test_speed_keys.py hold it against the installed Snakemake."""
    return json.dumps(PLAN.speed(run_of(wildcards)), sort_keys=True)


def audit_document(wildcards):
    """The JSON document of a certificate audit (``AuditPlan.document``), for `ddrs audit --config -`: of
    the run's fixed-σ log, or of its log at Algorithm 1's ``{k}``."""
    k = int(wildcards.k) if "k" in wildcards.keys() else None
    return json.dumps(AUDIT.document(run_of(wildcards), k))


def certify_runtime(wildcards, passes=1):
    return job_minutes(EXP.grid, "certify", wildcards.dataset, passes)


def train_runtime(wildcards):
    return job_minutes(EXP.grid, "train", wildcards.dataset)
