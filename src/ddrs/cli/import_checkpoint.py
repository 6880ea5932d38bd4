"""``ddrs import-checkpoint``: convert a published Cohen / SmoothAdv / MACER checkpoint to ours."""

from __future__ import annotations

import argparse

from ddrs.models import SOURCES, import_published, save_checkpoint


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "import-checkpoint",
        help="convert a published checkpoint (Cohen / SmoothAdv / MACER) to a ddrs checkpoint",
        description=__doc__,
    )
    parser.add_argument("--published", required=True, help="the published checkpoint file")
    parser.add_argument("--arch", required=True, help="our architecture name, e.g. resnet110 or resnet50")
    parser.add_argument("--dataset", required=True, help="dataset the model was trained on, e.g. cifar10")
    parser.add_argument("--out", required=True, help="where to write the ddrs checkpoint")
    parser.add_argument(
        "--source",
        choices=sorted(SOURCES),
        help="whose code saved the file; decides the input normaliser "
        "(default: --method when it names a source, else cohen)",
    )
    parser.add_argument("--sigma", type=float, help="training noise level, recorded in the metadata")
    parser.add_argument("--method", help="training method recorded in the metadata (default: the source)")
    parser.set_defaults(run=run)


def source_of(args: argparse.Namespace) -> str:
    """``--source``, else the ``--method`` when it is one (the workflow passes only the method), else cohen."""
    if args.source is not None:
        return args.source
    if args.method is None:
        return "cohen"
    if args.method in SOURCES:
        return args.method
    raise ValueError(
        f"cannot tell whose checkpoint {args.published} is from --method {args.method!r}; "
        f"give --source (one of {sorted(SOURCES)})"
    )


def run(args: argparse.Namespace) -> None:
    model, meta = import_published(args.published, args.arch, args.dataset, source=source_of(args))
    if args.sigma is not None:
        meta["sigma"] = args.sigma
    if args.method is not None:
        meta["method"] = args.method
    save_checkpoint(args.out, model, **meta)
    print(f"imported {args.published} ({meta['source']}, {args.arch} on {args.dataset}) -> {args.out}")
