"""``ddrs memory``: memory-based certification (DDRS Algorithm 3) of certification logs, each in idx order.

Several logs of one dataset's test split run in one process (``--log a b --out a_mem b_mem``). Runs
in numpy; the test images of digits and mnist5k load without torch.
"""

from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "memory",
        help="make data-dependent certification logs sound with Algorithm 3",
        description=__doc__,
    )
    parser.add_argument("--log", required=True, nargs="+", help="certification logs (idx = test-set index)")
    parser.add_argument("--dataset", required=True, help="dataset whose test split the logs certify")
    parser.add_argument("--data-root", default="data", help="dataset download / ImageFolder root")
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the dataset split (digits, mnist5k): the one the logs were certified with",
    )
    parser.add_argument(
        "--norm",
        type=int,
        choices=[1, 2],
        default=None,
        help="ball norm; default from each log's noise column (gaussian → 2, uniform → 1)",
    )
    parser.add_argument("--out", required=True, nargs="+", help="the memory-certified logs to write, one per --log")
    parser.set_defaults(run=run, check=check, compute="numpy")


def check(args: argparse.Namespace) -> None:
    """Check the arguments without reading a file (``ddrs batch`` checks every command's first)."""
    from ddrs.data import get_info

    if len(args.log) != len(args.out):
        raise ValueError(f"{len(args.log)} --log files but {len(args.out)} --out files; give one output per log")
    if len(set(args.out)) != len(args.out):
        raise ValueError(f"--out names a file twice: {args.out}")
    get_info(args.dataset)


def run(args: argparse.Namespace) -> None:
    from ddrs.data import load_images, load_labels
    from ddrs.jobs.memory_log import memory_certify_log

    check(args)
    images = load_images(args.dataset, "test", root=args.data_root, seed=args.seed)
    labels = load_labels(args.dataset, "test", root=args.data_root, seed=args.seed)
    for log, out in zip(args.log, args.out, strict=True):
        counts = memory_certify_log(log, images, out, labels=labels, norm=args.norm)
        changed = counts["moved_in"] + counts["shrunk"]
        print(
            f"memory: {sum(counts.values())} rows, {changed} changed "
            f"(kept {counts['kept']}, moved_in {counts['moved_in']}, shrunk {counts['shrunk']}) -> {out}"
        )
