"""``ddrs job``: one workflow job from its JSON document (:mod:`ddrs.pipeline.job_plan`), files on the command line.

It parses, runs the document's kind (a certification by :func:`ddrs.jobs.runner.run_certification`,
the gradient norms by :func:`ddrs.training.gradient_norms.write_gradient_norms`), and records what
made each output (:mod:`ddrs.jobs.provenance_record`).

The document is the other door to the settings the flags of ``ddrs certify``, ``ddrs optimize-sigma``
and ``ddrs gradient-norms`` build: its ``certify``, ``algorithm1`` and ``grid_search`` sections are
the ``resume_settings()`` of :class:`~ddrs.core.settings.CertifySettings`,
:class:`~ddrs.core.settings.Algorithm1Settings` and :class:`~ddrs.core.settings.SigmaSettings` (with
the grid's ``low``, ``high``, ``budget``), so a field added to a settings class travels with no
change here; ``--speed`` gives the settings that change only how fast it runs
(:meth:`~ddrs.pipeline.job_plan.JobPlan.speed`). By its ``kind``, a document runs

- ``fixed_certification`` (``inputs``, ``sigma``, ``certify``): CERTIFY with one σ (``--out LOG``);
- ``data_dependent_certification`` (``inputs``, ``algorithm1``, ``certify``) or
  ``grid_search_certification`` (``inputs``, ``grid_search``, ``certify``), each with the
  ``threads`` and ``search_batch`` its σ search sums with: σ per input into
  ``--sigma-log``, then CERTIFY at every column it wrote (``--out``, one per K) and Algorithm 3
  (``--memory-out``), the model and data loaded once;
- ``semi_elastic_certification`` (``inputs``, ``sigma``, ``semi_elastic``, ``certify``): Súkeník et
  al.'s semi-elastic σ(x) into ``--sigma-log``, CERTIFY at it (the first ``--out``) and their
  certificate (the second);
- ``gradient_norms`` (``inputs``, ``sigma``, ``method``, ``precision``): the gradient norms of
  ``ddrs gradient-norms`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: the kinds of job a document names (its ``kind``), each the :class:`~ddrs.pipeline.job_plan.JobPlan`
#: method that makes it: CERTIFY with one σ, σ per input by Algorithm 1 or by the Appendix-B grid and
#: then CERTIFY with it, Súkeník et al.'s semi-elastic σ(x) certified by their theorem, and Sun et
#: al.'s gradient norms
KINDS = (
    "fixed_certification",
    "data_dependent_certification",
    "grid_search_certification",
    "semi_elastic_certification",
    "gradient_norms",
)

#: the command's line in ``ddrs --help``
COMMAND_HELP = "run one workflow job (certification, σ search, gradient norms) from its JSON document"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("job", help=COMMAND_HELP, description=__doc__)
    parser.add_argument("--config", required=True, metavar="FILE.json", help="the job's document, - for stdin")
    parser.add_argument("--checkpoint", required=True, help="ddrs checkpoint of the base classifier")
    parser.add_argument("--sigma-log", help="the σ log a σ search writes (resumes from <LOG>.partial)")
    parser.add_argument("--out", required=True, nargs="+", metavar="FILE", help="the log(s) or table to write")
    parser.add_argument("--memory-out", nargs="+", metavar="LOG", help="each --out made sound by Algorithm 3")
    parser.add_argument(
        "--speed",
        default="{}",
        metavar="JSON",
        help="what changes only how fast the job runs: {certify: CERTIFY's speed settings}",
    )
    parser.set_defaults(run=run)


def read_document(path: str) -> dict[str, Any]:
    """The JSON document at ``path`` (``-``: standard input)."""
    text = sys.stdin.read() if path == "-" else Path(path).read_text()
    document = json.loads(text)
    if not isinstance(document, dict):
        raise ValueError(f"the job document {path} is not a JSON object")
    return document


def kind_of(document: Mapping[str, Any]) -> str:
    """The document's ``kind`` (:data:`KINDS`)."""
    kind = document.get("kind")
    if kind not in KINDS:
        raise ValueError(f"the job document's kind is {kind!r}; it must be one of {list(KINDS)}")
    return kind


def gradient_norm_job(document: Mapping[str, Any], checkpoint: str, outs: Sequence[str]) -> None:
    """The ``gradient_norms`` kind: :func:`ddrs.training.gradient_norms.write_gradient_norms` on the
    document's inputs, σ, method and precision, into the one ``--out`` table."""
    from ddrs.training.gradient_norms import write_gradient_norms

    (out,) = outs
    inputs = dict(document["inputs"])
    write_gradient_norms(
        checkpoint=checkpoint,
        out=out,
        sigma=document["sigma"],
        method=document["method"],
        precision=document["precision"],
        **{key: value for key, value in inputs.items() if key != "max"},
        max_index=inputs["max"],
    )


def run(args: argparse.Namespace) -> None:
    from ddrs.data import saved_split
    from ddrs.jobs.provenance_record import record
    from ddrs.jobs.runner import JobFiles, run_certification

    document = read_document(args.config)
    files = JobFiles(args.checkpoint, args.out, args.sigma_log, args.memory_out)
    if kind_of(document) == "gradient_norms":
        gradient_norm_job(document, args.checkpoint, args.out)
    else:
        run_certification(document, json.loads(args.speed), files)
    data = document["inputs"]
    read = [args.checkpoint, saved_split(data["dataset"], data["data_root"], data["seed"]), args.sigma_log]
    record(files.written, kind_of(document), document, read)
