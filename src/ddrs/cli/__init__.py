"""``ddrs``: every pipeline step also runs by hand.

Each sub-command lives in its own module of this package (module ``prepare_data`` ↔ command
``prepare-data``) and provides ``add_parser(subparsers)``, which registers the command and sets
``run`` as its handler (``parser.set_defaults(run=...)``). Only the named command's module is
imported, and modules import their heavy dependencies (torch) inside ``run``, so a command starts
in the time its own imports take. A command whose work runs in numpy sets ``compute="numpy"``;
``ddrs batch`` sets ``compute=None``, as each of its commands is limited by its own. Each command
ends with its work line on stderr (:func:`~ddrs.logs.work_time.report_work`), but one whose output
is for a reader to the last line (``ddrs show``) sets ``work_line=False``.
The commands only the workflow runs (:data:`INTERNAL`) run when named but are not listed by
``ddrs --help``. Help prints as plain text: the module docstrings that describe the commands keep
their Sphinx markup, which :class:`PlainTextParser` drops, a cross-reference printing as the name it
ends with (no help names a module path).
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import re
import sys
import time
from collections.abc import Iterable

from ddrs.errors import DDRSError
from ddrs.logs.work_time import report_work

#: the errors a command reports as ``ddrs <command>: error: …`` with exit status 2 (not a traceback)
USER_ERRORS = (DDRSError, ValueError, FileNotFoundError, FloatingPointError)

#: environment variables the BLAS / OpenMP libraries read when they load
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


#: the commands only the workflow runs (its jobs' documents, chains in one process)
INTERNAL = frozenset({"batch", "build", "job"})

#: Sphinx markup in a docstring: ``code`` and :role:`target` (``~`` or not)
_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`]+)`")


def plain_text(text: str | None) -> str | None:
    """``text`` without its Sphinx markup: ``x`` prints as x, :role:`a.b.x` and :role:`~a.b.x` as x
    (a command's user reads names, not the module paths behind them)."""
    if text is None:
        return None
    text = _LITERAL.sub(r"\1", text)
    return _ROLE.sub(lambda role: role[1].rsplit(".", 1)[-1], text)


class PlainTextParser(argparse.ArgumentParser):
    """An argument parser whose description and epilog print as plain text (:func:`plain_text`); its
    sub-command parsers are of its class too."""

    def __init__(self, *, description: str | None = None, epilog: str | None = None, **kwargs) -> None:
        super().__init__(description=plain_text(description), epilog=plain_text(epilog), **kwargs)


def command_modules() -> dict[str, str]:
    """Sub-command name → module name, found without importing any sub-command."""
    return {
        info.name.replace("_", "-"): f"{__name__}.{info.name}"
        for info in pkgutil.iter_modules(__path__)
        if not info.name.startswith("_")
    }


def public_commands() -> list[str]:
    """The commands ``ddrs --help`` lists: all but the :data:`INTERNAL` ones."""
    return sorted(set(command_modules()) - INTERNAL)


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The ``ddrs`` parser with the given sub-commands (default: the public ones, importing their modules)."""
    modules = command_modules()
    parser = PlainTextParser(prog="ddrs", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--threads",
        type=int,
        help="CPU threads: torch's for torch commands, the BLAS pool's for numpy ones (default: the "
        "libraries' choice); the workflow passes its job's",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in public_commands() if commands is None else sorted(commands):
        importlib.import_module(modules[name]).add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    modules = command_modules()
    # the first argument naming a command is the command (--threads takes an int); no command
    # (e.g. `ddrs --help`) needs the parser of the public ones
    named = next((arg for arg in argv if arg in modules), None)
    parser = build_parser(None if named is None else [named])
    args = parser.parse_args(argv)
    if args.threads is not None:
        if args.threads < 1:
            parser.error(f"--threads must be >= 1, got {args.threads}")
        compute = getattr(args, "compute", "torch")
        if compute is not None:
            limit_threads(args.threads, compute)
    started = time.perf_counter()
    try:
        args.run(args)
    except USER_ERRORS as error:
        print(f"ddrs {args.command}: error: {error}", file=sys.stderr)
        return 2
    if getattr(args, "work_line", True):
        report_work(f"ddrs {args.command}", started)
    return 0


def limit_threads(threads: int, compute: str) -> None:
    """torch's intra-op threads for torch commands; the BLAS and OpenMP pools (numpy, scipy) for numpy commands."""
    if compute == "torch":
        import torch

        torch.set_num_threads(threads)
        return
    from threadpoolctl import threadpool_limits

    for variable in THREAD_VARIABLES:
        os.environ[variable] = str(threads)  # read by the pools loaded from now on
    threadpool_limits(limits=threads)  # the pools already loaded


if __name__ == "__main__":
    sys.exit(main())
