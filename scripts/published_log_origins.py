"""Regenerate ``src/ddrs/published/origins.csv`` (:mod:`ddrs.published.origins`) from local mirrors.

For every content (sha256) the registry lists under several names, the copy first committed: per
mirror, the earliest commit of the pinned history that adds each registered path (``git log
--no-renames --diff-filter=A``: a file moved counts from its move); among the copies, the earliest
date, ties to the first in registry order. A repository without a mirror is left out, with a
warning::

    python scripts/published_log_origins.py --mirrors ~/mirrors
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pandas as pd
from published_logs_registry import git_dir_in

from ddrs.io import atomic_path
from ddrs.published.log_registry import load_registry
from ddrs.published.origins import COLUMNS, ORIGINS_PATH


def first_added(git_dir: Path, commit: str) -> dict[str, tuple[str, str]]:
    """path → (commit, ISO date) of the earliest commit in ``commit``'s history that adds it."""
    log = subprocess.run(
        [
            "git",
            f"--git-dir={git_dir}",
            "log",
            "--no-renames",
            "--diff-filter=A",
            "--name-only",
            "--format=@%H %cI",
            commit,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    added: dict[str, tuple[str, str]] = {}
    current = ("", "")
    for line in log.splitlines():
        if line.startswith("@"):
            sha, date = line[1:].split(" ")
            current = (sha, date)
        elif line:
            added[line] = current  # newest first: the last one seen is the earliest
    return added


def origins(registry: pd.DataFrame, mirrors: dict[str, Path]) -> pd.DataFrame:
    """One row of :data:`COLUMNS` per sha256 the registry lists under several names."""
    history = {
        repository: first_added(mirrors[repository], commit)
        for repository, commit in registry[["repository", "commit"]].drop_duplicates().itertuples(index=False)
        if repository in mirrors
    }
    rows = []
    for sha256, copies in registry.groupby("sha256", sort=False):
        if len(copies) < 2:
            continue
        dated = [
            (history[c.repository][c.path][1], position, c, history[c.repository][c.path][0])
            for position, c in enumerate(copies.itertuples(index=False))
            if c.repository in history and c.path in history[c.repository]
        ]
        if not dated:
            print(f"warning: no mirror dates any copy of {sha256[:12]}", file=sys.stderr)
            continue
        date, _, copy, commit = min(dated, key=lambda item: (item[0], item[1]))
        rows.append([sha256, copy.repository, copy.path, commit, date])
    return pd.DataFrame(rows, columns=list(COLUMNS))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirrors", required=True, metavar="DIR", help="a folder of <owner>+<name> mirrors")
    parser.add_argument(
        "--registry", default=None, help="the registry whose copies to credit (default: the shipped one)"
    )
    parser.add_argument("--out", default=str(ORIGINS_PATH), help="the table to write (default: the shipped one)")
    args = parser.parse_args(argv)
    registry = load_registry(args.registry)
    mirrors = {}
    for repository in registry["repository"].unique():
        git_dir = git_dir_in(Path(args.mirrors) / repository.replace("/", "+"))
        if git_dir is None:
            print(f"warning: no mirror of {repository}", file=sys.stderr)
        else:
            mirrors[repository] = git_dir
    table = origins(registry, mirrors)
    with atomic_path(args.out) as tmp:
        table.to_csv(tmp, index=False)
    moved = sum(
        1
        for row in table.itertuples(index=False)
        if (
            registry[registry["sha256"] == row.sha256].iloc[0][["repository", "path"]].tolist()
            != [row.repository, row.path]
        )
    )
    print(
        f"{len(table)} contents with copies, {moved} credited to another copy than the first in registry order: "
        f"{args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
