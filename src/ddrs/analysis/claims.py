"""The seed papers' claims that a configuration can test, each tested across training runs.

A claim is about a method, so its unit is the training run (:mod:`ddrs.analysis.replication`): the
effect is the mean over runs of the paired difference (variant − baseline, runs paired by r, on the
same test inputs), its interval the pigeonhole bootstrap over runs and inputs, its test the paired
t-test of the per-run differences. The table's tests are Holm-adjusted together, and each claim
gets a verdict at the statistics' α:

- ``holds``: significant in the claimed direction, and the interval excludes 0 on its side;
- ``contradicted``: the same against it;
- ``holds on these inputs only`` (``contradicted on these inputs only``): the test is significant but
  the interval reaches 0. The two answer different questions: the t-test treats the test inputs as
  fixed (do the methods differ across training runs on these inputs?), the interval resamples them
  too (would they on new inputs?). A claim about a method on a dataset asks the second, so it holds
  only where both agree;
- ``not shown``: the test is not significant (the runs do not separate the methods);
- ``not testable (1 run)``: a row has fewer than two runs, so no claim about a method can be made.

A claim's ``kind`` says which rows it compares: ``best``, two rows of a DDRS table, each the
envelope over σ₀ (and K) chosen on a held-out half of the inputs and reported on the other (so the
comparison is tested, :mod:`ddrs.analysis.evidence`); ``per_sigma``, two fixed-σ rows at each σ₀;
``above_chance``, one fixed-σ row's clean accuracy against 100 / classes at each σ₀.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ddrs.analysis.assemble import ALPHA_ATTR, BOLD_ATTR
from ddrs.analysis.loading import load_records
from ddrs.analysis.log_record import LogRecord
from ddrs.analysis.replication import MIN_RUNS, RunEvidence, compare_runs, run_evidence, run_level_p
from ddrs.analysis.stats import DEFAULT_INFERENCE, Inference, holm, percentile_interval, pigeonhole_means
from ddrs.analysis.tables import Radii

#: the claimed direction of a difference (variant − baseline), and what contradicts it
DIRECTIONS = {"greater": 1, "not_greater": -1}
LEADING = ["paper", "claim", "dataset", "sigma0", "variant", "baseline", "metric", "runs"]


def _rows_of(loaded, name: str, dataset: str, sigma0: float | None = None) -> list:
    return [(r, log) for r, log in loaded if r.name == name and r.dataset == dataset and sigma0 in (None, r.sigma0)]


def _difference(
    claim: Mapping, variant: RunEvidence, baseline: RunEvidence | None, chance: float, inference: Inference
) -> dict:
    """Effect, interval, runs and run-level p of one claim's comparison on its metric."""
    metric = claim["metric"]
    if baseline is not None:
        row, columns, p = compare_runs(variant, baseline, inference)
        tested = dict(zip(columns, p, strict=True))
        return {
            "runs": row["runs"],
            "effect": row[metric],
            "low": row[f"{metric}_low"],
            "high": row[f"{metric}_high"],
            "p": tested[metric],
        }
    j = variant.columns().index(metric)
    values = variant.values()[:, :, [j]] - chance
    means = pigeonhole_means(values, n_boot=inference.n_boot, seed=inference.seed, dataset=variant.dataset)
    low, high = percentile_interval(means, inference.alpha)
    runs = values.shape[0]
    p = run_level_p(values.mean(axis=1))[0] if runs >= MIN_RUNS else np.nan
    return {"runs": runs, "effect": float(values.mean()), "low": float(low[0]), "high": float(high[0]), "p": float(p)}


def _verdict(
    direction: int, effect: float, interval: tuple[float, float], p_holm: float, runs: int, alpha: float
) -> str:
    if runs < MIN_RUNS:
        return "not testable (1 run)"
    if not p_holm < alpha:
        return "not shown"
    verdict = "holds" if np.sign(effect) == direction else "contradicted"
    low, high = interval
    return verdict if low > 0 or high < 0 else f"{verdict} on these inputs only"


def claims_table(
    records: Sequence[LogRecord],
    claims: Sequence[Mapping],
    radii: Radii = None,
    *,
    classes: Mapping[str, int],
    inference: Inference = DEFAULT_INFERENCE,
) -> pd.DataFrame:
    """One row per claim and σ₀ (module docstring). Each of ``claims`` names its ``paper``, ``claim``,
    ``kind``, ``variant`` and ``baseline`` rows, ``metric`` (a radius column such as ``"0.0"``, or an
    ACR column) and ``direction``; ``classes`` gives each dataset's number of classes. Each log is
    given once (a row's name picks it, whichever table it also belongs to)."""
    loaded = load_records(records)
    rows = []
    for claim in claims:
        datasets = dict.fromkeys(r.dataset for r, _ in loaded if r.name == claim["variant"])
        for dataset in datasets:
            if claim["kind"] == "best":
                settings = [(None, "held_out", False)]
            else:
                settings = [
                    (s, "test", True)
                    for s in sorted({r.sigma0 for r, _ in _rows_of(loaded, claim["variant"], dataset)})
                ]
            for sigma0, selection, single in settings:
                variant = run_evidence(
                    _rows_of(loaded, claim["variant"], dataset, sigma0), radii, selection, inference.seed, single
                )
                base_rows = _rows_of(loaded, claim.get("baseline") or "", dataset, sigma0)
                if claim["kind"] != "above_chance" and not base_rows:
                    continue
                baseline = run_evidence(base_rows, radii, selection, inference.seed, single) if base_rows else None
                chance = 100.0 / classes[dataset]
                keys = {key: claim.get(key) for key in ("paper", "claim", "variant", "metric")}
                keys |= {
                    "dataset": dataset,
                    "sigma0": sigma0,
                    "baseline": claim.get("baseline") or f"chance ({chance:g}%)",
                }
                rows.append(
                    {
                        **keys,
                        "direction": claim["direction"],
                        **_difference(claim, variant, baseline, chance, inference),
                    }
                )
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    frame["p_holm"] = holm(frame["p"].to_numpy(float), frame["p"].to_numpy(float) < 1)
    frame["verdict"] = [
        _verdict(DIRECTIONS[row.direction], row.effect, (row.low, row.high), row.p_holm, row.runs, inference.alpha)
        for row in frame.itertuples()
    ]
    frame = frame[[*LEADING, "direction", "effect", "low", "high", "p", "p_holm", "verdict"]]
    frame.attrs[BOLD_ATTR] = frozenset()
    frame.attrs[ALPHA_ATTR] = inference.alpha
    return frame
