"""Published logs with the logs already local: today's ``ddrs table`` per log against the published-logs path,
and the whole published config (``config/published.yaml``) run from local mirrors.

1. Brings every registry log into a cache from local mirrors (``--mirrors``: one folder per repository,
   ``<owner>+<name>/repo`` holding a git directory or a checkout, as the ``fetch`` tool lays them out).
2. On the same ``--logs`` CIFAR-10 logs of 10,000 rows: ``ddrs table LOG`` once per log (a process
   each, as a script would call it today), and the new path in one process (the leaderboard and its
   comparisons with Gaussian, rendered as the workflow renders them). Both times include start-up.
3. The new path on a whole dataset's leaderboard (``--dataset``), per log.
4. Unless ``--no-dag``: ``snakemake --cores N --configfile config/published.yaml <mirrors>`` in a
   scratch directory whose cache already holds the logs: the whole published config's wall time.
   With ``--no-dag`` it projects that from step 3 instead.

Prints the figures side by side and writes them as JSON (``--json``); asserts nothing.

    PYTHONPATH=src .venv/bin/python benchmarks/published_logs.py --mirrors ~/mirrors [--cores 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from _report import add_json_option, write_report

REPO = Path(__file__).resolve().parents[1]
#: a new-path run over given logs, in a fresh interpreter (start-up counted as for `ddrs table`)
NEW_PATH = """
import sys, time
from ddrs.analysis.metrics import paper_radii
from ddrs.analysis.render import write_table
from ddrs.published.gaussian_comparisons import gaussian_comparisons_table
from ddrs.published.leaderboard import leaderboard_table, load_entries
from ddrs.published.log_registry import load_registry, select

cache, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
registry = load_registry()
chosen = registry[(registry["repository"] + ":" + registry["path"]).isin(names)]
files = {(r.repository, r.path): f"{cache}/{r.repository}/{r.commit}/{r.path}" for r in chosen.itertuples()}
dataset = chosen["dataset"].iloc[0]
entries = load_entries(chosen, dataset, files)
radii = paper_radii(dataset)
write_table(leaderboard_table(entries, dataset, radii), f"{out}/leaderboard.csv", bold=False)
write_table(gaussian_comparisons_table(entries, dataset, radii), f"{out}/vs_gaussian.csv")
"""


def seconds(command: list[str], **options) -> float:
    began = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, **options)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])} … failed:\n{result.stderr[-2000:]}")
    return time.perf_counter() - began


def mirrors_of(folder: Path, repositories: list[str]) -> dict[str, str]:
    """Each repository's mirror under ``folder``: ``<owner>+<name>/repo/.git``, else ``…/repo``."""
    found = {}
    for repository in repositories:
        base = folder / repository.replace("/", "+") / "repo"
        mirror = base / ".git" if (base / ".git").is_dir() else base
        if not mirror.is_dir():
            raise SystemExit(f"no mirror of {repository} at {base}: fetch it (the fetch tool) or leave out --mirrors")
        found[repository] = str(mirror)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="folder of <owner>+<name>/repo mirrors")
    parser.add_argument("--cache", type=Path, default=None, help="log cache (default: a scratch folder)")
    parser.add_argument("--logs", type=int, default=7, help="CIFAR-10 logs of 10,000 rows timed both ways")
    parser.add_argument("--dataset", default="cifar10", help="the leaderboard timed per log")
    parser.add_argument("--cores", type=int, default=2, help="snakemake --cores of the whole-config run")
    parser.add_argument("--no-dag", action="store_true", help="project the whole config instead of running it")
    add_json_option(parser)
    args = parser.parse_args()

    from ddrs.published.fetch import fetch_logs
    from ddrs.published.log_registry import load_registry, published_logs

    scratch = Path(tempfile.mkdtemp(prefix="published_logs_benchmark_"))
    cache = (args.cache or scratch / "cache").resolve()
    registry = load_registry()
    mirrors = mirrors_of(args.mirrors, list(dict.fromkeys(registry["repository"])))
    began = time.perf_counter()
    fetch_logs(published_logs(registry), cache, mirrors=mirrors, base_url=None, progress=False)
    fetched = time.perf_counter() - began

    python = sys.executable
    ddrs = str(Path(python).with_name("ddrs"))
    environment = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    full = registry[(registry["dataset"] == "cifar10") & (registry["rows"] == 10_000) & (registry["split"] == "test")]
    full = full.drop_duplicates("sha256").head(args.logs)
    paths = [str(cache / r.repository / r.commit / r.path) for r in full.itertuples()]
    names = [f"{r.repository}:{r.path}" for r in full.itertuples()]
    today = [seconds([ddrs, "table", path, "--out", str(scratch / f"table{k}.csv")]) for k, path in enumerate(paths)]
    today_all = seconds([ddrs, "table", *paths, "--out", str(scratch / "table_all.csv")])
    (scratch / "new").mkdir()
    new = seconds([python, "-c", NEW_PATH, str(cache), str(scratch / "new"), *names], env=environment)

    board = f"""
import time
from ddrs.analysis.metrics import paper_radii
from ddrs.published.gaussian_comparisons import gaussian_comparisons_table
from ddrs.published.leaderboard import leaderboard_table, load_entries
from ddrs.published.log_registry import load_registry, published_logs
registry = load_registry()
logs = published_logs(registry)
files = {{(l.repository, l.path): f"{cache}/{{l.repository}}/{{l.commit}}/{{l.path}}" for l in logs}}
began = time.perf_counter()
entries = load_entries(registry, "{args.dataset}", files)
read = time.perf_counter() - began
leaderboard_table(entries, "{args.dataset}", paper_radii("{args.dataset}"))
gaussian_comparisons_table(entries, "{args.dataset}", paper_radii("{args.dataset}"))
print(len(entries), read, time.perf_counter() - began)
"""
    result = subprocess.run([python, "-c", board], capture_output=True, text=True, env=environment, check=True)
    board_logs, board_read, board_total = result.stdout.split()
    board_logs, board_read, board_total = int(board_logs), float(board_read), float(board_total)

    figures = {
        "registry_logs": len(registry),
        "fetch_from_mirrors_s": round(fetched, 1),
        "logs_compared": len(paths),
        "ddrs_table_s_per_log": round(sum(today) / len(today), 2),
        f"ddrs_table_s_all_{len(paths)}_logs": round(today_all, 2),
        "new_path_s_per_log": round(new / len(paths), 2),
        f"new_path_s_all_{len(paths)}_logs": round(new, 2),
        f"{args.dataset}_leaderboard_logs": board_logs,
        f"{args.dataset}_read_s": round(board_read, 1),
        f"{args.dataset}_leaderboard_and_comparisons_s": round(board_total, 1),
        f"{args.dataset}_s_per_log": round(board_total / board_logs, 4),
        "ddrs_table_projected_s_all_registry_logs": round(sum(today) / len(today) * len(registry)),
    }
    if args.no_dag:
        # the audit reads every log once; each leaderboard dataset's four jobs read its logs four times
        figures["published_config_projected_s"] = round(fetched + 4 * board_total / board_logs * len(registry))
    else:
        work = scratch / "dag"
        work.mkdir()
        overlay = {"published_logs": {"offline": True, "mirrors": mirrors, "cache": str(cache)}}
        (work / "mirrors.yaml").write_text(yaml.safe_dump(overlay))
        command = [python, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(work)]
        command += [
            "--cores",
            str(args.cores),
            "--configfile",
            str(REPO / "config" / "published.yaml"),
            str(work / "mirrors.yaml"),
        ]
        figures["published_config_measured_s"] = round(seconds(command, cwd=work, env=environment), 1)
        figures["published_config_cores"] = args.cores
        figures["published_config_results"] = str(work / "results_published")

    width = max(map(len, figures))
    print(f"{'':{width}}  (logs already local; times include interpreter start-up)")
    for key, value in figures.items():
        print(f"{key:{width}}  {value}")
    write_report("published_logs", figures, args.json)


if __name__ == "__main__":
    main()
