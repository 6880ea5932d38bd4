"""The claims and the variance budget of a finished results tree, checked (issue 67).

From a tree that ``make all`` finished (the embedded default: five training runs of table1's models
and the seed claims' rows), with this checkout's code, it builds ``claims_<dataset>`` and
``variance_budget_<dataset>`` as the workflow would (the catalogue's own arguments, read in the
tree), and prints:

1. **the claims**: per claim its effect and interval, the test with the inputs fixed and the
   unconditional test (Holm over the claims), the verdict, the runs its verdict needs, and the
   verdict the tree's own ``claims_<dataset>.csv`` gave (the code that built the tree);
2. **the bootstrap's seed**: the claims rebuilt with ``--seeds`` other bootstrap seeds (the split's
   seed kept): whether every verdict is the same, and which settled interval bound changes side;
3. **the budget against MixedLM**: per recipe, the ACR's moment components beside statsmodels'
   ``MixedLM`` REML fit of the same values, and the largest relative difference of the partition;
4. **the verdict rule's level**: per claim, how often the unconditional test rejects in
   ``--experiments`` simulated null experiments of its runs × inputs with its estimated components,
   at α and at α/m (Holm's first threshold over the m testable claims).

    cd FINISHED_TREE && PYTHONPATH=CHECKOUT/src python CHECKOUT/benchmarks/replication_checks.py \\
        --configfile config/config.yaml --dataset mnist5k [--seeds 20] [--experiments 4000]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd
from _report import add_json_option, write_report
from tabulate import tabulate

import ddrs.analysis.claims as claims_module
from ddrs.analysis.crossed import PARTS, MeanSquares, mixed_model_components
from ddrs.analysis.loading import load_records
from ddrs.analysis.stats import pigeonhole_means
from ddrs.analysis.tables import radii_for
from ddrs.analysis.variance_budget import metric_values, variance_budget
from ddrs.pipeline import Experiment
from ddrs.pipeline.catalogue import CATALOGUE
from ddrs.pipeline.provenance import load_config

SCHEMA = Path(__file__).resolve().parents[1] / "config" / "schema" / "config.schema.yaml"
SHOWN = ["claim", "sigma0", "effect", "low", "high", "p_fixed_inputs_holm", "df", "p_holm", "verdict"]


def builder_arguments(exp: Experiment, entry: str, dataset: str) -> dict:
    """What the workflow calls catalogue ``entry``'s builder with, for ``dataset``."""
    return CATALOGUE[entry].arguments(exp, {"dataset": dataset})["builder"]


def claims_section(arguments: dict, dataset: str) -> tuple[pd.DataFrame, dict]:
    """The claims as this checkout decides them, beside the tree's own table (if there is one)."""
    table = claims_module.claims_table(**arguments)
    shown = table[SHOWN + ["runs_needed", "runs_needed_low", "runs_needed_high", "plan"]].copy()
    built = Path("results") / "tables" / f"claims_{dataset}.csv"
    if built.exists():
        shown["verdict_of_tree"] = pd.read_csv(built)["verdict"].to_numpy()
    print("\n## Claims (this checkout; verdict_of_tree: the tree's claims table)\n")
    print(tabulate(shown, headers="keys", showindex=False, floatfmt=".4g"))
    return table, {"claims": records(table), "verdicts_of_tree": shown.get("verdict_of_tree", pd.Series()).tolist()}


def records(frame: pd.DataFrame) -> list[dict]:
    """A table's rows as JSON values at full precision (NaN and missing counts as null)."""
    return [
        {key: None if pd.isna(value) else getattr(value, "item", lambda v=value: v)() for key, value in row.items()}
        for row in frame.to_dict(orient="records")
    ]


def seeds_section(arguments: dict, table: pd.DataFrame, seeds: int) -> dict:
    """The claims under ``seeds`` other bootstrap seeds (the split's seed kept)."""
    original = claims_module.pigeonhole_means
    settled = (table["interval_note"] == "").to_numpy()
    same, flipped = [], []
    try:
        for seed in range(1, seeds + 1):

            def reseeded(values, *, n_boot, dataset, seed=seed):
                return pigeonhole_means(values, n_boot=n_boot, seed=seed, dataset=dataset)

            claims_module.pigeonhole_means = reseeded
            again = claims_module.claims_table(**arguments)
            same.append(again["verdict"].tolist() == table["verdict"].tolist())
            for bound in ("low", "high"):
                moved = settled & (np.sign(again[bound]) != np.sign(table[bound])).to_numpy()
                flipped += [
                    (seed, table["claim"].iloc[k], table["sigma0"].iloc[k], bound) for k in np.flatnonzero(moved)
                ]
    finally:
        claims_module.pigeonhole_means = original
    print(f"\n## {seeds} bootstrap seeds\n")
    print(f"identical verdicts on every claim under every seed: {all(same)} ({sum(same)} of {seeds} seeds)")
    print(f"settled interval bounds that changed side: {len(flipped)} {flipped[:5]}")
    unsettled = table.loc[~settled, ["claim", "sigma0", "low", "high", "interval_note"]]
    if len(unsettled):
        print(tabulate(unsettled, headers="keys", showindex=False, floatfmt=".4g"))
    return {"seeds": seeds, "identical_verdicts": all(same), "seeds_identical": sum(same), "bounds_flipped": flipped}


def recipe_values(arguments: dict) -> dict[tuple, np.ndarray]:
    """Per (dataset, variant, σ₀) of the budget's records: its per-input ACR, runs × inputs."""
    groups: dict[tuple, dict[int, pd.DataFrame]] = {}
    for record, log in load_records(arguments["records"]):
        groups.setdefault((record.dataset, record.name, record.sigma0, record.norm), {})[record.replicate] = log
    values = {}
    for (dataset, name, sigma0, norm), by_run in groups.items():
        grid = radii_for(arguments.get("radii"), dataset, norm)
        values[dataset, name, sigma0] = np.stack([metric_values(by_run[r], grid)[1][:, -1] for r in sorted(by_run)])
    return values


def mixedlm_section(arguments: dict) -> dict:
    """Each recipe's ACR partition by moments (the table's) against MixedLM's REML fit."""
    table, _ = variance_budget(**arguments)
    acr = table[table["metric"] == "ACR"].set_index(["dataset", "variant", "sigma0"])
    rows = []
    for key, values in recipe_values(arguments).items():
        fitted = mixed_model_components(values)
        inputs = values.shape[1]
        weights = {"run": 1.0, "input": 1 / inputs, "residual": 1 / inputs}
        total = sum(weights[p] * fitted[p] for p in PARTS)
        row = {"recipe": " ".join(map(str, key)), "runs": values.shape[0], "inputs": inputs}
        for part in PARTS:
            row |= {f"sigma2_{part}": acr.loc[key, f"sigma2_{part}"], f"mixedlm_{part}": fitted[part]}
            row |= {
                f"share_{part}": acr.loc[key, f"share_{part}"],
                f"mixedlm_share_{part}": weights[part] * fitted[part] / total,
            }
        row["largest_share_difference"] = max(abs(row[f"share_{p}"] - row[f"mixedlm_share_{p}"]) for p in PARTS)
        row["largest_relative_difference"] = max(
            abs(row[f"sigma2_{p}"] - fitted[p]) / fitted[p] for p in PARTS if fitted[p] > 0
        )
        row["flag"] = acr.loc[key, "flag"]
        rows.append(row)
    frame = pd.DataFrame(rows)
    print("\n## Variance budget of ACR: moments against MixedLM (REML)\n")
    columns = ["recipe", "runs", "inputs", *(f"share_{p}" for p in PARTS), *(f"mixedlm_share_{p}" for p in PARTS)]
    print(
        tabulate(
            frame[[*columns, "largest_relative_difference", "flag"]], headers="keys", showindex=False, floatfmt=".4g"
        )
    )
    return {"mixedlm": records(frame)}


def level_section(table: pd.DataFrame, alpha: float, experiments: int) -> dict:
    """The unconditional test's rejection rate in null experiments with each claim's estimated components."""
    testable = table[table["p"] < 1]
    levels = {"alpha": alpha, "alpha_over_m": alpha / len(testable)}
    rng = np.random.default_rng(0)
    rows = []
    for row in testable.itertuples(index=False):
        parts = {part: getattr(row, f"sigma2_{part}") for part in PARTS}
        shape = (int(row.runs), int(row.inputs), experiments)
        values = (
            rng.normal(0, math.sqrt(parts["run"]), (shape[0], 1, experiments))
            + rng.normal(0, math.sqrt(parts["input"]), (1, shape[1], experiments))
            + rng.normal(0, math.sqrt(parts["residual"]), shape)
        )
        p = MeanSquares.of(values).test()[2]
        rows.append({"claim": row.claim, "sigma0": row.sigma0} | {k: float((p < v).mean()) for k, v in levels.items()})
    frame = pd.DataFrame(rows)
    print(f"\n## The verdict rule's level at each claim's components ({experiments} null experiments)\n")
    print(f"nominal: α = {levels['alpha']:g}, α/m = {levels['alpha_over_m']:.4g}")
    print(tabulate(frame, headers="keys", showindex=False, floatfmt=".4g"))
    return {"level": records(frame), "nominal": levels, "experiments": experiments}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configfile", nargs="+", default=["config/config.yaml"])
    parser.add_argument("--dataset", default="mnist5k")
    parser.add_argument("--seeds", type=int, default=20, help="other bootstrap seeds the claims are rebuilt with")
    parser.add_argument("--experiments", type=int, default=4000, help="null experiments per claim for the level")
    add_json_option(parser)
    args = parser.parse_args()
    exp = Experiment(load_config(args.configfile, SCHEMA))
    claims_arguments = builder_arguments(exp, "claims_table", args.dataset)
    table, figures = claims_section(claims_arguments, args.dataset)
    figures |= seeds_section(claims_arguments, table, args.seeds)
    figures |= mixedlm_section(builder_arguments(exp, "variance_budget", args.dataset))
    figures |= level_section(table, claims_arguments["inference"].alpha, args.experiments)
    write_report("replication_checks", figures, args.json)


if __name__ == "__main__":
    main()
