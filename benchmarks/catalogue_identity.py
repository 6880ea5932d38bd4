"""Do two commits build the same tables and figures from the same logs? Every catalogue entry, forced.

Issue 58 asks that a refactoring change no output byte. Re-running two whole DAGs compares their
training and certification too (their own figures: ``make all``'s rows in ``benchmarks/measured/``);
this isolates the last layer. One finished results tree (logs, models, records) is copied once per
checkout, and in each copy every rule of that checkout's catalogue (:mod:`ddrs.pipeline.catalogue`)
is forced and nothing else may run (``--forceall`` with ``--allowed-rules``: the catalogue's rule names
and ``all``, the default target; every other job's outputs count as given). Then every file under
``results/tables`` and ``results/figures`` is compared byte by byte: the same, differing (with the first
difference of a text file), or built by one side only (an entry the other commit does not have).
Provenance records (``*.provenance.json``, issue 56) name the code that wrote them and so differ by
design; they are counted apart.

    PYTHONPATH=src .venv/bin/python benchmarks/catalogue_identity.py --old CHECKOUT --new CHECKOUT \\
        --tree FINISHED_RUN --scratch DIR [--configfile config/digits.yaml] [--cores 2]

Each checkout's own ``src`` is put first on ``PYTHONPATH``; both use this interpreter's Snakemake.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _report import add_json_option, write_report
from tabulate import tabulate

#: the directories of a results tree the catalogue writes
BUILT = ("tables", "figures")
PROVENANCE = ".provenance.json"


def catalogue_rules(checkout: Path) -> list[str]:
    """The rule names of ``checkout``'s catalogue, asked of its own code."""
    names = subprocess.run(
        [sys.executable, "-c", "from ddrs.pipeline.catalogue import CATALOGUE\nprint(*CATALOGUE)"],
        env={**os.environ, "PYTHONPATH": str(checkout / "src")},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not names:
        raise SystemExit(f"{checkout}: its ddrs.pipeline.catalogue names no entries")
    return names


def force_catalogue(checkout: Path, tree: Path, workdir: Path, configfile: str, cores: int) -> dict:
    """Copy ``tree``'s results and data into ``workdir`` and force ``checkout``'s catalogue there."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    for part in ("results", "data"):
        if (tree / part).is_dir():
            shutil.copytree(tree / part, workdir / part, symlinks=True)
    for part in BUILT:
        shutil.rmtree(workdir / "results" / part, ignore_errors=True)
    rules = catalogue_rules(checkout)
    command = [
        sys.executable, "-m", "snakemake", "-s", str(checkout / "Snakefile"), "-d", str(workdir),
        "--cores", str(cores), "--keep-going", "--forceall", "--allowed-rules", *rules, "all",
        "--configfile", str(checkout / configfile),
    ]  # fmt: skip
    start = time.perf_counter()
    run = subprocess.run(
        command,
        cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout / "src")},
        capture_output=True,
        text=True,
    )
    (workdir / "snakemake.log").write_text(run.stdout + run.stderr)
    return {"rules": len(rules), "returncode": run.returncode, "seconds": round(time.perf_counter() - start, 1)}


def built_files(workdir: Path) -> dict[str, Path]:
    """Every file the catalogue wrote, by its path under ``results/``."""
    results = workdir / "results"
    return {
        str(path.relative_to(results)): path
        for part in BUILT
        for path in sorted((results / part).rglob("*"))
        if path.is_file()
    }


def first_difference(old: Path, new: Path) -> str:
    """The first differing line of two text files, or how two binary files differ in size."""
    try:
        old_lines, new_lines = old.read_text().splitlines(), new.read_text().splitlines()
    except UnicodeDecodeError:
        return f"binary: {old.stat().st_size} against {new.stat().st_size} bytes"
    for number, (before, after) in enumerate(zip(old_lines, new_lines, strict=False), start=1):
        if before != after:
            at = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b), len(before))
            start = max(at - 40, 0)
            return f"line {number}, column {at + 1}: {before[start : at + 80]!r} → {after[start : at + 80]!r}"
    return f"{len(old_lines)} against {len(new_lines)} lines"


def compare(old: dict[str, Path], new: dict[str, Path]) -> dict:
    """Byte comparison of the files both sides built; provenance records apart."""
    provenance_records = sum(name.endswith(PROVENANCE) for name in new)
    old, new = ({name: path for name, path in files.items() if not name.endswith(PROVENANCE)} for files in (old, new))
    shared = sorted(old.keys() & new.keys())
    differing = {
        name: first_difference(old[name], new[name])
        for name in shared
        if not filecmp.cmp(old[name], new[name], shallow=False)
    }
    return {
        "compared": len(shared),
        "identical": len(shared) - len(differing),
        "differing": differing,
        "old_only": sorted(old.keys() - new.keys()),
        "new_only": sorted(new.keys() - old.keys()),
        "provenance_records": provenance_records,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="the checkout before the change")
    parser.add_argument("--new", type=Path, required=True, help="the checkout after it")
    parser.add_argument("--tree", type=Path, required=True, help="a finished run's directory (its results/ and data/)")
    parser.add_argument("--scratch", type=Path, required=True, help="where the two copies go (emptied first)")
    parser.add_argument("--configfile", default="config/config.yaml", help="relative to each checkout")
    parser.add_argument("--cores", type=int, default=2)
    add_json_option(parser)
    args = parser.parse_args()
    runs, files = {}, {}
    for side in ("old", "new"):
        workdir = args.scratch.resolve() / side
        checkout = getattr(args, side).resolve()
        run = runs[side] = force_catalogue(checkout, args.tree.resolve(), workdir, args.configfile, args.cores)
        files[side] = built_files(workdir)
        built = len(files[side])
        print(f"{side}: {run['rules']} rules forced, exit {run['returncode']}, {run['seconds']} s, {built} built")
    result = compare(files["old"], files["new"])
    counts = [
        result["compared"],
        result["identical"],
        *map(len, map(result.get, ("differing", "old_only", "new_only"))),
    ]
    print(tabulate([counts], headers=["compared", "byte-identical", "differing", "old only", "new only"]))
    for name, difference in result["differing"].items():
        print(f"differs: {name}: {difference}")
    for side in ("old_only", "new_only"):
        for name in result[side]:
            print(f"{side.replace('_', ' ')}: {name}")
    figures = {"tree": str(args.tree), "configfile": args.configfile, "runs": runs, **result}
    write_report("catalogue_identity", figures, args.json)
    if any(run["returncode"] for run in runs.values()):
        raise SystemExit(f"a forced run failed: see {args.scratch}/<side>/snakemake.log")


if __name__ == "__main__":
    main()
