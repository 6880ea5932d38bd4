"""Regenerate ``src/ddrs/published/order_labels.csv``, the label fingerprints of the input orders
(:mod:`ddrs.published.input_orders`), from local mirrors.

For every dataset the input-order table reads in more than one order: each test-split log's order
as the table declares it (its longest path prefix, else the standard order), and per order the label
at every idx its logs certify. Two logs of one order disagreeing at an idx, or two orders giving one
label at every idx they share, stop the script: the table's declarations are wrong, and a
fingerprint built from them would be too::

    python scripts/published_order_labels.py --mirrors ~/mirrors
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from pathlib import Path

import pandas as pd
from published_logs_registry import git_dir_in

from ddrs.errors import DDRSError
from ddrs.io import atomic_path
from ddrs.published.input_orders import LABEL_COLUMNS, LABELS_PATH, order_of, read_orders
from ddrs.published.log_registry import load_registry


def log_labels(git_dir: Path, commit: str, path: str) -> pd.DataFrame:
    """The ``idx`` and ``label`` columns of the log at ``commit:path``."""
    text = subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"], capture_output=True, text=True, check=True
    ).stdout
    return pd.read_csv(io.StringIO(text), sep="\t", usecols=["idx", "label"], dtype="int64")


def order_labels(registry: pd.DataFrame, orders: pd.DataFrame, mirrors: dict[str, Path]) -> pd.DataFrame:
    """One row of :data:`LABEL_COLUMNS` per dataset of several orders, order and certified idx."""
    tables = []
    for dataset in sorted(orders["dataset"].unique()):
        logs = registry[(registry["dataset"] == dataset) & (registry["split"] == "test") & (registry["rows"] > 0)]
        rows = []
        for log in logs.itertuples(index=False):
            if log.repository not in mirrors:
                raise DDRSError(f"no mirror of {log.repository}: the {dataset} fingerprints need every log")
            frame = log_labels(mirrors[log.repository], log.commit, log.path)
            rows.append(frame.assign(order=order_of(orders, dataset, log.repository, log.path), log=log.path))
        labels = pd.concat(rows, ignore_index=True)
        conflicts = labels.groupby(["order", "idx"])["label"].nunique()
        if (conflicts > 1).any():
            order, idx = conflicts[conflicts > 1].index[0]
            raise DDRSError(f"{dataset}: the {order} order's logs give idx {idx} several labels")
        table = labels.drop_duplicates(["order", "idx"]).assign(dataset=dataset)[list(LABEL_COLUMNS)]
        wide = table.pivot(index="idx", columns="order", values="label").dropna()
        for first in wide.columns:
            for second in wide.columns:
                if first < second and (wide[first] == wide[second]).all():
                    raise DDRSError(f"{dataset}: the {first} and {second} orders give the same labels")
        tables.append(table.sort_values(["order", "idx"]))
    return pd.concat(tables, ignore_index=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirrors", required=True, metavar="DIR", help="a folder of <owner>+<name> mirrors")
    parser.add_argument("--out", default=str(LABELS_PATH), help="the table to write (default: the shipped one)")
    args = parser.parse_args(argv)
    registry = load_registry()
    mirrors = {}
    for repository in registry["repository"].unique():
        git_dir = git_dir_in(Path(args.mirrors) / repository.replace("/", "+"))
        if git_dir is not None:
            mirrors[repository] = git_dir
    table = order_labels(registry, read_orders(), mirrors)
    with atomic_path(args.out) as tmp:
        table.to_csv(tmp, index=False)
    counts = table.groupby(["dataset", "order"]).size()
    print("; ".join(f"{dataset} {order}: {count} idx" for (dataset, order), count in counts.items()), "→", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
