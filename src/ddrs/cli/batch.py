"""``ddrs batch``: several commands in one process, so they pay the start-up once.

``ddrs batch optimize-sigma … --then certify …`` runs each command in turn, as ``ddrs`` would run
it alone, in one interpreter: the imports (torch), CUDA's initialisation and the loaded libraries
are shared. The workflow runs a model's strict chains this way (Algorithm 1 and the certification
of its σ log; a grid search and its certification), where a second job would only pay its
start-up again. Every command's arguments are checked before the first one runs, so a typo in the
last does not cost the first's work: argparse's checks, then the command's own ``check(args)`` where
it sets one (``parser.set_defaults(check=...)``: certify, optimize-sigma, memory), which reads no
file, as an earlier command may write it (a σ log). A failing command stops the batch; the logs
the earlier ones finished keep their rows in ``<LOG>.partial`` (:func:`ddrs.logs.certification_log.kept_partials`),
so the rerun of a job whose outputs Snakemake deleted publishes them again without recomputing.
Each command prints its own work line, and the batch its whole (``benchmarks/dag_overhead.py``).
"""

from __future__ import annotations

import argparse
import time

from ddrs.logs.work_time import report_work

#: the word between two commands of a batch
SEPARATOR = "--then"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "batch",
        help="run several commands in one process (one start-up), separated by --then",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "commands",
        nargs=argparse.REMAINDER,
        metavar=f"COMMAND ARGS… [{SEPARATOR} COMMAND ARGS…]",
        help="the commands, each as it would follow `ddrs`",
    )
    parser.set_defaults(run=run, compute=None)  # each command limits its own threads


def split_commands(words: list[str]) -> list[list[str]]:
    """The argument lists between the separators; raises ValueError on an empty one."""
    commands: list[list[str]] = [[]]
    for word in words:
        if word == SEPARATOR:
            commands.append([])
        else:
            commands[-1].append(word)
    for position, command in enumerate(commands, start=1):
        if not command:
            raise ValueError(f"command {position} of the batch is empty (nothing before or after {SEPARATOR})")
    return commands


def parse_commands(words: list[str]) -> list[argparse.Namespace]:
    """Every command's parsed arguments, all checked before any runs (argparse exits 2 on a bad one;
    a command's own ``check`` raises, named by the command)."""
    from ddrs.cli import build_parser, command_modules

    parsed = []
    for command in split_commands(words):
        name = command[0]
        if name == "batch":
            raise ValueError("a batch cannot contain another batch")
        if name not in command_modules():
            raise ValueError(f"unknown command {name!r}; choose from {', '.join(sorted(command_modules()))}")
        args, unknown = build_parser([name]).parse_known_args(command)
        if unknown:  # argparse would name the top-level parser, not the command
            raise ValueError(f"{name}: unrecognized arguments: {' '.join(unknown)}")
        parsed.append(args)
    for command in parsed:
        _check(command)
    return parsed


def _check(command: argparse.Namespace) -> None:
    """Run the command's own argument checks, if it has any; an error names the command."""
    from ddrs.cli import USER_ERRORS
    from ddrs.errors import DDRSError

    check = getattr(command, "check", None)
    if check is None:
        return
    try:
        check(command)
    except USER_ERRORS as error:
        raise DDRSError(f"{command.command}: {error}") from error


def run(args: argparse.Namespace) -> None:
    from ddrs.cli import USER_ERRORS, limit_threads
    from ddrs.errors import DDRSError
    from ddrs.logs.certification_log import kept_partials

    commands = parse_commands(args.commands)
    with kept_partials():  # Snakemake deletes every output of a failed job: keep the earlier commands' rows
        for command in commands:
            if args.threads is not None:  # `ddrs --threads N batch …`: each command's own pools
                limit_threads(args.threads, getattr(command, "compute", "torch"))
            started = time.perf_counter()
            try:
                command.run(command)
            except USER_ERRORS as error:
                raise DDRSError(f"{command.command}: {error}") from error
            report_work(f"ddrs {command.command}", started)
