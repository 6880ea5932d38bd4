"""``ddrs optimize-sigma``: σ*ₓ per test input by Algorithm 1 (or the Appendix-B grid search) → σ log."""

from __future__ import annotations

import argparse

from ddrs.cli import _test_inputs
from ddrs.noise import get_noise
from ddrs.sigma import GRID_BUDGET, check_steps, grid_for_budget, grid_search_dataset, optimize_dataset


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "optimize-sigma",
        help="per-input smoothing scale by Algorithm 1 (snapshots at every K) or grid search",
        description=__doc__,
    )
    _test_inputs.add_arguments(parser, "optimised")
    parser.add_argument("--sigma0", type=float, required=True, help="initial scale σ₀ (also used to find c_A)")
    parser.add_argument("--k", type=int, nargs="+", default=[100], help="steps K at which to record σ (0 = σ₀)")
    parser.add_argument("--n", type=int, default=1, help="noise samples per gradient step (paper: 1)")
    parser.add_argument("--lr", type=float, default=1e-4, help="step size α (paper: 1e-4)")
    parser.add_argument("--n0", type=int, default=100, help="samples of the σ₀-smoothed classifier for c_A")
    parser.add_argument("--min-sigma", type=float, default=1e-3, help="lower bound kept on σ during ascent")
    parser.add_argument("--max-sigma", type=float, default=None, help="optional upper bound on σ")
    parser.add_argument("--batch", type=int, default=32, help="test inputs optimised together")
    parser.add_argument("--out", required=True, help="the σ log to write (resumes from <out>.partial)")
    grid = parser.add_argument_group("Appendix-B grid-search baseline")
    grid.add_argument("--grid-search", action="store_true", help="pick σ from a grid instead of Algorithm 1")
    grid.add_argument("--grid-n", type=int, default=1, help="samples per grid point (grid size = budget / n)")
    grid.add_argument("--grid-budget", type=int, default=GRID_BUDGET, help="base-classifier evaluations per input")
    grid.add_argument("--grid-min", type=float, default=0.12, help="smallest grid scale")
    grid.add_argument("--grid-max", type=float, default=1.0, help="largest grid scale")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    get_noise(args.noise)
    if args.sigma0 <= 0:
        raise ValueError(f"--sigma0 must be > 0, got {args.sigma0}")
    if args.batch < 1 or args.n < 1 or args.n0 < 1:
        raise ValueError(f"--batch, --n and --n0 must be >= 1, got {args.batch}, {args.n}, {args.n0}")
    steps = check_steps(args.k)
    inputs = _test_inputs.load(args)
    common = dict(
        sigma0=args.sigma0,
        num_classes=inputs.num_classes,
        noise=args.noise,
        n0=args.n0,
        batch=args.batch,
        seed=args.seed,
        device=inputs.device,
        precision=args.precision,
        provenance=inputs.provenance,
    )
    model, dataset, indices = inputs.model, inputs.dataset, inputs.indices
    if args.grid_search:
        grid = grid_for_budget(args.grid_min, args.grid_max, args.grid_n, args.grid_budget)
        path = grid_search_dataset(model, dataset, indices, args.out, grid=grid, n=args.grid_n, **common)
        what = f"grid search over {len(grid)} scales in [{args.grid_min}, {args.grid_max}] with n={args.grid_n}"
    else:
        path = optimize_dataset(
            model,
            dataset,
            indices,
            args.out,
            steps=steps,
            n=args.n,
            lr=args.lr,
            min_scale=args.min_sigma,
            max_scale=args.max_sigma,
            **common,
        )
        what = f"Algorithm 1 with K in {steps}, n={args.n}, lr={args.lr}"
    print(f"optimize-sigma: {len(indices)} inputs, {what} -> {path}")
