"""``ddrs optimize-sigma``: σ*ₓ per test input by Algorithm 1 (or the Appendix-B grid search) → σ log.

``--objective released`` (default) ascends the objective of the authors' released code (top two
classes of ψ at every step, clamped to [0.02, 0.98]); ``fixed_class`` holds the σ₀-smoothed class
c_A fixed as Eq. 2/3 write it (clamp 1e-6). The grid search scores with the same objective.
"""

from __future__ import annotations

import argparse

from ddrs.cli import _test_inputs
from ddrs.core.settings import (
    DEFAULT_CLAMP,
    GRID_BUDGET,
    SIGMA_BATCH,
    SIGMA_OBJECTIVES,
    Algorithm1Settings,
    GridSearchSettings,
    settings_from,
)

#: the command's line in ``ddrs --help``
COMMAND_HELP = "σ per test input by Algorithm 1 (snapshots at every K) or grid search"


def add_parser(subparsers) -> None:
    parser = _test_inputs.add_parser(subparsers, "optimize-sigma", COMMAND_HELP, __doc__, verb="optimised")
    parser.add_argument(
        "--sigma0", type=float, required=True, help="initial σ₀, λ₀ for uniform noise (also used to find c_A)"
    )
    parser.add_argument("--k", type=int, nargs="+", default=[100], help="steps K at which to record σ (0 = σ₀)")
    parser.add_argument("--n", type=int, default=1, help="noise samples per gradient step (paper: 1)")
    parser.add_argument("--lr", type=float, default=1e-4, help="step size α (paper: 1e-4)")
    parser.add_argument(
        "--objective",
        choices=SIGMA_OBJECTIVES,
        default=SIGMA_OBJECTIVES[0],
        help="released: top two classes of ψ at every step (the authors' code); "
        "fixed_class: c_A from σ₀-smoothing held fixed (Eq. 2/3)",
    )
    clamps = ", ".join(f"{clamp:g} for {objective}" for objective, clamp in DEFAULT_CLAMP.items())
    parser.add_argument(
        "--clamp", type=float, default=None, help=f"clamp E_A, E_B to [c, 1 − c] before Φ⁻¹ (default: {clamps})"
    )
    parser.add_argument("--n0", type=int, default=100, help="samples of the σ₀-smoothed classifier for c_A")
    parser.add_argument("--min-sigma", type=float, default=1e-3, help="lower bound kept on σ during ascent")
    parser.add_argument("--max-sigma", type=float, default=None, help="optional upper bound on σ")
    parser.add_argument("--batch", type=int, default=SIGMA_BATCH, help="test inputs optimised together (speed only)")
    parser.add_argument("--out", required=True, help="the σ log to write (resumes from <out>.partial)")
    grid = parser.add_argument_group("Appendix-B grid-search baseline")
    grid.add_argument("--grid-search", action="store_true", help="pick σ from a grid instead of Algorithm 1")
    grid.add_argument("--grid-n", type=int, default=1, help="samples per grid point (grid size = budget / n)")
    grid.add_argument("--grid-budget", type=int, default=GRID_BUDGET, help="base-classifier evaluations per input")
    grid.add_argument("--grid-min", type=float, default=0.12, help="smallest σ of the grid")
    grid.add_argument("--grid-max", type=float, default=1.0, help="largest σ of the grid")
    parser.set_defaults(run=run, check=check)


def check(args: argparse.Namespace) -> Algorithm1Settings | GridSearchSettings:
    """The run's settings, every argument checked without reading a file (``ddrs batch`` checks all first)."""
    from ddrs.core.noise import get_noise
    from ddrs.core.sigma import grid_for_budget

    _test_inputs.check(args)
    if args.batch < 1:
        raise ValueError(f"--batch must be >= 1, got {args.batch}")
    noise = get_noise(args.noise).name
    if args.grid_search:
        grid = grid_for_budget(args.grid_min, args.grid_max, args.grid_n, args.grid_budget)
        return settings_from(GridSearchSettings, vars(args), noise=noise, grid=grid.tolist(), n=args.grid_n)
    return settings_from(Algorithm1Settings, vars(args), noise=noise, steps=args.k)


def run(args: argparse.Namespace) -> None:
    from ddrs.jobs.runner import write_sigma_log

    settings = check(args)
    write_sigma_log(settings, _test_inputs.load(args), args.out, args.batch)
