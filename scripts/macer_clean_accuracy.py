"""MACER against Gaussian training on a config's dataset: clean accuracy of the smoothed classifier per σ.

Issue 20 asks that MACER trains on the embedded default: its clean accuracy (certified accuracy at
r = 0) within 10 points of Gaussian training's (``cohen``) at every σ. This trains both methods at
fixed σ with exactly the options the workflow gives them (``TrainingPlan.train_options``), through
``ddrs train``, certifies every ``--skip``-th test input with the config's CERTIFY settings through
``ddrs certify``, and prints clean accuracy and ACR per σ and method (``--check``: exit 1 when a gap
exceeds ``--max-gap``)::

    python scripts/macer_clean_accuracy.py --out /tmp/macer            # config/config.yaml, 200 digits
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from ddrs.pipeline import Experiment, Run

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(REPO / "config" / "config.yaml"))
    parser.add_argument("--dataset", default="mnist5k")
    parser.add_argument("--skip", type=int, default=5, help="certify every skip-th test input (5: 200 of 1,000)")
    parser.add_argument("--out", required=True, help="folder for models, training and certification logs")
    parser.add_argument("--max-gap", type=float, default=10.0, help="points of clean accuracy MACER may lose")
    parser.add_argument("--check", action="store_true", help="exit 1 when MACER loses more than --max-gap")
    args = parser.parse_args()

    config = yaml.safe_load(Path(args.config).read_text())
    exp, certify = Experiment(config), config["certify"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for sigma in exp.grid.sigmas(args.dataset, "macer"):
        for method in ("cohen", "macer"):
            name = f"{method}_sigma{sigma:g}"  # not Path.with_suffix: "sigma0.5" has the suffix ".5"
            options = exp.training.train_options(Run(args.dataset, method, "fs", sigma))
            model, log = out / f"{name}.pt", out / f"{name}.tsv"
            if not model.exists():
                train = ["ddrs", "--threads", "1", "train", "--config", "-", "--out", str(model), "--no-progress"]
                subprocess.run(
                    [*train, "--log", str(out / f"{name}_train.csv")],
                    input=yaml.safe_dump(options),
                    text=True,
                    check=True,
                )
            if not log.exists():
                subprocess.run(
                    ["ddrs", "--threads", "1", "certify", "--checkpoint", str(model), "--dataset", args.dataset]
                    + ["--data-root", config["data_root"], "--sigma", f"{sigma:g}", "--skip", str(args.skip)]
                    + ["--n0", str(certify["n0"]), "--n", str(certify["n"]), "--alpha", str(certify["alpha"])]
                    + ["--batch", str(certify["batch"]), "--seed", str(config["seed"]), "--out", str(log)],
                    check=True,
                )
            certified = pd.read_csv(log, sep="\t")
            rows.append(
                {
                    "sigma": sigma,
                    "method": method,
                    "inputs": len(certified),
                    "clean_accuracy": 100 * certified["correct"].mean(),
                    "ACR": (certified["radius"] * certified["correct"]).mean(),
                }
            )
    table = pd.DataFrame(rows).pivot(index="sigma", columns="method", values=["clean_accuracy", "ACR"])
    table[("gap", "")] = table[("clean_accuracy", "cohen")] - table[("clean_accuracy", "macer")]
    print(table.round(3).to_string())
    worst = float(table[("gap", "")].max())
    return 1 if args.check and worst > args.max_gap else 0


if __name__ == "__main__":
    sys.exit(main())
