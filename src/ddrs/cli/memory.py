"""``ddrs memory``: memory-based certification (DDRS Algorithm 3) of a certification log, in idx order."""

from __future__ import annotations

import argparse

from ddrs.data import load_dataset
from ddrs.memory import memory_certify_log


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "memory",
        help="make a data-dependent certification log sound with Algorithm 3",
        description=__doc__,
    )
    parser.add_argument("--log", required=True, help="certification log (idx = test-set index)")
    parser.add_argument("--dataset", required=True, help="dataset whose test split the log certifies")
    parser.add_argument("--data-root", default="data", help="dataset download / ImageFolder root")
    parser.add_argument("--seed", type=int, default=0, help="seed of the dataset split (digits)")
    parser.add_argument(
        "--norm",
        type=int,
        choices=[1, 2],
        default=None,
        help="ball norm; default from the log's noise column (gaussian → 2, uniform → 1)",
    )
    parser.add_argument("--out", required=True, help="the memory-certified log to write")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    dataset = load_dataset(args.dataset, "test", root=args.data_root, seed=args.seed)
    counts = memory_certify_log(args.log, dataset, args.out, norm=args.norm)
    changed = counts["moved_in"] + counts["shrunk"]
    print(
        f"memory: {sum(counts.values())} rows, {changed} changed "
        f"(kept {counts['kept']}, moved_in {counts['moved_in']}, shrunk {counts['shrunk']}) -> {args.out}"
    )
