"""``ddrs``: every pipeline step also runs by hand.

Each sub-command lives in its own module of this package and provides ``add_parser(subparsers)``,
which registers the command and sets ``run`` as its handler (``parser.set_defaults(run=...)``).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import torch

from ddrs.errors import DDRSError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ddrs", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--threads", type=int, help="CPU threads for torch (default: torch's choice); the workflow passes its job's"
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}").add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.threads is not None:
        if args.threads < 1:
            parser.error(f"--threads must be >= 1, got {args.threads}")
        torch.set_num_threads(args.threads)
    try:
        args.run(args)
    except (DDRSError, ValueError, FileNotFoundError) as error:
        print(f"ddrs {args.command}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
