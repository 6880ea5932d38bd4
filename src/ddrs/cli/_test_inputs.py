"""Options and loading shared by the commands that run a checkpoint over test inputs.

``ddrs certify`` and ``ddrs optimize-sigma`` read the same model and the same test inputs (Cohen's
``--skip/--max``); both seed the digits split with ``--seed`` too (refused unless it is the
checkpoint's training seed), so an ``idx`` names the same
image in a σ log and in the certification log that uses it. Building the parser loads no torch:
:func:`load` imports the model and data modules when a command runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ddrs.core.settings import PRECISIONS

if TYPE_CHECKING:
    from ddrs.jobs.runner import LoadedTestSet


def add_parser(subparsers, name: str, help: str, description: str | None, verb: str) -> argparse.ArgumentParser:
    """The parser of command ``name`` with the flags every command over test inputs takes:
    ``--checkpoint --dataset --data-root --noise --skip --max --seed --device --precision``."""
    parser = subparsers.add_parser(name, help=help, description=description)
    parser.add_argument("--checkpoint", required=True, help="ddrs checkpoint of the base classifier")
    parser.add_argument("--dataset", required=True, help=f"dataset whose test split is {verb}")
    parser.add_argument("--data-root", default="data", help="dataset download / ImageFolder root")
    parser.add_argument("--noise", default="gaussian", help="gaussian (σ, ℓ2 radius) or uniform (half-width λ, ℓ1)")
    parser.add_argument("--skip", type=int, default=1, help=f"{verb} every skip-th test input (Cohen's --skip)")
    parser.add_argument("--max", type=int, default=None, help="stop before this test index (Cohen's --max)")
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of every noise draw (per input: seed, idx) and of the digits / mnist5k train/test split, "
        "which must be the one the checkpoint was trained on",
    )
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, …")
    parser.add_argument(
        "--precision",
        default="fp32",
        choices=sorted(PRECISIONS),
        help="the base classifier's forward passes: fp32, or autocast to bf16 / fp16 (faster on GPUs)",
    )
    return parser


def check(args: argparse.Namespace) -> None:
    """Check ``--dataset``, ``--skip`` and ``--max`` without loading anything."""
    from ddrs.data import get_info, subsample_indices

    get_info(args.dataset)
    subsample_indices(0, args.skip, args.max)


def load(args: argparse.Namespace) -> LoadedTestSet:
    """Load the checkpoint (checked against ``--dataset``) and the selected test inputs."""
    from ddrs.jobs.runner import load_test_inputs

    return load_test_inputs(
        args.checkpoint,
        dataset=args.dataset,
        data_root=args.data_root,
        skip=args.skip,
        max=args.max,
        seed=args.seed,
        device=args.device,
    )
