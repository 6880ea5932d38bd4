"""``ddrs import-checkpoint``: convert a published Cohen / SmoothAdv / MACER / rs4a checkpoint to ours."""

from __future__ import annotations

import argparse

from ddrs.methods import METHODS

#: the published checkpoint layouts the registry's methods come in (``ddrs.models.published.SOURCES``)
FORMATS = sorted({method.published_format for method in METHODS.values()} - {None})


#: the command's line in ``ddrs --help``
COMMAND_HELP = "convert a published checkpoint (Cohen / SmoothAdv / MACER / rs4a) to a ddrs checkpoint"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("import-checkpoint", help=COMMAND_HELP, description=__doc__)
    parser.add_argument("--published", required=True, help="the published checkpoint file")
    parser.add_argument("--arch", required=True, help="our architecture name, e.g. resnet110 or resnet50")
    parser.add_argument("--dataset", required=True, help="dataset the model was trained on, e.g. cifar10")
    parser.add_argument("--out", required=True, help="where to write the ddrs checkpoint")
    parser.add_argument(
        "--source",
        choices=FORMATS,
        help="whose code saved the file; decides the input normaliser "
        "(default: the published format of --method, else cohen)",
    )
    parser.add_argument("--sigma", type=float, help="training noise level, recorded in the metadata")
    parser.add_argument("--method", help="training method recorded in the metadata (default: the source)")
    parser.set_defaults(run=run)


def source_of(args: argparse.Namespace) -> str:
    """``--source``, else the published format of ``--method`` (the workflow passes only the method), else cohen."""
    if args.source is not None:
        return args.source
    if args.method is None:
        return "cohen"
    method = METHODS.get(args.method)
    if method is not None and method.published_format is not None:
        return method.published_format
    raise ValueError(
        f"cannot tell whose checkpoint {args.published} is from --method {args.method!r}; "
        f"give --source (one of {FORMATS})"
    )


def run(args: argparse.Namespace) -> None:
    from ddrs.models import import_published, save_checkpoint

    model, meta = import_published(args.published, args.arch, args.dataset, source=source_of(args))
    if args.sigma is not None:
        meta["sigma"] = args.sigma
    if args.method is not None:
        meta["method"] = args.method
    save_checkpoint(args.out, model, **meta)
    from ddrs.jobs.provenance_record import record
    from ddrs.pipeline.provenance import import_identity

    identity = import_identity(args.published, args.arch, args.method, args.sigma)
    record([args.out], "import_checkpoint", identity, [args.published])
    print(f"imported {args.published} ({meta['source']}, {args.arch} on {args.dataset}) -> {args.out}")
