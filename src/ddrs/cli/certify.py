"""``ddrs certify``: Cohen et al.'s CERTIFY over a test set, with a fixed σ or σ*ₓ from a σ log.

Several σ-log columns certify in one process (``--k 50 100 200`` or ``--sigma-column A B`` with one
``--out`` each): the model and data load once, and each output is its own resumable log, written
in the order given. ``--memory-out`` runs memory-based certification (DDRS Algorithm 3,
:mod:`ddrs.core.memory`) on each finished log in the same process, as ``ddrs memory`` would. Until the
command ends, the finished logs keep their rows in ``<LOG>.partial``
(:func:`ddrs.logs.certification_log.kept_partials`), so a job killed after them rewrites them without
recomputing.
"""

from __future__ import annotations

import argparse

from ddrs.cli import _test_inputs
from ddrs.core.settings import (
    CERTIFY_MODES,
    CHECKS,
    MEMORY_FORMATS,
    SEQUENCES,
    CertifySettings,
    DeviceSettings,
    SequentialSettings,
    settings_from,
)


def _batch(value: str) -> int | None:
    """``--batch``: a positive integer, or ``auto`` (None)."""
    if value == "auto":
        return None
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or auto, got {value!r}") from None


#: the command's line in ``ddrs --help``
COMMAND_HELP = "certify test inputs with a fixed σ or one σ per input (certification log)"


def add_parser(subparsers) -> None:
    parser = _test_inputs.add_parser(subparsers, "certify", COMMAND_HELP, __doc__, verb="certified")
    sigma = parser.add_mutually_exclusive_group(required=True)
    sigma.add_argument("--sigma", type=float, help="one σ for every input (λ for uniform noise)")
    sigma.add_argument("--sigma-log", help="σ log of `ddrs optimize-sigma`: one σ per input")
    parser.add_argument(
        "--k",
        type=int,
        nargs="+",
        metavar="K",
        help="with --sigma-log: use column sigma_K<K> (Algorithm 1 after K steps)",
    )
    parser.add_argument(
        "--sigma-column", nargs="+", metavar="COLUMN", help="with --sigma-log: use these columns (e.g. sigma_grid_n4)"
    )
    parser.add_argument("--n0", type=int, default=CertifySettings.n0, help="selection samples (Cohen: 100)")
    parser.add_argument("--n", type=int, default=CertifySettings.n, help="estimation samples (Cohen: 100,000)")
    parser.add_argument("--alpha", type=float, default=CertifySettings.alpha, help="failure probability (Cohen: 0.001)")
    parser.add_argument(
        "--batch",
        type=_batch,
        default=DeviceSettings.batch_size,
        help="noisy copies per forward pass, or auto: from free GPU memory on CUDA, 400 elsewhere",
    )
    parser.add_argument(
        "--memory-format",
        default=DeviceSettings.memory_format,
        choices=MEMORY_FORMATS,
        help="layout of the model and its noisy inputs (auto: channels_last on CUDA, contiguous elsewhere)",
    )
    parser.add_argument(
        "--compile",
        action="store_true",
        help="run the base classifier through torch.compile, once for every log of the job",
    )
    _add_sequential_options(parser)
    parser.add_argument(
        "--out",
        required=True,
        nargs="+",
        metavar="LOG",
        help="the certification log(s) to write, one per σ-log column (each resumes from <LOG>.partial)",
    )
    parser.add_argument(
        "--memory-out",
        nargs="+",
        metavar="LOG",
        help="also write each --out log made sound by Algorithm 3 (one per --out, same order)",
    )
    parser.set_defaults(run=run, check=check)


def _add_sequential_options(parser: argparse.ArgumentParser) -> None:
    """The options of sequential certification (:class:`~ddrs.core.settings.SequentialSettings`), one group."""
    sequential = parser.add_argument_group(
        "sequential certification", "with --mode sequential: draw in looks until every radius is decided, at most --n"
    )
    sequential.add_argument(
        "--mode",
        default=CertifySettings.mode,
        choices=CERTIFY_MODES,
        help="fixed: Cohen's n draws per input; sequential: until a confidence sequence decides every --radii",
    )
    sequential.add_argument(
        "--sequence",
        default=SequentialSettings.sequence,
        choices=SEQUENCES,
        help="the test that decides the radii: a confidence sequence for p_A (betting, union_cp, betting_cp) "
        "or one test per radius (grid)",
    )
    sequential.add_argument(
        "--radii", type=float, nargs="+", default=SequentialSettings.radii, help="the radius grid to decide (0 always)"
    )
    sequential.add_argument(
        "--first-look", type=int, default=SequentialSettings.first_look, help="estimation draws at the first look"
    )
    sequential.add_argument(
        "--growth", type=float, default=SequentialSettings.growth, help="each look's draws over the previous one's"
    )
    sequential.add_argument(
        "--checks",
        default=SequentialSettings.checks,
        choices=CHECKS,
        help="check the bounds at every draw of a look's block, or at the looks alone (union_cp: look)",
    )
    sequential.add_argument(
        "--futility",
        type=float,
        default=SequentialSettings.futility,
        help="give a radius up once the rest of the draws at p_A's Clopper–Pearson upper bound at this level "
        "could not reach it (0: only once no draws could)",
    )
    sequential.add_argument(
        "--acr-fraction",
        type=float,
        default=SequentialSettings.acr_fraction,
        help="go on while the radius could still grow by more than this fraction of σ (for ACR)",
    )
    sequential.add_argument("--pool", type=int, default=SequentialSettings.pool, help="inputs in flight (speed only)")


def check(args: argparse.Namespace) -> tuple[CertifySettings, DeviceSettings]:
    """The run's statistics and device settings, every argument checked without reading a file
    (``ddrs batch`` checks all first)."""
    from ddrs.core.noise import get_noise

    _test_inputs.check(args)
    _columns(args)
    sequential = settings_from(SequentialSettings, vars(args))
    noise = get_noise(args.noise).name
    settings = settings_from(CertifySettings, vars(args), noise=noise, sequential=sequential)
    return settings, settings_from(DeviceSettings, vars(args), batch_size=args.batch)


def _columns(args: argparse.Namespace) -> list[str] | None:
    """The σ-log columns to certify (None with ``--sigma``), checked against the outputs."""
    outs = args.out
    if args.memory_out is not None and len(args.memory_out) != len(outs):
        raise ValueError(
            f"--memory-out names {len(args.memory_out)} log(s) for {len(outs)} --out log(s); give one each"
        )
    written = outs + (args.memory_out or [])
    repeated = sorted({out for out in written if written.count(out) > 1})
    if repeated:
        raise ValueError(f"--out (or --memory-out) names {repeated[0]} more than once")
    if args.sigma is not None:
        if args.k is not None or args.sigma_column is not None:
            raise ValueError("--k and --sigma-column select columns of --sigma-log; drop them with --sigma")
        if not args.sigma > 0:
            raise ValueError(f"--sigma must be > 0, got {args.sigma}")
        if len(outs) != 1:
            raise ValueError(f"--sigma writes one log, but --out names {len(outs)}")
        return None
    if (args.k is None) == (args.sigma_column is None):
        raise ValueError("--sigma-log needs exactly one of --k and --sigma-column")
    from ddrs.logs.sigma_log import sigma_column

    flag, columns = (
        ("--k", [sigma_column(k) for k in args.k]) if args.k is not None else ("--sigma-column", args.sigma_column)
    )
    if len(columns) != len(outs):
        raise ValueError(
            f"{flag} names {len(columns)} σ-log column(s) but --out names {len(outs)} log(s); give one --out per column"
        )
    return columns


def _jobs(args: argparse.Namespace) -> list[tuple[str, float | dict[int, float], str]]:
    """``(what, sigmas, out)`` of every log to write, the σ log read before the model loads.

    In a batch the σ log may be written by an earlier command, so :func:`check` does not read it.
    """
    from ddrs.jobs.runner import sigma_log_jobs

    columns = _columns(args)
    if columns is None:
        return [(f"sigma {args.sigma}", args.sigma, args.out[0])]
    return sigma_log_jobs(args.sigma_log, columns, args.out)


def run(args: argparse.Namespace) -> None:
    from ddrs.jobs.runner import certify_logs

    settings, device_settings = check(args)
    jobs = _jobs(args)
    certify_logs(settings, device_settings, jobs, _test_inputs.load(args), args.memory_out)
