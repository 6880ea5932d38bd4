"""Regenerate the registry of published certification logs (``src/ddrs/published/logs.csv``) from local mirrors.

Each mirror is a git directory of one repository (the ``.git`` folder of a clone, or a bare clone);
its ``HEAD`` commit is the one the registry pins. Every file whose first line is Cohen et al.'s
header is a log, whatever its name; the per-repository rules of ``published_registry.rules`` (the
package beside this script, whose ``scan`` reads the mirrors) say what each is. The same mirrors give
a byte-identical file::

    python scripts/published_logs_registry.py --mirrors ~/mirrors
    python scripts/published_logs_registry.py --mirror locuslab/smoothing=/path/smoothing/.git --out /tmp/logs.csv

``--mirrors DIR`` takes ``DIR/<owner>+<name>`` for every repository with parse rules that is there:
``<owner>+<name>/repo/.git``, ``<owner>+<name>/repo`` (bare), ``<owner>+<name>/.git`` or the folder
itself as a bare repository. A log that no path rule parses is listed with empty fields and a warning.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from published_registry.rules import REPOSITORIES
from published_registry.scan import build_registry

from ddrs.errors import DDRSError
from ddrs.published.log_registry import REGISTRY_PATH


def git_dir_in(folder: Path) -> Path | None:
    """The git directory of a mirror folder laid out as the ``fetch`` tool leaves it, or None."""
    for candidate in (folder / "repo" / ".git", folder / "repo", folder / ".git", folder):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def mirrors_from(args: argparse.Namespace) -> dict[str, Path]:
    """``owner/name → git directory`` from ``--mirrors`` and ``--mirror`` (the latter wins)."""
    mirrors: dict[str, Path] = {}
    for root in args.mirrors or ():
        for name in sorted(REPOSITORIES):
            git_dir = git_dir_in(Path(root) / name.replace("/", "+"))
            if git_dir is not None:
                mirrors[name] = git_dir
    for item in args.mirror or ():
        name, sep, path = item.partition("=")
        if not sep or "/" not in name:
            raise DDRSError(f"--mirror {item!r}: write owner/name=GITDIR")
        mirrors[name] = Path(path)
    if not mirrors:
        raise DDRSError(
            "no mirror found: give --mirror owner/name=GITDIR or --mirrors DIR holding "
            f"<owner>+<name> folders of {', '.join(sorted(REPOSITORIES))}"
        )
    return mirrors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", action="append", metavar="OWNER/NAME=GITDIR", help="one repository's git dir")
    parser.add_argument("--mirrors", action="append", metavar="DIR", help="a folder of <owner>+<name> mirrors")
    parser.add_argument("--out", default=str(REGISTRY_PATH), help="the registry to write (default: the shipped one)")
    args = parser.parse_args(argv)
    try:
        mirrors = mirrors_from(args)
        rows = build_registry(mirrors, args.out)
    except DDRSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for name in sorted(mirrors):
        print(f"{name}: {sum(row['repository'] == name for row in rows)} logs ({mirrors[name]})")
    print(f"{len(rows)} logs -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
