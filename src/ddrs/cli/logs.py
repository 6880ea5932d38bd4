"""``ddrs logs``: bring published certification logs into a local cache, and audit them.

``ddrs logs fetch`` fetches the registry's logs (all, or those selected by repository, paper,
dataset, method) over HTTPS at their pinned commits, or from local mirrors (``--mirror
REPO=PATH``: a git directory or a checkout), each checked against its sha256 before it appears
in the cache. ``ddrs logs audit`` fetches the same way, then writes one row per log with its
flags and findings (cut short, header-only, duplicates, label conflicts, impossible radii, ...).
"""

from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "logs", help="fetch and audit published certification logs (the registry)", description=__doc__
    )
    commands = parser.add_subparsers(dest="logs_command", required=True, metavar="SUBCOMMAND")
    fetch = commands.add_parser("fetch", help="bring the selected logs into the cache, checked against their sha256")
    _add_source_options(fetch)
    fetch.set_defaults(run=run_fetch)
    audit = commands.add_parser("audit", help="fetch the selected logs, then write their audit (one row per log)")
    _add_source_options(audit)
    audit.add_argument("--out", required=True, help="audit CSV to write (atomically)")
    audit.set_defaults(run=run_audit)
    parser.set_defaults(compute="numpy")


def _add_source_options(parser: argparse.ArgumentParser) -> None:
    select = parser.add_argument_group("selection (repeat an option for several values; options combine)")
    for option, what in (
        ("--repository", "owner/name"),
        ("--paper", "the paper key, e.g. cohen2019"),
        ("--dataset", "e.g. cifar10, imagenet"),
        ("--method", "our method name, or external"),
    ):
        select.add_argument(option, action="append", default=None, metavar=option.strip("-").upper(), help=what)
    parser.add_argument("--registry", default=None, help="registry CSV (default: the one shipped in ddrs.published)")
    parser.add_argument("--cache", required=True, help="cache directory: logs land at <cache>/<repo>/<commit>/<path>")
    parser.add_argument(
        "--mirror",
        action="append",
        default=[],
        metavar="REPO=PATH",
        help="read REPO's logs from a local mirror (git directory or checkout) instead of the network",
    )
    parser.add_argument("--base-url", default=None, help="raw file server (default: https://raw.githubusercontent.com)")
    parser.add_argument("--offline", action="store_true", help="never use the network: every log needs a mirror")
    parser.add_argument("--tries", type=int, default=4, help="network tries per log (backoff doubles from 1 s)")


def _mirrors(values: list[str]) -> dict[str, str]:
    mirrors = {}
    for value in values:
        repository, separator, path = value.partition("=")
        if not separator or not repository or not path:
            raise ValueError(f"--mirror {value!r}: expected REPO=PATH, e.g. locuslab/smoothing=/mirrors/smoothing")
        mirrors[repository] = path
    return mirrors


def _fetch(args: argparse.Namespace):
    """The selected logs and their cached paths."""
    from ddrs.published.fetch import DEFAULT_BASE_URL, fetch_logs
    from ddrs.published.registry import load_registry, published_logs

    registry = load_registry(args.registry)
    selection = {key: getattr(args, key) for key in ("repository", "paper", "dataset", "method")}
    logs = published_logs(registry, **{key: value for key, value in selection.items() if value is not None})
    if not logs:
        chosen = ", ".join(f"{key}={'|'.join(value)}" for key, value in selection.items() if value) or "none"
        raise ValueError(f"no registry log matches the selection ({chosen})")
    base_url = None if args.offline else (args.base_url or DEFAULT_BASE_URL)
    paths = fetch_logs(logs, args.cache, mirrors=_mirrors(args.mirror), base_url=base_url, tries=args.tries)
    return logs, paths


def run_fetch(args: argparse.Namespace) -> None:
    logs, _ = _fetch(args)
    print(f"{len(logs)} published logs in {args.cache}, each checked against its sha256")


def run_audit(args: argparse.Namespace) -> None:
    from ddrs.io import atomic_path
    from ddrs.published.audit import audit, flag_table

    logs, paths = _fetch(args)
    frame = audit(logs, paths)
    with atomic_path(args.out) as tmp:
        frame.to_csv(tmp, index=False)
    flags = flag_table(frame)
    print(f"{len(frame)} logs audited, {int(flags.any(axis=1).sum())} flagged; written to {args.out}")
    for flag, count in flags.sum().items():
        if count:
            print(f"  {flag}: {count} logs")
