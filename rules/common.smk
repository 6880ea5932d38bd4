# Thin lookups into the experiment design (ddrs.pipeline, unit-tested) and the command-line
# flags of each job. Nothing here decides what the paper needs.
import json
import re
from pathlib import Path

from snakemake.exceptions import WorkflowError

from ddrs.pipeline import Experiment, Run
from ddrs.pipeline.layout import run_file
from ddrs.pipeline.missing_inputs import (
    missing_checkpoints_message,
    missing_logs_message,
)
from ddrs.pipeline.validation import (
    check_algorithm1_options,
    check_integers,
    check_training_options,
)
from ddrs.methods import METHODS, get_method
from ddrs.pipeline.catalogue import CATALOGUE
from ddrs.pipeline.resources import job_minutes
from ddrs.pipeline.target import REPORTED

# What the schema cannot say (ddrs.pipeline.validation), before any job runs.
check_integers(config, Path(workflow.basedir) / SCHEMA)
EXP = Experiment(config)
check_training_options(EXP)
check_algorithm1_options(EXP)
# Published checkpoints are downloaded by hand, given logs put in place by hand: name each missing
# one before building the DAG.
MISSING = missing_checkpoints_message(
    EXP.grid,
    [str(path) for path in workflow.overwrite_configfiles] or ["config/config.yaml"],
) or missing_logs_message(EXP.grid)
if MISSING:
    raise WorkflowError(MISSING)
LAYOUT = EXP.layout
RESULTS = config["results"]
# A logs-only config (every dataset `source: logs`) may leave out what only computing jobs read.
GPUS = config.get("gpus_per_job", 0)
THREADS = config.get("threads_per_job", 1)
CERT = config.get("certify", {})
OPT = config.get("optimize_sigma", {})
GRID = config.get("grid_search", {})

# Path patterns of one base classifier's directory and job name, from the one layout.
RUN = LAYOUT.run_dir("{dataset}", "{method}", "{mode}", "{sigma}")
JOB = LAYOUT.job("{dataset}", "{method}", "{mode}", "{sigma}")
MODEL = LAYOUT.model("{dataset}", "{method}", "{mode}", "{sigma}")


wildcard_constraints:
    dataset="|".join(EXP.grid.datasets),
    method="|".join(
        re.escape(name)
        for method in METHODS.values()
        for name in (method.name, *method.variants(), *method.matched_variants())
    ),
    mode="fs|ds",
    sigma=r"[0-9.]+",
    k=r"[0-9]+",
    n=r"[0-9]+",


def run_of(wildcards):
    return Run(
        wildcards.dataset, wildcards.method, wildcards.mode, float(wildcards.sigma)
    )


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
    """The `ddrs train --config -` mapping of one model, as JSON (YAML reads it)."""
    return json.dumps(EXP.training.train_options(run_of(wildcards)), sort_keys=True)


def init_flag(wildcards, input):
    return f"--init {input.init}" if "init" in input.keys() else ""


# --- certification ---


def objective_args():
    """Algorithm 1's objective and clamp, the same for Algorithm 1 and the grid search."""
    clamp = f" --clamp {OPT['clamp']}" if "clamp" in OPT else ""
    return f"--objective {OPT['objective']}{clamp}"


def job_args(wildcards):
    """Flags every certification-side job shares: data, noise, test subset, seed, device."""
    spec = EXP.grid.datasets[wildcards.dataset]
    subset = f"--skip {spec.get('test_skip', 1)}" + (
        f" --max {spec['test_max']}" if spec.get("test_max") else ""
    )
    return (
        f"--dataset {wildcards.dataset} --data-root {config['data_root']} "
        f"--noise {get_method(wildcards.method).noise} {subset} "
        f"--seed {config['seed']} --device {config['device']} --precision {config['precision']}"
    )


def certify_args(wildcards):
    """Cohen's CERTIFY statistics (n0, n, α), the forward batch (auto when none), layout and compilation."""
    layout = (
        f" --memory-format {CERT['memory_format']}" if "memory_format" in CERT else ""
    )
    compiled = " --compile" if CERT.get("compile") else ""
    mode = (
        f" {sequential_args(wildcards)}"
        if CERT.get("mode", "fixed") == "sequential"
        else ""
    )
    return (
        f"{job_args(wildcards)} --n0 {CERT['n0']} --n {CERT['n']} --alpha {CERT['alpha']} "
        f"--batch {CERT.get('batch', 'auto')}{layout}{compiled}{mode}"
    )


# --- issue 40: sequential certification (certify.mode, certify.sequential) ---
def sequential_args(wildcards):
    """--mode sequential with the config's stopping rule and the dataset's radius grid of the
    method's norm (ℓ2 `radii`, ℓ1 `l1_radii`)."""
    stopping = CERT.get("sequential", {})
    norm = get_method(wildcards.method).norm
    radii = EXP.grid.radii(norm)[wildcards.dataset]
    acr = (
        f" --acr-fraction {stopping['acr_fraction']}"
        if stopping.get("acr_fraction")
        else ""
    )
    return (
        f"--mode sequential --sequence {stopping.get('sequence', 'betting')} "
        f"--radii {' '.join(map(str, radii))} --first-look {stopping.get('first_look', 32)} "
        f"--growth {stopping.get('growth', 1.1)}{acr}"
    )


def sequential_certify_args(wildcards):
    """The comparison's sequential log: the fixed-σ job's arguments, sequential whatever certify.mode."""
    fixed = fixed_certify_args(wildcards)
    return (
        fixed
        if CERT.get("mode", "fixed") == "sequential"
        else f"{fixed} {sequential_args(wildcards)}"
    )


# --- end issue 40 ---


def scale(wildcards):
    return EXP.grid.smoothing_scale(
        wildcards.dataset, wildcards.method, wildcards.sigma
    )


def fixed_certify_args(wildcards):
    return f"{certify_args(wildcards)} --scale {scale(wildcards)}"


def optimize_args(wildcards):
    """Algorithm 1: σ₀ = the training σ, snapshots at every K of the model's grid."""
    ks = EXP.grid.k_grid(wildcards.dataset, wildcards.method, wildcards.mode)
    return (
        f"{job_args(wildcards)} --sigma0 {scale(wildcards)} --k {' '.join(map(str, ks))} "
        f"--n {EXP.grid.algorithm1_n(wildcards.method)} --lr {OPT['lr']} --n0 {OPT['n0']} "
        f"--min-sigma {OPT['min_sigma']} --batch {OPT['batch']} {objective_args()}"
    )


def grid_search_args(wildcards):
    """Appendix B: a σ grid at Algorithm 1's evaluation budget, n draws per grid point."""
    return (
        f"{job_args(wildcards)} --sigma0 {scale(wildcards)} "
        f"--grid-search --grid-n {wildcards.n} --grid-budget {GRID['budget']} "
        f"--grid-min {GRID['low']} --grid-max {GRID['high']} --n0 {OPT['n0']} --batch {OPT['batch']} "
        f"{objective_args()}"
    )


def certify_runtime(wildcards, passes=1):
    return job_minutes(EXP.grid, "certify", wildcards.dataset, passes)


def train_runtime(wildcards):
    return job_minutes(EXP.grid, "train", wildcards.dataset)


def gradient_norm_args(wildcards):
    """Sun et al. (2024) Table 1: each model's own loss, its noise at the training σ, 100 draws for p_A."""
    return (
        f"--dataset {wildcards.dataset} --data-root {config['data_root']} --sigma {scale(wildcards)} "
        f"--method {wildcards.method} --seed {config['seed']} --device {config['device']} "
        f"--precision {config['precision']} --skip {config['sun2024'].get('gradient_norm_skip', 1)}"
    )
