"""``ddrs logs``: bring published certification logs into a local cache, audit them, and rank one's
own logs among them.

``ddrs logs fetch`` fetches the registry's logs (all, or those selected by repository, paper,
dataset, method) over HTTPS at their pinned commits, or from local mirrors (``--mirror
REPO=PATH``: a git directory or a checkout), each checked against its sha256 before it appears
in the cache. ``ddrs logs audit`` fetches the same way, then writes one row per log with its
flags and findings (cut short, header-only, duplicates, label conflicts, impossible radii, ...).
``ddrs logs rank`` fetches one dataset's logs the same way and places your own Cohen-format logs
(``--own NAME SIGMA PATH``) on its leaderboard: ranked among the published ones, compared with the
matched Gaussian log and the best log of every family (:mod:`ddrs.published.own_logs`; the
config's ``published_logs.own`` does the same in the workflow).
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
    rank = commands.add_parser(
        "rank", help="place your own Cohen-format logs on one dataset's leaderboard of the selected published logs"
    )
    _add_source_options(rank)
    rank.add_argument(
        "--own",
        nargs=3,
        action="append",
        required=True,
        metavar=("NAME", "SIGMA", "PATH"),
        help="your log: its name on the leaderboard (each once), the σ it was certified at, the file (repeat for "
        "several); its idx must be exactly one published input set's",
    )
    rank.add_argument("--families", default=None, help="families CSV (default: the one shipped with ddrs)")
    rank.add_argument("--arch", default="", help="your model's architecture as the registry spells it (resnet110)")
    rank.add_argument(
        "--n",
        type=int,
        default=None,
        help="the Monte Carlo samples your logs were certified with (checks the radius cap)",
    )
    rank.add_argument("--alpha", type=float, default=0.001, help="the α your logs were certified at (default 0.001)")
    rank.add_argument(
        "--order", default=None, help="the input order your idx number (default: the published order your labels fit)"
    )
    rank.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals")
    rank.add_argument(
        "--out", required=True, help="folder for leaderboard.csv, vs_gaussian.csv, replication.csv and headline.csv"
    )
    rank.set_defaults(run=run_rank)
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
    parser.add_argument("--registry", default=None, help="registry CSV (default: the one shipped with ddrs)")
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
    from ddrs.published.log_registry import load_registry, published_logs

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


def run_rank(args: argparse.Namespace) -> None:
    from pathlib import Path

    from ddrs.analysis.metrics import paper_radii
    from ddrs.analysis.stats import Inference
    from ddrs.io import atomic_path
    from ddrs.published.families import read_families
    from ddrs.published.gaussian_comparisons import gaussian_comparisons_table
    from ddrs.published.headline import headline
    from ddrs.published.leaderboard import leaderboard_table, load_entries
    from ddrs.published.log_registry import load_registry
    from ddrs.published.own_logs import OWN_REPOSITORY, own_entries, own_specs
    from ddrs.published.run_margin import replication_table

    if not args.dataset or len(args.dataset) != 1:
        raise ValueError("ddrs logs rank: give exactly one --dataset, the leaderboard your logs join")
    (dataset,) = args.dataset
    own = own_specs(
        (
            name,
            {"dataset": dataset, "sigma": float(sigma), "path": path, "arch": args.arch, "alpha": args.alpha}
            | ({} if args.n is None else {"n": args.n})
            | ({} if args.order is None else {"order": args.order}),
        )
        for name, sigma, path in args.own
    )
    logs, paths = _fetch(args)
    files = {(log.repository, log.path): path for log, path in zip(logs, paths, strict=True)}
    registry = load_registry(args.registry)
    registry = registry[[key in files for key in zip(registry["repository"], registry["path"], strict=True)]]
    published = load_entries(registry, dataset, files, read_families(args.families))
    entries = [*published, *own_entries(own, dataset, published)]
    radii, inference = paper_radii(dataset), Inference(seed=args.seed)
    board = leaderboard_table(entries, dataset, radii, inference=inference)
    versus = gaussian_comparisons_table(entries, dataset, radii, inference=inference)
    replication = replication_table(entries, dataset, inference.alpha)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, table in (
        ("leaderboard", board),
        ("vs_gaussian", versus),
        ("replication", replication),
        ("headline", headline(versus, replication, inference.alpha)),
    ):
        with atomic_path(out / f"{name}.csv") as tmp:
            table.to_csv(tmp, index=False)
    mine = board[(board["repository"] == OWN_REPOSITORY) & (board["sigma"] == "envelope")]
    for row in mine.itertuples(index=False):
        print(f"{row.method}: rank {row.rank} of {row.input_set} (ACR {row.ACR_per_log:.3f})")
    for row in versus[versus["repository"] == OWN_REPOSITORY].itertuples(index=False):
        if row.tested:
            print(f"  {row.method} vs {row.against} ({row.baseline}): ACR {row.ACR:+.3f}, Holm p {row.ACR_p_holm:.2g}")
    print(f"written to {out}: leaderboard.csv, vs_gaussian.csv, replication.csv, headline.csv")
