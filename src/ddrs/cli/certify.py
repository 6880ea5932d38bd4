"""``ddrs certify``: Cohen et al.'s CERTIFY over a test set, with a fixed scale or σ*ₓ from a σ log."""

from __future__ import annotations

import argparse

from ddrs.certification import certify_dataset, read_sigma_log
from ddrs.cli import _test_inputs
from ddrs.noise import get_noise
from ddrs.smoothing import validate_certify_args


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "certify",
        help="certify test inputs with a fixed smoothing scale or per-input scales (certification log)",
        description=__doc__,
    )
    _test_inputs.add_arguments(parser, "certified")
    scale = parser.add_mutually_exclusive_group(required=True)
    scale.add_argument("--scale", type=float, help="one σ (or λ) for every input")
    scale.add_argument("--sigma-log", help="σ log of `ddrs optimize-sigma`: one scale per input")
    parser.add_argument("--k", type=int, help="with --sigma-log: use column sigma_K<k> (Algorithm 1 after K steps)")
    parser.add_argument("--sigma-column", help="with --sigma-log: use this column instead (e.g. sigma_grid_n4)")
    parser.add_argument("--n0", type=int, default=100, help="selection samples (Cohen: 100)")
    parser.add_argument("--n", type=int, default=100_000, help="estimation samples (Cohen: 100,000)")
    parser.add_argument("--alpha", type=float, default=0.001, help="failure probability (Cohen: 0.001)")
    parser.add_argument("--batch", type=int, default=400, help="noisy copies per forward pass")
    parser.add_argument("--out", required=True, help="the certification log to write (resumes from <out>.partial)")
    parser.set_defaults(run=run)


def _scales(args: argparse.Namespace) -> float | dict[int, float]:
    """The fixed scale, or the σ log column chosen by --k / --sigma-column."""
    if args.scale is not None:
        if args.k is not None or args.sigma_column is not None:
            raise ValueError("--k and --sigma-column select a column of --sigma-log; drop them with --scale")
        if not args.scale > 0:
            raise ValueError(f"--scale must be > 0, got {args.scale}")
        return args.scale
    if (args.k is None) == (args.sigma_column is None):
        raise ValueError("--sigma-log needs exactly one of --k and --sigma-column")
    return read_sigma_log(args.sigma_log, args.k, column=args.sigma_column)


def run(args: argparse.Namespace) -> None:
    validate_certify_args(n0=args.n0, n=args.n, alpha=args.alpha, batch_size=args.batch)
    noise = get_noise(args.noise)
    scales = _scales(args)
    inputs = _test_inputs.load(args)
    path = certify_dataset(
        inputs.model,
        inputs.dataset,
        inputs.indices,
        scales,
        num_classes=inputs.num_classes,
        noise=noise.name,
        n0=args.n0,
        n=args.n,
        alpha=args.alpha,
        batch_size=args.batch,
        seed=args.seed,
        out_path=args.out,
        precision=args.precision,
        device=inputs.device,
        provenance=inputs.provenance,
    )
    what = f"scale {args.scale}" if args.scale is not None else f"scales from {args.sigma_log}"
    print(f"certify: {len(inputs.indices)} inputs, {noise.name} noise, {what}, n0={args.n0}, n={args.n} -> {path}")
