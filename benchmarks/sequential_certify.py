"""Sequential against fixed-n certification at the paper's settings, on the same inputs, σ and model.

For each σ, the trained default model ``<results>/<dataset>/cohen/fs/sigma<σ>/model.pt`` (``make
table1`` trains it) certifies the same test digits twice through ``ddrs certify``: Cohen's CERTIFY
at n0 = 100, n = 100,000, α = 0.001, and ``--mode sequential`` with the cap n = 100,000 and the
config's radius grid. Both draw from the same per-input streams (the same selection draws, so the
same c_A). The logs go to ``--out`` and resume, so a run cut short continues, and a run with a
smaller ``--skip`` reuses the inputs already certified. Then it prints, per σ and radius, the
comparison of :func:`ddrs.analysis.sequential_comparison.sequential_comparison` (certified accuracy with
intervals, exact McNemar Holm-adjusted, ACR, forward passes per input, share undecided at the cap,
wall time). ``--sequence`` chooses the sequential test and ``--futility`` its futility rule's β′
(the log is ``sequential_<test>_futility<β′>.tsv``); run it once per test to compare them.
Beside them, ``passes_floor_mean`` (:func:`wald_floor`): a heuristic floor, Wald's least expected
draws of a test that certifies what fixed n certified as often as it does, at the plug-in p_A.

    .venv/bin/python benchmarks/sequential_certify.py [--skip 2] [--sigmas 0.25 0.5 1.0] [--json PATH]

The default takes ~500 of mnist5k's 1,000 held-out digits (``--skip 2``). A finished log is kept
as it is; the comparison takes the inputs both logs hold. Times are the job's own wall time per
input (``time`` column), on whatever the CPU shares; ``--device cuda`` runs both modes on the GPU.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from _report import add_json_option, write_report
from scipy.stats import binom, norm
from tabulate import tabulate

from ddrs.analysis.sequential_comparison import sequential_comparison
from ddrs.cli import main
from ddrs.core.binomial import clopper_pearson_lower
from ddrs.core.settings import SequentialSettings
from ddrs.logs.certification_log import read_log

ROOT = Path(__file__).resolve().parent.parent
N0, N, ALPHA = 100, 100_000, 0.001


def certify(checkpoint: Path, dataset: str, sigma: float, out: Path, args, *mode: str) -> Path:
    """``ddrs certify`` into ``out`` unless that log is finished (a partial one resumes)."""
    if out.exists():
        return out
    flags = ["--checkpoint", str(checkpoint), "--dataset", dataset, "--sigma", str(sigma)]
    flags += ["--n0", str(N0), "--n", str(N), "--alpha", str(ALPHA), "--batch", str(args.batch)]
    flags += ["--skip", str(args.skip), "--device", args.device, "--seed", str(args.seed), "--out", str(out), *mode]
    if main(["certify", *flags]) != 0:
        raise SystemExit(f"ddrs certify failed for {out}")
    return out


def wald_floor(fixed: pd.DataFrame, sigma: float, radii: list[float]) -> float:
    """Mean forward passes (selection included) of a heuristic floor: per input, Wald's least expected
    draws of a test certifying the grid radius fixed n certified, as often as fixed n does, at p_A = p̂.

    For a level-α test of p ≤ p_r (p_r = Φ(r/σ), the threshold of the largest grid radius r ≤ the
    fixed-n radius) that certifies r with probability 1 − β under p_A, E[N] ≥ d(1 − β ‖ α)/KL(p_A ‖ p_r)
    (Wald 1947; the log-likelihood ratio at the stop against the divergence of the decision's laws),
    with β = fixed n's own chance of missing r at p_A, capped at n. Only the decision soundness needs is
    charged: an input fixed n does not certify costs nothing beyond n0 (abstaining is always sound).
    Not a lower bound on these inputs: p_A is the plug-in count behind each fixed-n bound (the k
    whose Clopper–Pearson bound from k of n is the log's p̲_A).
    """
    counts = np.arange(N + 1)
    bounds = clopper_pearson_lower(counts, N, ALPHA)
    p_a = np.searchsorted(bounds, fixed["p_a_lower"].to_numpy(float) - 1e-12) / N
    grid = np.asarray([0.0, *radii])
    certified = fixed["predict"].to_numpy() >= 0
    reached = grid[np.maximum(np.searchsorted(grid, fixed["radius"].to_numpy(float) * (1 + 1e-12), "right") - 1, 0)]
    threshold = norm.cdf(reached / sigma)
    least = np.searchsorted(bounds, threshold)  # the fewest correct of n with which fixed n certifies r
    beta = np.clip(binom.cdf(least - 1, N, p_a), 1e-300, 1 - ALPHA)
    power = 1 - beta
    evidence = power * np.log(power / ALPHA) + beta * np.log(beta / (1 - ALPHA))
    p, t = (np.clip(v, 1e-15, 1 - 1e-15) for v in (p_a, threshold))
    divergence = p * np.log(p / t) + (1 - p) * np.log((1 - p) / (1 - t))
    need = np.where(certified, np.minimum(N, np.maximum(evidence, 0.0) / divergence), 0.0)
    return float(N0 + need.mean())


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    parser.add_argument("--results", type=Path, default=ROOT / "results", help="where make table1 put the models")
    parser.add_argument("--dataset", default=None, help="default: the config's first dataset")
    parser.add_argument("--sigmas", type=float, nargs="+", default=None, help="default: the dataset's σ grid")
    parser.add_argument("--skip", type=int, default=2, help="every skip-th held-out digit")
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="where both modes certify (cpu, cuda)")
    parser.add_argument("--sequence", default=SequentialSettings.sequence)
    parser.add_argument("--futility", type=float, default=SequentialSettings.futility, help="β′ of the futility rule")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "sequential_logs")
    add_json_option(parser)
    args = parser.parse_args()
    config = yaml.safe_load(args.config.read_text())
    dataset = args.dataset or next(iter(config["datasets"]))
    grid = config["datasets"][dataset]
    radii = [r for r in grid["radii"] if r > 0]
    figures = {}
    for sigma in args.sigmas or grid["sigmas"]:
        checkpoint = args.results / dataset / "cohen" / "fs" / f"sigma{sigma:g}" / "model.pt"
        out = args.out / dataset / f"sigma{sigma:g}"
        mode = ["--mode", "sequential", "--sequence", args.sequence, "--futility", str(args.futility)]
        mode += ["--radii", *map(str, radii)]
        name = f"sequential_{args.sequence}_futility{args.futility:g}.tsv"
        sequential = certify(checkpoint, dataset, sigma, out / name, args, *mode)
        fixed = certify(checkpoint, dataset, sigma, out / "fixed.tsv", args)
        fixed, sequential = read_log(fixed), read_log(sequential)
        common = sorted(set(fixed["idx"]) & set(sequential["idx"]))  # logs kept from runs of another --skip
        fixed, sequential = (log[log["idx"].isin(common)] for log in (fixed, sequential))
        table = sequential_comparison(fixed, sequential, radii=[0.0, *radii], n0=N0, n=N)
        table.attrs["passes_floor_mean"] = wald_floor(fixed, sigma, radii)
        print(f"\n{dataset}, σ = {sigma:g}, {table.attrs['inputs']} inputs (n0 = {N0}, n = {N:,}, α = {ALPHA})")
        print(tabulate(table, headers="keys", showindex=False, floatfmt=".4g"))
        passes = (f"{k} {table.attrs[f'passes_{k}_mean']:,.0f}" for k in ("fixed", "sequential", "floor"))
        print("mean forward passes:", ", ".join(passes))
        figures[f"{dataset}_sigma{sigma:g}"] = {**table.attrs, "rows": table.to_dict(orient="records")}
    write_report("sequential_certify", figures, args.json)


if __name__ == "__main__":
    main_()
