"""Options and loading shared by the commands that run a checkpoint over test inputs.

``ddrs certify`` and ``ddrs optimize-sigma`` read the same model and the same test inputs (Cohen's
``--skip/--max``); both seed the digits split with ``--seed`` too (refused unless it is the
checkpoint's training seed), so an ``idx`` names the same
image in a σ log and in the certification log that uses it. Building the parser loads no torch:
:func:`load` imports the model and data modules when a command runs.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddrs.core.settings import PRECISIONS

if TYPE_CHECKING:
    import torch
    from torch import nn
    from torch.utils.data import Dataset


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
    parser.add_argument("--precision", default="fp32", choices=sorted(PRECISIONS))
    return parser


@dataclass(frozen=True)
class LoadedTestSet:
    """The base classifier on its device and the test inputs a command visits."""

    model: nn.Module
    dataset: Dataset
    indices: list[int]
    num_classes: int
    device: torch.device
    #: what names the model in the settings of a resumable log (the checkpoint's digest)
    provenance: dict


def check(args: argparse.Namespace) -> None:
    """Check ``--dataset``, ``--skip`` and ``--max`` without loading anything."""
    from ddrs.data import get_info, subsample_indices

    get_info(args.dataset)
    subsample_indices(0, args.skip, args.max)


def load(args: argparse.Namespace) -> LoadedTestSet:
    """Load the checkpoint (checked against ``--dataset``) and the selected test inputs."""
    from ddrs.core.device import select_device
    from ddrs.data import get_info, load_dataset, subsample_indices
    from ddrs.io import file_digest
    from ddrs.models import load_checkpoint

    info = get_info(args.dataset)
    device = select_device(args.device)
    model, meta = load_checkpoint(args.checkpoint, dataset=args.dataset, device=device)
    trained_seed = (meta.get("config") or {}).get("seed")
    if info.arrays is not None and trained_seed is not None and trained_seed != args.seed:
        raise ValueError(
            f"{args.checkpoint} was trained on the {args.dataset} split of seed {trained_seed}, but --seed "
            f"{args.seed} draws another train/test split, whose test inputs the model partly trained on; "
            f"use --seed {trained_seed}"
        )
    dataset = load_dataset(args.dataset, "test", root=args.data_root, seed=args.seed)
    return LoadedTestSet(
        model=model,
        dataset=dataset,
        indices=subsample_indices(len(dataset), args.skip, args.max),
        num_classes=info.num_classes,
        device=device,
        provenance={"checkpoint": file_digest(args.checkpoint)},
    )
