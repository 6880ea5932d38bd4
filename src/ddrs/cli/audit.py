"""``ddrs audit``: attack every certificate of a certification log inside its radius (issue 69,
:mod:`ddrs.jobs.audit`) and write the audit log, resumably.

The audit's document (JSON or YAML; ``-`` reads standard input; the workflow hands it
:meth:`ddrs.pipeline.audit_plan.AuditPlan.document`) names the classifier that made the log and the draws:

- ``inputs``: ``dataset``, ``data_root``, ``seed`` (the split's and every draw's), ``device``;
- ``alpha``: PREDICT's level, the log's α; ``precision``; ``threads``: torch's threads (they order a σ search's sums);
- ``sigma`` for a fixed-σ log, or ``algorithm1`` for a data-dependent one: the σ search's settings
  (:class:`~ddrs.core.settings.Algorithm1Settings`) with ``steps`` the one K the log was certified at;
- ``audit``: the sizes (:class:`~ddrs.core.audit_settings.AuditSettings`: ``inputs``, ``steps``, ``draws``,
  ``line_points``, ``n``).

``--memory-log`` (the log's Algorithm 3 log) audits DDRS's memory classifier as well. A provenance record is
written beside the audit log (:mod:`ddrs.jobs.provenance_record`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "audit", help="attack a log's certificates inside their radius (fixed σ, DDRS, DDRS with memory)",
        description=__doc__,
    )  # fmt: skip
    parser.add_argument(
        "--config", required=True, metavar="FILE", help="the audit's document (JSON or YAML), - for stdin"
    )
    parser.add_argument("--checkpoint", required=True, help="ddrs checkpoint of the base classifier that made the log")
    parser.add_argument("--log", required=True, help="the certification log (idx = test-set index)")
    parser.add_argument("--memory-log", help="the log made sound by Algorithm 3: audit the memory classifier too")
    parser.add_argument("--out", required=True, help="the audit log to write (resumes from <OUT>.partial)")
    parser.set_defaults(run=run)


def read_document(path: str) -> dict:
    """The audit's document at ``path`` (``-``: standard input), a mapping."""
    import yaml

    text = sys.stdin.read() if path == "-" else Path(path).read_text()
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ValueError(f"the audit document {path} is neither JSON nor YAML ({error})".splitlines()[0]) from None
    if not isinstance(document, dict):
        raise ValueError(f"the audit document {path} is not a mapping of settings")
    return document


def run(args: argparse.Namespace) -> None:
    from ddrs.data import saved_split
    from ddrs.jobs.audit import run_audit
    from ddrs.jobs.provenance_record import record

    document = read_document(args.config)
    for name, path in (("--checkpoint", args.checkpoint), ("--log", args.log), ("--memory-log", args.memory_log)):
        if path is not None and not Path(path).is_file():
            raise FileNotFoundError(f"{name} {path}: no such file")
    out = run_audit(document, checkpoint=args.checkpoint, log=args.log, out=args.out, memory_log=args.memory_log)
    data = document["inputs"]
    split = saved_split(data["dataset"], data["data_root"], data["seed"])
    record([out], "audit", document, [args.checkpoint, args.log, args.memory_log, split])
    print(f"audit: {args.log} -> {out}")
