"""The futility rule on the default's digits, side by side with the recorded runs without it (issue 60).

Reads the sequential logs ``<logs>/sigma<σ>/sequential_<test>_futility<β′>.tsv`` that ``ddrs certify
--mode sequential --sequence <test> --futility <β′>`` wrote on the inputs, models and per-input
streams of a recorded ``benchmarks/sequential_certify.py`` run (``--record``: its JSON, the same test
with the rule off, against fixed n) and prints per σ and radius: certified accuracy under fixed n,
the recorded test, the test with the rule, and ``--beside`` (another recorded test, e.g.
``betting_cp``); then passes per input and the grid-floored ACR of each.

The rule never raises an input's radius on the same stream (``tests/test_sequential.py``), so at
each radius the recorded count minus the new one is exactly the number of inputs whose radius fell
below it (``fell``; a negative count means the runs do not share models or streams, and stops the
script). Without the fixed-n log the McNemar test against fixed n is bounded: of the ``fell``
inputs, x were certified by the recorded test alone and the rest by both, so the discordant pairs
become (b − x, c + fell − x) for the recorded (b, c); ``mcnemar_p_least`` is the least exact p over
every such x, a lower bound on the paired p (and so on its Holm adjustment). Where the log without
the rule (``..._futility0.tsv``) is also in ``<logs>``, the inputs that fell are listed by index.

    .venv/bin/python benchmarks/sequential_futility.py --logs DIR \\
        --record benchmarks/measured/sequential_certify-cpu-mnist5k-500-grid-draw-d33d297.json \\
        --beside benchmarks/measured/sequential_certify-cpu-mnist5k-500-betting_cp-draw-d33d297.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import yaml
from _report import add_json_option, write_report
from tabulate import tabulate

from ddrs.analysis.sequential_comparison import grid_acr
from ddrs.analysis.stats import mcnemar_p
from ddrs.core.settings import SequentialSettings
from ddrs.logs.certification_log import read_log

ROOT = Path(__file__).resolve().parent.parent
N0, N = 100, 100_000


def certified_counts(log, radii: np.ndarray) -> np.ndarray:
    """Inputs certified correctly at radius at least r, for each r."""
    right = log["correct"].to_numpy() == 1
    return (right[None, :] & (log["radius"].to_numpy(float)[None, :] >= radii[:, None] - 1e-12)).sum(axis=1)


def least_mcnemar_p(recorded_only: int, fixed_only: int, fell: int) -> float:
    """The least exact McNemar p over every split of the ``fell`` inputs (module docstring)."""
    splits = np.arange(min(recorded_only, fell) + 1)
    return float(mcnemar_p(recorded_only - splits, fixed_only + fell - splits).min())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logs", type=Path, required=True, help="holds sigma<σ>/sequential_<test>_futility<β′>.tsv")
    parser.add_argument("--record", type=Path, required=True, help="sequential_certify.py's JSON of the test, rule off")
    parser.add_argument("--beside", type=Path, help="another recorded test's JSON, shown beside (e.g. betting_cp)")
    parser.add_argument("--sequence", default="grid")
    parser.add_argument("--futility", type=float, default=SequentialSettings.futility)
    parser.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    parser.add_argument("--dataset", default="mnist5k")
    parser.add_argument("--sigmas", type=float, nargs="+", default=None, help="default: the dataset's σ grid")
    add_json_option(parser)
    args = parser.parse_args()
    grid = yaml.safe_load(args.config.read_text())["datasets"][args.dataset]
    radii = np.asarray(grid["radii"], dtype=float)
    records = {"recorded": json.loads(args.record.read_text())["figures"]}
    if args.beside:
        records["beside"] = json.loads(args.beside.read_text())["figures"]
    figures = {}
    for sigma in args.sigmas or grid["sigmas"]:
        key = f"{args.dataset}_sigma{sigma:g}"
        folder = args.logs / f"sigma{sigma:g}"
        name = f"sequential_{args.sequence}_futility{args.futility:g}.tsv"
        if not (folder / name).exists():
            print(f"{key}: no {name} yet")
            continue
        log = read_log(folder / name).sort_values("idx")
        recorded = records["recorded"][key]
        inputs = recorded["inputs"]
        if len(log) != inputs:
            raise SystemExit(f"{folder / name} holds {len(log)} inputs, the record {inputs}")
        rows = {r["radius"]: r for r in recorded["rows"]}
        before = np.array([round(rows[r]["sequential"] * inputs / 100) for r in radii])
        after = certified_counts(log, radii)
        fell = before - after
        if (fell < 0).any():
            raise SystemExit(f"{key}: the rule certified more than the record at some radius: not the same runs")
        table = {
            "radius": radii,
            "fixed": [rows[r]["fixed"] for r in radii],
            args.sequence: [rows[r]["sequential"] for r in radii],
            f"{args.sequence}, futility {args.futility:g}": 100 * after / inputs,
        }
        if "beside" in records:
            beside = {r["radius"]: r for r in records["beside"][key]["rows"]}
            table["beside"] = [beside[r]["sequential"] for r in radii]
        fixed = np.array([round(rows[r]["fixed"] * inputs / 100) for r in radii])
        table["difference_vs_fixed"] = 100 * (after - fixed) / inputs
        table["fell"] = fell
        table["mcnemar_p_least"] = [
            least_mcnemar_p(rows[r]["sequential_only"], rows[r]["fixed_only"], int(f))
            for r, f in zip(radii, fell, strict=True)
        ]
        summary = {
            "inputs": inputs,
            "passes_futility_mean": float(log["draws"].mean()),
            "passes_futility_median": float(log["draws"].median()),
            "passes_recorded_mean": recorded["passes_sequential_mean"],
            "passes_fixed_mean": float(N0 + N),
            "acr_grid_futility": grid_acr(log, radii),
            "acr_grid_recorded": recorded["acr_sequential_grid"],
            "acr_grid_fixed": recorded["acr_fixed_grid"],
            "undecided_at_cap": float(1 - log["decided"].to_numpy(float).mean()),
            "seconds_futility": float(log["time"].mean()),
        }
        if "beside" in records:
            summary["passes_beside_mean"] = records["beside"][key]["passes_sequential_mean"]
            summary["acr_grid_beside"] = records["beside"][key]["acr_sequential_grid"]
            summary["beside_over_futility"] = summary["passes_beside_mean"] / summary["passes_futility_mean"]
        paired = folder / f"sequential_{args.sequence}_futility0.tsv"
        if paired.exists():
            off = read_log(paired).sort_values("idx")
            summary["passes_off_rerun_mean"] = float(off["draws"].mean())
            lower = log["radius"].to_numpy(float) < off["radius"].to_numpy(float)
            summary["inputs_fell"] = log["idx"].to_numpy()[lower].tolist()
            summary["stopped_later"] = int((log["draws"].to_numpy() > off["draws"].to_numpy()).sum())
        print(f"\n{key}, {inputs} inputs (n0 = {N0}, n = {N:,}; futility β′ = {args.futility:g})")
        print(tabulate(table, headers="keys", floatfmt=".4g"))
        print(", ".join(f"{k} {v:,.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in summary.items()))
        figures[key] = {
            **summary,
            "rows": [dict(zip(table, values, strict=True)) for values in zip(*table.values(), strict=True)],
        }
    write_report("sequential_futility", json.loads(json.dumps(figures, default=float)), args.json)


if __name__ == "__main__":
    main()
