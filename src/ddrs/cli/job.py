"""``ddrs job``: one workflow job from its JSON document (:mod:`ddrs.pipeline.job_plan`), files on the command line.

The document is the other door to the settings the flags of ``ddrs certify``, ``ddrs optimize-sigma``
and ``ddrs gradient-norms`` build: its ``certify``, ``algorithm1`` and ``grid_search`` sections are
the ``resume_settings()`` of :class:`~ddrs.core.settings.CertifySettings`,
:class:`~ddrs.core.settings.Algorithm1Settings` and :class:`~ddrs.core.settings.SigmaSettings` (with
the grid's ``low``, ``high``, ``budget``), so a field added to a settings class travels with no
change here; ``--speed`` gives the settings that change only how fast it runs
(:meth:`~ddrs.pipeline.job_plan.JobPlan.speed`). By its ``kind``, a document runs

- ``fixed_certification`` (``inputs``, ``sigma``, ``certify``): CERTIFY with one σ (``--out LOG``);
- ``data_dependent_certification`` (``inputs``, ``algorithm1``, ``certify``) or
  ``grid_search_certification`` (``inputs``, ``grid_search``, ``certify``): σ per input into
  ``--sigma-log``, then CERTIFY at every column it wrote (``--out``, one per K) and Algorithm 3
  (``--memory-out``), the model and data loaded once;
- ``gradient_norms`` (``inputs``, ``sigma``, ``method``, ``precision``): the gradient norms of
  ``ddrs gradient-norms`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

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
        help="what changes only how fast the job runs: {certify: CERTIFY's speed settings, sigma_search: {batch}}",
    )
    parser.set_defaults(run=run)


def read_document(path: str) -> dict[str, Any]:
    """The JSON document at ``path`` (``-``: standard input)."""
    text = sys.stdin.read() if path == "-" else Path(path).read_text()
    document = json.loads(text)
    if not isinstance(document, dict):
        raise ValueError(f"the job document {path} is not a JSON object")
    return document


def _test_inputs(document: dict[str, Any], checkpoint: str) -> argparse.Namespace:
    """The ``inputs`` section as the test-input options of ``ddrs certify``."""
    return argparse.Namespace(checkpoint=checkpoint, **document["inputs"])


def sigma_search_settings(document: dict[str, Any], speed: dict[str, Any] | None = None):
    """The document's σ search (Algorithm 1 or the Appendix-B grid), or None for a fixed σ."""
    from ddrs.core.settings import Algorithm1Settings, GridSearchSettings

    speed = (speed or {}).get("sigma_search", {})
    if "algorithm1" in document:
        return Algorithm1Settings(**{**document["algorithm1"], **speed})
    if "grid_search" in document:
        from ddrs.core.sigma import grid_for_budget

        search = {**document["grid_search"], **speed}
        grid = grid_for_budget(search.pop("low"), search.pop("high"), search["n"], search.pop("budget"))
        return GridSearchSettings(**search, grid=grid.tolist())
    return None


def kind_of(document: dict[str, Any]) -> str:
    """The document's ``kind`` (:data:`ddrs.pipeline.job_plan.KINDS`)."""
    from ddrs.pipeline.job_plan import KINDS

    kind = document.get("kind")
    if kind not in KINDS:
        raise ValueError(f"the job document's kind is {kind!r}; it must be one of {list(KINDS)}")
    return kind


def run(args: argparse.Namespace) -> None:
    from ddrs.pipeline.provenance import record

    document = read_document(args.config)
    _run(document, json.loads(args.speed), args)
    outputs = [*args.out, *(args.memory_out or []), *([args.sigma_log] if args.sigma_log else [])]
    record(outputs, kind_of(document), document)


def _run(document: dict[str, Any], speed: dict[str, Any], args: argparse.Namespace) -> None:
    if kind_of(document) == "gradient_norms":
        from ddrs.cli.gradient_norms import measure

        inputs = document["inputs"]
        (out,) = args.out
        measure(
            checkpoint=args.checkpoint,
            out=out,
            sigma=document["sigma"],
            method=document["method"],
            precision=document["precision"],
            **{key: value for key, value in inputs.items() if key != "max"},
            max_index=inputs["max"],
        )
        return
    _certify(document, speed, args)


def _certify(document: dict[str, Any], speed: dict[str, Any], args: argparse.Namespace) -> None:
    from ddrs.cli import _test_inputs as test_inputs
    from ddrs.cli.certify import certify_logs, sigma_log_jobs
    from ddrs.cli.optimize_sigma import write_sigma_log
    from ddrs.core.settings import Algorithm1Settings, CertifySettings
    from ddrs.jobs.logs import kept_partials
    from ddrs.jobs.sigma_log_format import grid_column, sigma_column

    settings = CertifySettings.from_parts(document["certify"], speed.get("certify", {}))
    search = sigma_search_settings(document, speed)
    namespace = _test_inputs(document, args.checkpoint)
    test_inputs.check(namespace)
    if search is None:
        if args.sigma_log is not None or len(args.out) != 1:
            raise ValueError("a fixed-σ job writes one --out log and no --sigma-log")
        sigma = float(document["sigma"])
        certify_logs(settings, [(f"sigma {sigma}", sigma, args.out[0])], test_inputs.load(namespace), args.memory_out)
        return
    if args.sigma_log is None:
        raise ValueError("a σ-search job needs --sigma-log")
    columns = (
        [sigma_column(k) for k in search.steps] if isinstance(search, Algorithm1Settings) else [grid_column(search.n)]
    )
    if len(args.out) != len(columns) or (args.memory_out is not None and len(args.memory_out) != len(columns)):
        raise ValueError(
            f"the σ search writes {len(columns)} column(s) {columns}: give one --out (and --memory-out) each"
        )
    inputs = test_inputs.load(namespace)
    with kept_partials():
        write_sigma_log(search, inputs, args.sigma_log)
        certify_logs(settings, sigma_log_jobs(args.sigma_log, columns, args.out), inputs, args.memory_out)
