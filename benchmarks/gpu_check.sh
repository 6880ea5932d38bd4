#!/usr/bin/env bash
# The whole GPU-machine visit of issue 36 in one run: install ddrs from carried wheels, run the tests
# that exercise CUDA paths, and time gpu_throughput.py's sections, within 8 minutes.
#
#   bash benchmarks/gpu_check.sh [--quick] [--only STEP,...] [--fail STEP]
#   bash benchmarks/gpu_check.sh --prepare-wheels
#
# Steps, in this order, each under its own `timeout` and all within GPU_CHECK_BUDGET_S seconds
# (default 450, so that with a killed step's 15 s and the summary the run ends within 8 minutes).
# Each step has a share of the budget (LIMIT below; the shares sum to 440 s): its time limit is its
# share plus whatever the steps before it left unused, so no step eats into a later one's share. A
# step that fails does not stop the others, and one the budget leaves no time for is reported as
# out_of_time:
#   install            pip install --no-index --no-deps --target $GPU_CHECK_SITE wheels/*.whl, then
#                      PYTHONPATH and PATH point there (ddrs, and what the GPU image lacks: snakemake,
#                      mlxtend, jsonschema, ...); with --quick, skipped when ddrs is importable
#   cuda_tests         pytest on the tests with CUDA paths: Philox streams, certification and its
#                      options, Algorithm 1 and its σ log, the device feed, the trainer's step,
#                      activation recomputation, GPU slots, and table1's DAG on CUDA, killed and
#                      resumed (tests/test_workflow_run.py, less the whole default DAG); with
#                      pytest-xdist, 12 workers, one test file each at a time
#   macer              gpu_throughput.py --sections macer (m = 64, batch 256: peak memory, gradients)
#   algorithm1         gpu_throughput.py --sections algorithm1 (K timed over 50 steps, batch 1,024)
#   training           gpu_throughput.py --sections training (196 batches of 256, five rounds)
#   certify_resnet110  gpu_throughput.py --sections cifar_resnet110 --n 50000 (seconds per input at n)
#   certify_sequential gpu_throughput.py --sections sequential --n 10000 (sequential CERTIFY's draws per
#                      second against fixed-n CERTIFY's, 256 inputs to the cap n = 10,000)
#   certify_resnet50   gpu_throughput.py --sections imagenet_resnet50 --imagenet-n 5000 (scaled to n = 100,000)
#   miniature          both paper configurations in miniature, every job of their DAGs (tests/miniature.py,
#                      as tests/test_miniature.py runs them on the CPU: `make test-slow`), here on CUDA under
#                      --profile profiles/gpu with tests/configs/miniature_cuda.yaml. What the CPU run does
#                      not prove: that every job of config/paper.yaml and config/seed_papers.yaml also runs
#                      on a GPU in bf16 (training, Algorithm 1 and CERTIFY: autocast on each network, the
#                      ImageNet ResNet-50 and the imported checkpoints included), with channels_last (the
#                      CUDA layout of models and batches), with the base classifier torch.compile'd in
#                      every certification and σ job, and one GPU per job (gpus_per_job: 1: each job takes
#                      a GPU slot of its own under the profile's gpu resource). Its share is 0: it runs in
#                      a call of its own, `--only install,miniature`, and takes whatever the budget has
#                      left (GPU_CHECK_BUDGET_S up to 590 for one 600 s call); a visit without --only skips
#                      it. With --quick: on the CPU, the seed papers' miniature to one trained model under
#                      the same profile (the step's code, not the GPU's)
#
# Options:
#   --quick            on the CPU (1–4 minutes): gpu_throughput.py --quick --device cpu --threads 1
#                      and three fast tests of the same files (this is what tests/test_gpu_check_script.py
#                      runs, so every step's code stays exercised). It checks that each step runs and
#                      writes its record, not how fast: the visit's limits do not apply, each step's
#                      share is a hang guard of QUICK_LIMIT (600 s; the quick steps took 28–53 s each on
#                      a 2-core machine at load 10, 6–11 s at load 2), the budget defaults to their sum
#                      and, as in the visit, a step also gets the time the steps before it left unused
#   --only A,B         run only these steps (a rerun of what failed); the steps left out pass their
#                      shares on, so a rerun of the compiled steps gets the whole budget (on a fresh
#                      H200 they compiled past their shares: benchmarks/measured/README.md)
#   --fail STEP        STEP fails at once instead of running (tests the failure path and the summary)
#   --prepare-wheels   on the CPU machine, with PyPI: fill wheels/ (below) and exit
#
# Environment: OUT (default benchmarks/results/gpu_check-<UTC time>), PYTHON (default .venv/bin/python
# if present, else python3), WHEELS (default wheels/, git-ignored), GPU_CHECK_SITE (default
# /tmp/gpu_check_site), GPU_CHECK_BUDGET_S (default 450; with --quick 8 × 600), COMMIT (recorded in the summary where the
# tree has no .git).
#
# Output under $OUT, at most 8 files (the device tool returns 8): gpu_check.log (every step's output,
# also printed), summary.json (commit, device, and per step: status passed/failed/timed_out/
# skipped/out_of_time, exit code, seconds, limit, command, record) and gpu_throughput-<step>.json
# (each benchmark step's record, as `gpu_throughput.py --json` writes it). Exit status 0 when no
# step failed, timed out or ran out of time; 1 otherwise; 2 for bad arguments.
#
# The wheels, prepared on the CPU machine (the GPU machine reaches no registry; its image has Python
# 3.12 with torch, torchvision, scipy, pandas, statsmodels and pytest):
#   bash benchmarks/gpu_check.sh --prepare-wheels
# which runs `pip wheel --no-deps --no-build-isolation .` (ddrs reads its own package metadata, so it
# is installed, not put on PYTHONPATH from src/) and, for each package of CARRIED below at the version
# this venv has, `pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
# --platform manylinux_2_28_x86_64 ... -d wheels/` (`pip wheel --no-deps` for a pure-Python package
# published without wheels); about 28 MB. Then, with the device tool:
#   run(command="COMMIT=<sha> bash benchmarks/gpu_check.sh", carry=["wheels"], timeout_s=540)
# and, for what failed, the same with `--only STEP,...`.

set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO" || exit 2

#: the requirement closure of ddrs[workflow] less what the GPU image holds (KINDS.md's list, 2026-11)
CARRIED=(
  mlxtend snakemake snakemake-executor-plugin-slurm snakemake-executor-plugin-slurm-jobstep
  snakemake-interface-common snakemake-interface-executor-plugins snakemake-interface-logger-plugins
  snakemake-interface-report-plugins snakemake-interface-scheduler-plugins snakemake-interface-storage-plugins
  jsonschema jsonschema-specifications referencing rpds-py annotated-types argparse-dataclass conda-inject
  configargparse connection-pool docutils dpath fastjsonschema gitdb gitpython smmap greenlet humanfriendly
  immutables jupyter-core nbformat platformdirs traitlets pulp pydantic pydantic-core typing-inspection
  smart-open sqlalchemy sqlmodel tenacity throttler yte
)
PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
  --platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64)
STEPS=(install cuda_tests macer algorithm1 training certify_resnet110 certify_sequential certify_resnet50 miniature)
#: each step's share of the budget in seconds, from the H100 figures of benchmarks/measured/ and the
#: compilations each step does; they sum to 440, the default budget less the 10 s kept for the summary
#: (miniature: 0, it takes what the budget has left in a call of its own)
declare -A LIMIT=([install]=20 [cuda_tests]=130 [macer]=25 [algorithm1]=35 [training]=60
  [certify_resnet110]=80 [certify_sequential]=50 [certify_resnet50]=40 [miniature]=0)
QUICK_LIMIT=600 # --quick: every step's hang guard, many times what a slow machine takes
CUDA_TESTS=(tests/test_streams.py tests/test_certification.py tests/test_certify_options.py tests/test_sigma.py
  tests/test_sigma_log.py tests/test_training_device_feed.py tests/test_training_trainer.py
  tests/test_training_recompute.py tests/test_device.py tests/test_workflow_run.py)
QUICK_TESTS="each_device_gets_its_kind_of_stream or unknown_device_is_a_clear_error or lock_dir_follows_the_environment"

QUICK=0 ONLY="" FAIL="" PREPARE=0 RUN_STEP=""
while (($#)); do
  case $1 in
    --quick) QUICK=1 ;;
    --run-step) RUN_STEP=${2:-} && shift ;; # internal: one step, as run_step runs it under `timeout`
    --only) ONLY=${2:-} && shift ;;
    --fail) FAIL=${2:-} && shift ;;
    --prepare-wheels) PREPARE=1 ;;
    -h | --help) sed -n '2,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" && exit 0 ;;
    *) echo "gpu_check.sh: unknown argument '$1'; see --help" >&2 && exit 2 ;;
  esac
  shift
done
for name in ${ONLY//,/ } $FAIL $RUN_STEP; do
  if [[ " ${STEPS[*]} " != *" $name "* ]]; then
    echo "gpu_check.sh: unknown step '$name'; the steps are: ${STEPS[*]}" >&2
    exit 2
  fi
done

if [[ -z ${PYTHON:-} ]]; then
  PYTHON=python3 && [[ -x .venv/bin/python ]] && PYTHON=$REPO/.venv/bin/python
fi
WHEELS=${WHEELS:-$REPO/wheels}
SITE=${GPU_CHECK_SITE:-/tmp/gpu_check_site}
export PYTHON WHEELS SITE PYTHONUNBUFFERED=1

prepare_wheels() {
  rm -rf "$WHEELS" && mkdir -p "$WHEELS" || return
  "$PYTHON" -m pip wheel -q --no-deps --no-build-isolation -w "$WHEELS" "$REPO" || return
  local pins
  pins=$("$PYTHON" -c 'import sys
from importlib.metadata import PackageNotFoundError, version
for name in sys.argv[1:]:
    try:
        print(f"{name}=={version(name)}")
    except PackageNotFoundError:
        print(name)' "${CARRIED[@]}") || return
  for pin in $pins; do
    "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      "${PLATFORMS[@]}" -d "$WHEELS" "$pin" 2>/dev/null ||
      "$PYTHON" -m pip wheel -q --no-deps -w "$WHEELS" "$pin" || return
  done
  du -sh "$WHEELS" && ls "$WHEELS" | wc -l
}
if ((PREPARE)); then
  prepare_wheels
  exit
fi

step_install() {
  shopt -s nullglob
  local wheels=("$WHEELS"/*.whl)
  if ((${#wheels[@]} == 0)); then
    echo "no wheels in $WHEELS: prepare them on the CPU machine (bash benchmarks/gpu_check.sh --prepare-wheels)"
    return 1
  fi
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
    "${wheels[@]}" || return
  PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} "$PYTHON" -c \
    'import ddrs, mlxtend, snakemake, jsonschema; from importlib.metadata import version; print("ddrs", version("ddrs"))' &&
    PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} "$PYTHON" -m snakemake --version
}

step_cuda_tests() {
  local options=(-q -p no:cacheprovider -rfE --durations 15)
  if ((QUICK)); then
    options+=(-k "$QUICK_TESTS")
  else
    options+=(-k "not whole_default_dag")
    "$PYTHON" -c "import xdist" 2>/dev/null && options+=(-n 12 --dist loadfile)
  fi
  "$PYTHON" -m pytest "${options[@]}" "${CUDA_TESTS[@]}"
}

# step_bench NAME SECTION [SIZE OPTION ...]: gpu_throughput.py's SECTION on CUDA at the sizes given, or
# with --quick on the CPU at its tiny quick sizes
step_bench() {
  local name=$1 section=$2 && shift 2
  local run=(--device cuda "$@")
  ((QUICK)) && run=(--quick --device cpu --threads 1)
  "$PYTHON" benchmarks/gpu_throughput.py --sections "$section" "${run[@]}" --json "$OUT/gpu_throughput-$name.json"
}

step_macer() { step_bench macer macer; }
step_algorithm1() { step_bench algorithm1 algorithm1; }
step_training() { step_bench training training; }
step_certify_resnet110() { step_bench certify_resnet110 cifar_resnet110 --n 50000; }
step_certify_sequential() { step_bench certify_sequential sequential --n 10000; }
step_certify_resnet50() { step_bench certify_resnet50 imagenet_resnet50 --imagenet-n 5000; }

# step_miniature: each paper configuration's miniature in a fresh folder under $GPU_CHECK_SITE, on CUDA
step_miniature() {
  local work=$SITE/miniature rc=0 name
  rm -rf "$work" && mkdir -p "$work" || return
  if ((QUICK)); then
    "$PYTHON" tests/miniature.py seed_papers "$work/seed_papers" results/cifar10/cohen/fs/sigma0.25/model.pt \
      --profile "$REPO/profiles/gpu" --config gpus_per_job=0
    return
  fi
  for name in paper seed_papers; do
    "$PYTHON" tests/miniature.py "$name" "$work/$name" --overlay tests/configs/miniature_cuda.yaml \
      --profile "$REPO/profiles/gpu" || rc=1
  done
  return $rc
}

if [[ -n $RUN_STEP ]]; then
  "step_$RUN_STEP"
  exit
fi

OUT=${OUT:-$REPO/benchmarks/results/gpu_check-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT" || exit 2
export OUT
LOG=$OUT/gpu_check.log
STATUS=$(mktemp)
trap 'rm -f "$STATUS"' EXIT
if ((QUICK)); then
  for name in "${STEPS[@]}"; do LIMIT[$name]=$QUICK_LIMIT; done
fi
BUDGET=${GPU_CHECK_BUDGET_S:-$((QUICK ? ${#STEPS[@]} * QUICK_LIMIT : 450))}
START=$(date +%s)
QUICK_FLAG=() && ((QUICK)) && QUICK_FLAG=(--quick)

SHARES=0 STEPS_START="" # the shares of the steps run so far, and when the first of them began

# run_step NAME: runs step_NAME under its time limit (its share plus what the steps before it left
# unused, within the budget), its output to the log and stdout; records its status
run_step() {
  local name=$1 status rc="" began=$SECONDS now
  now=$(date +%s) && STEPS_START=${STEPS_START:-$now}
  SHARES=$((SHARES + LIMIT[$name]))
  local left=$((BUDGET - (now - START) - 10)) limit=$((SHARES - (now - STEPS_START)))
  ((limit > left)) || [[ $name == miniature ]] && limit=$left
  echo "=== $name (limit ${limit} s) ===" | tee -a "$LOG"
  if [[ $name == "$FAIL" ]]; then
    echo "$name: failed on purpose (--fail $name)" | tee -a "$LOG"
    status=failed rc=1
  elif [[ $name == miniature && -z $ONLY ]] && ((!QUICK)); then
    echo "miniature: skipped, it needs a call of its own: --only install,miniature" | tee -a "$LOG"
    status=skipped
  elif ((limit < 15)); then
    echo "$name: not run, ${left} s of the ${BUDGET} s budget left" | tee -a "$LOG"
    status=out_of_time
  elif [[ $name == install ]] && ((QUICK)) && "$PYTHON" -c "import ddrs" 2>/dev/null; then
    echo "install: skipped, ddrs is importable (--quick)" | tee -a "$LOG"
    status=skipped
  else
    rm -f "$OUT/gpu_throughput-$name.json" # a record left by an earlier run is not this one's
    timeout --kill-after=15 "$limit" bash "${BASH_SOURCE[0]}" --run-step "$name" "${QUICK_FLAG[@]}" 2>&1 | tee -a "$LOG"
    rc=${PIPESTATUS[0]}
    case $rc in
      0) status=passed ;;
      124 | 137) status=timed_out ;;
      *) status=failed ;;
    esac
    if [[ $name == install && $status == passed ]]; then
      export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} PATH=$SITE/bin:$PATH
    fi
  fi
  echo "=== $name: $status after $((SECONDS - began)) s ===" | tee -a "$LOG"
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$status" "$rc" "$((SECONDS - began))" "$limit" >>"$STATUS"
}

DEVICE=$("$PYTHON" -c 'import platform, torch
gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA"
print(f"{gpu}, torch {torch.__version__}, Python {platform.python_version()}")' 2>&1)
echo "gpu_check.sh $(date -u +%FT%TZ): quick=$QUICK, budget ${BUDGET} s, $PYTHON: $DEVICE, out $OUT" | tee -a "$LOG"
for name in "${STEPS[@]}"; do
  if [[ -z $ONLY || ",$ONLY," == *",$name,"* ]]; then
    run_step "$name"
  else
    SHARES=$((SHARES + LIMIT[$name])) # a step --only leaves out passes its share on to the steps run
  fi
done

COMMIT=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
"$PYTHON" - "$STATUS" "$OUT" "$COMMIT" "$DEVICE" "$QUICK" "$BUDGET" "$SECONDS" <<'EOF' | tee -a "$LOG"
"""summary.json from the steps' status lines, and a table of them; exit 1 if any step did not pass."""
import json
import os
import sys
from pathlib import Path

status, out, commit, device, quick, budget, seconds = sys.argv[1:]
steps = []
for line in Path(status).read_text().splitlines():
    name, state, rc, taken, limit = line.split("\t")
    record = Path(out) / f"gpu_throughput-{name}.json"
    steps.append({
        "name": name, "status": state, "exit_code": int(rc) if rc else None, "seconds": int(taken),
        "limit_s": int(limit), "record": record.name if record.exists() else None,
    })
failed = [step["name"] for step in steps if step["status"] not in ("passed", "skipped")]
summary = {
    "commit": commit, "device": device, "quick": quick == "1", "budget_s": int(budget), "seconds": int(seconds),
    "steps": steps, "failed": failed,
}
path = Path(out) / "summary.json"
path.with_suffix(".tmp").write_text(json.dumps(summary, indent=2) + "\n")
os.replace(path.with_suffix(".tmp"), path)
for step in steps:
    print(f"{step['name']:<18} {step['status']:<12} {step['seconds']:>4} s  {step['record'] or ''}")
print(f"gpu_check: {len(steps) - len(failed)} of {len(steps)} steps passed or skipped" + (
    f"; rerun: bash benchmarks/gpu_check.sh --only {','.join(failed)}" if failed else ""))
sys.exit(1 if failed else 0)
EOF
exit "${PIPESTATUS[0]}"
