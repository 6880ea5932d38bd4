"""Cost of a table's ACR significance test: the sign-flip test of every pair of a group's rows.

The test's patterns are sized to the group's Holm family (``flip_resamples``: ⌈20·m/α⌉ for m =
pairs × tested columns). It takes each row's sums once and every pair's as a difference of two
rows' (``sign_flip_p(values, pairs)``); the baseline takes each pair's sums from that pair's own
differences (``sign_flip_p(differences)``), as the test did before. Both run side by side on the
same random radii and patterns; the script prints seconds per million patterns for each, their
ratio, and the projected seconds of the family's full pattern count. Default: CIFAR-10 Cohen's
largest Appendix H block at paper scale (25 rows of 10,000 inputs, 12 tested columns).

    PYTHONPATH=src .venv/bin/python benchmarks/table_significance.py [--rows 25] [--inputs 10000]
"""

from __future__ import annotations

import argparse
import time
from itertools import combinations

import numpy as np
from _report import add_json_option, write_report

from ddrs.analysis.stats import flip_resamples, sign_flip_p


def significant(value: float, digits: int = 3) -> float:
    """``value`` to ``digits`` significant figures: a quick run's seconds are small but never rounded to 0."""
    return float(f"{value:.{digits}g}")


def seconds(run) -> float:
    began = time.perf_counter()
    run()
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=25, help="rows of the group (tested logs)")
    parser.add_argument("--inputs", type=int, default=10_000, help="test inputs")
    parser.add_argument("--columns", type=int, default=12, help="tested columns (radii and the ACR)")
    parser.add_argument("--patterns", type=int, default=50_000, help="sign patterns each way is timed on")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--quick", action="store_true", help="a small group, for CI")
    add_json_option(parser)
    args = parser.parse_args()
    if args.quick:
        args.rows, args.inputs, args.patterns = 6, 300, 20_000
    radii = np.clip(np.random.default_rng(0).normal(0.4, 0.3, (args.inputs, args.rows)), 0, None)
    pairs = list(combinations(range(args.rows), 2))
    differences = np.stack([radii[:, a] - radii[:, b] for a, b in pairs], axis=1)
    family = flip_resamples(len(pairs) * args.columns, args.alpha)
    draws = {"n_resamples": args.patterns, "seed": 0, "dataset": "benchmark"}
    per_row = seconds(lambda: sign_flip_p(radii, pairs, **draws))
    per_pair = seconds(lambda: sign_flip_p(differences, **draws))
    figures = {
        "rows": args.rows,
        "pairs": len(pairs),
        "inputs": args.inputs,
        "family_patterns": family,
        "per_row_s_per_million": significant(per_row / args.patterns * 1e6),
        "per_pair_s_per_million": significant(per_pair / args.patterns * 1e6),
        "per_pair_over_per_row": significant(per_pair / per_row),
        "family_s_projected": significant(per_row / args.patterns * family),
    }
    print(
        f"{args.rows} rows ({len(pairs)} pairs) of {args.inputs} inputs: {figures['per_row_s_per_million']} s per "
        f"million patterns by rows, {figures['per_pair_s_per_million']} s by pairs "
        f"({figures['per_pair_over_per_row']}x); the family's {family} patterns: about "
        f"{figures['family_s_projected']} s"
    )
    write_report("table_significance", figures, args.json)


if __name__ == "__main__":
    main()
