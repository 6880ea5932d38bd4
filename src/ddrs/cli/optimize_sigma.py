"""``ddrs optimize-sigma``: σ*ₓ per test input by Algorithm 1 (or the Appendix-B grid search) → σ log."""

from __future__ import annotations

import argparse

from ddrs.data import get_info, load_dataset, subsample_indices
from ddrs.device import select_device
from ddrs.io import file_digest
from ddrs.models import load_checkpoint
from ddrs.noise import get_noise
from ddrs.sigma import GRID_BUDGET, check_steps, grid_for_budget, grid_search_dataset, optimize_dataset


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "optimize-sigma",
        help="per-input smoothing scale by Algorithm 1 (snapshots at every K) or grid search",
        description=__doc__,
    )
    parser.add_argument("--checkpoint", required=True, help="ddrs checkpoint of the base classifier")
    parser.add_argument("--dataset", required=True, help="dataset whose test split is optimised")
    parser.add_argument("--data-root", default="data", help="dataset download / ImageFolder root")
    parser.add_argument("--noise", default="gaussian", help="gaussian (σ, ℓ2) or uniform (half-width λ, ℓ1)")
    parser.add_argument("--sigma0", type=float, required=True, help="initial scale σ₀ (also used to find c_A)")
    parser.add_argument("--k", type=int, nargs="+", default=[100], help="steps K at which to record σ (0 = σ₀)")
    parser.add_argument("--n", type=int, default=1, help="noise samples per gradient step (paper: 1)")
    parser.add_argument("--lr", type=float, default=1e-4, help="step size α (paper: 1e-4)")
    parser.add_argument("--n0", type=int, default=100, help="samples of the σ₀-smoothed classifier for c_A")
    parser.add_argument("--min-sigma", type=float, default=1e-3, help="lower bound kept on σ during ascent")
    parser.add_argument("--max-sigma", type=float, default=None, help="optional upper bound on σ")
    parser.add_argument("--batch", type=int, default=32, help="test inputs optimised together")
    parser.add_argument("--skip", type=int, default=1, help="optimise every skip-th test input (Cohen's --skip)")
    parser.add_argument("--max", type=int, default=None, help="stop before this test index (Cohen's --max)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every noise draw (per input: seed, idx)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, …")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
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
    info = get_info(args.dataset)
    device = select_device(args.device)
    model, _ = load_checkpoint(args.checkpoint, dataset=args.dataset, device=device)
    dataset = load_dataset(args.dataset, "test", root=args.data_root, seed=args.seed)
    indices = subsample_indices(len(dataset), args.skip, args.max)
    common = dict(
        sigma0=args.sigma0,
        num_classes=info.num_classes,
        noise=args.noise,
        n0=args.n0,
        batch=args.batch,
        seed=args.seed,
        device=device,
        precision=args.precision,
        provenance={"checkpoint": file_digest(args.checkpoint)},
    )
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
