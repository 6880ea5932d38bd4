"""The seed papers' claims that a configuration can test, each decided once over training runs and test inputs.

A claim is about a method on a dataset, so its unit is the training run and the test input
(:mod:`ddrs.analysis.replication`): its per-input values y[r, i] are the paired difference
variant − baseline (runs paired by r, on the same test inputs; a best row is each run's envelope
chosen on a held-out half and reported on the other), or one row's value less chance. Per claim:

- **effect**, the mean over runs and inputs, with its pigeonhole-bootstrap interval at 1 − α
  (Owen 2007), its resamples grown until each bound's Monte Carlo error lies below a tenth of its
  distance to 0 (:func:`~ddrs.analysis.stats.settled_interval`; ``interval_note`` says where a
  bound stays within that error of 0). The interval describes; it decides nothing.
- **p**, the unconditional test of the crossed runs × inputs design (:mod:`ddrs.analysis.crossed`:
  moment estimates, Satterthwaite's ``df``): would the methods differ on new runs *and* new inputs?
- **p_fixed_inputs**, the paired t-test of the R per-run means: do the runs differ on *these* inputs?

**One family, one verdict.** The claims table is the confirmatory family: both p-values are
Holm-adjusted over its testable rows (``p_holm``, ``p_fixed_inputs_holm``), and each claim gets one
verdict at the statistics' α:

- ``holds`` / ``contradicted``: ``p_holm`` < α, the effect on the claimed side / against it;
- ``holds on these inputs only`` (``contradicted …``): ``p_holm`` ≥ α but ``p_fixed_inputs_holm``
  < α: the runs separate the methods on this test set, and new inputs could undo it;
- ``not shown``: neither;
- ``not testable (1 run)``: a row has fewer than two runs.

The exploratory comparisons tables test the same pairs among many others (their own Holm families);
a claim's verdict is the one here (docs/protocol.md, "Replication").

**What it would take.** The effect's variance V splits into σ²_run/R, σ²_input/N and σ²_residual/(RN)
(``share_*``, summing to 1; a component estimated negative is shown as 0 and named in ``flag``).
``runs_needed`` is the least run count whose unconditional test at α/m (Bonferroni over the m
testable claims, Holm's first threshold) has power 0.8 to find ``planned_effect`` on N inputs, with
an interval from σ²_run's χ² of R − 1 df (``runs_needed_low``/``_high``); ``plan`` says where no run
count reaches it on N inputs (the input part alone is too large), and how many inputs would.

A claim's ``kind`` says which rows it compares: ``best``, two rows of a DDRS table, each the
envelope over σ₀ (and K) chosen on a held-out half of the inputs and reported on the other;
``per_sigma``, two fixed-σ rows at each σ₀; ``above_chance``, one fixed-σ row's clean accuracy
against 100 / classes at each σ₀.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ddrs.analysis.assemble import ACR_COLUMNS, ALPHA_ATTR, BOLD_ATTR, SCIENTIFIC_ATTR
from ddrs.analysis.crossed import MAX_RUNS, PARTS, Components, MeanSquares, inputs_needed, partition, runs_needed
from ddrs.analysis.loading import load_records
from ddrs.analysis.log_record import LogRecord
from ddrs.analysis.replication import MIN_RUNS, RunEvidence, run_evidence, run_level_p
from ddrs.analysis.stats import DEFAULT_INFERENCE, Inference, holm, pigeonhole_means, settled_interval
from ddrs.analysis.tables import Radii

#: the claimed direction of a difference (variant − baseline), and what contradicts it
DIRECTIONS = {"greater": 1, "not_greater": -1}
LEADING = ["paper", "claim", "dataset", "sigma0", "variant", "baseline", "metric", "runs", "inputs"]
DECIDED = ["direction", "effect", "low", "high", "interval_note", "p_fixed_inputs", "df", "p"]
VERDICT = ["p_fixed_inputs_holm", "p_holm", "verdict"]
BUDGET = [*(f"sigma2_{part}" for part in PARTS), *(f"share_{part}" for part in PARTS), "flag"]
PLAN = ["planned_effect", "runs_needed", "runs_needed_low", "runs_needed_high", "plan"]
NOT_TESTABLE = "not testable (1 run)"


def _rows_of(loaded, name: str, dataset: str, sigma0: float | None = None) -> list:
    return [(r, log) for r, log in loaded if r.name == name and r.dataset == dataset and sigma0 in (None, r.sigma0)]


def _values(claim: Mapping, variant: RunEvidence, baseline: RunEvidence | None, chance: float) -> np.ndarray:
    """The claim's per-input values, runs × inputs: paired differences, or the value less chance."""
    j = variant.columns().index(claim["metric"])
    if baseline is None:
        return variant.values()[:, :, j] - chance
    if variant.columns() != baseline.columns():
        raise ValueError(f"{variant.dataset}: compared rows must share their columns")
    runs = min(len(variant.runs), len(baseline.runs))
    return variant.values(runs)[:, :, j] - baseline.values(runs)[:, :, j]


def _settings(loaded, claim: Mapping, dataset: str) -> list[tuple]:
    """(σ₀, selection, single) of each row of a claim on a dataset."""
    if claim["kind"] == "best":
        return [(None, "held_out", False)]
    return [(s, "test", True) for s in sorted({r.sigma0 for r, _ in _rows_of(loaded, claim["variant"], dataset)})]


def claim_values(
    records: Sequence[LogRecord], claims: Sequence[Mapping], radii: Radii, classes: Mapping[str, int], seed: int
) -> list[tuple[dict, np.ndarray]]:
    """Each claim row's keys and per-input values (runs × inputs), per dataset and σ₀ (module docstring)."""
    loaded = load_records(records)
    rows = []
    for claim in claims:
        for dataset in dict.fromkeys(r.dataset for r, _ in loaded if r.name == claim["variant"]):
            for sigma0, selection, single in _settings(loaded, claim, dataset):
                base_rows = _rows_of(loaded, claim.get("baseline") or "", dataset, sigma0)
                if claim["kind"] != "above_chance" and not base_rows:
                    continue
                variant = run_evidence(
                    _rows_of(loaded, claim["variant"], dataset, sigma0), radii, selection, seed, single
                )
                baseline = run_evidence(base_rows, radii, selection, seed, single) if base_rows else None
                chance = 100.0 / classes[dataset]
                keys = {key: claim.get(key) for key in ("paper", "claim", "variant", "metric", "direction")}
                keys |= {
                    "dataset": dataset,
                    "sigma0": sigma0,
                    "baseline": claim.get("baseline") or f"chance ({chance:g}%)",
                }
                rows.append((keys, _values(claim, variant, baseline, chance)))
    return rows


def _described(values: np.ndarray, dataset: str, inference: Inference) -> dict:
    """Effect, settled pigeonhole interval and the two tests of one claim's values (module docstring)."""
    runs, inputs = values.shape

    def draw(n_boot: int) -> np.ndarray:
        return pigeonhole_means(values[:, :, None], n_boot=n_boot, seed=inference.seed, dataset=dataset)

    low, high, n_boot, settled = settled_interval(draw, inference.n_boot, inference.alpha)
    row = {"runs": runs, "inputs": inputs, "effect": float(values.mean()), "low": float(low[0]), "high": float(high[0])}
    row["interval_note"] = "" if settled[0] else f"a bound within its bootstrap error of 0 ({n_boot:,} resamples)"
    row |= {"p_fixed_inputs": math.nan, "df": math.nan, "p": math.nan}
    if runs >= MIN_RUNS:
        _, df, p = MeanSquares.of(values).test()
        row |= {
            "p_fixed_inputs": float(run_level_p(values.mean(axis=1)[:, None])[0]),
            "df": float(df[0]),
            "p": float(p[0]),
        }
    return row


def verdict(direction: int, effect: float, p_holm: float, p_fixed_inputs_holm: float, runs: int, alpha: float) -> str:
    """One claim's verdict from its Holm-adjusted tests (module docstring)."""
    if runs < MIN_RUNS:
        return NOT_TESTABLE
    side = "holds" if np.sign(effect) == direction else "contradicted"
    if p_holm < alpha:
        return side
    return f"{side} on these inputs only" if p_fixed_inputs_holm < alpha else "not shown"


def decide(frame: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """The claims family's Holm adjustment of both tests and each claim's verdict, from the columns
    ``direction``, ``effect``, ``runs``, ``p`` and ``p_fixed_inputs`` (a claims table, or its CSV
    read back). Tests that cannot reject whatever the data (p = 1: every difference 0) are left out
    of the family, as in every table."""
    out = frame.copy()
    for column in ("p", "p_fixed_inputs"):
        p = out[column].to_numpy(float)
        out[f"{column}_holm"] = holm(p, p < 1)
    out["verdict"] = [
        verdict(DIRECTIONS[row.direction], row.effect, row.p_holm, row.p_fixed_inputs_holm, row.runs, alpha)
        for row in out.itertuples()
    ]
    return out


def _plan(values: np.ndarray, effect: float, level: float, alpha: float) -> dict:
    """The claim's variance partition and the runs its verdict rule needs (module docstring), at
    ``level`` (α/m) for power 0.8 to find ``effect``; the run count's interval at 1 − ``alpha``."""
    runs, inputs = values.shape
    squares = MeanSquares.of(values)
    estimates = {part: float(value[0]) for part, value in squares.components().items()}
    row = partition(estimates, {"run": 1 / runs, "input": 1 / inputs, "residual": 1 / (runs * inputs)})
    assumed = Components(row["sigma2_run"], row["sigma2_input"], row["sigma2_residual"])
    bounds = (float(bound[0]) for bound in squares.run_variance_bounds(alpha))
    needed = [runs_needed(effect, assumed, inputs, level)]
    needed += [runs_needed(effect, dataclasses.replace(assumed, run=run), inputs, level) for run in bounds]
    row |= dict(zip(PLAN[1:4], (pd.NA if not math.isfinite(n) else int(n) for n in needed), strict=True))
    row["plan"] = ""
    if math.isinf(needed[0]):
        more = inputs_needed(effect, assumed, level)
        row["plan"] = (
            f"not reachable at {inputs:,} inputs: the input part alone has SE {math.sqrt(assumed.input / inputs):.2g}; "
            + (f"at least {int(more):,} inputs with many runs" if math.isfinite(more) else "")
        )
    elif math.isnan(needed[0]) or math.isnan(needed[2]):
        row["plan"] = f"more than {MAX_RUNS:,} runs" + (
            " at the interval's upper end" if math.isfinite(needed[0]) else ""
        )
    return row


def claims_table(
    records: Sequence[LogRecord],
    claims: Sequence[Mapping],
    radii: Radii = None,
    *,
    classes: Mapping[str, int],
    effect_acr: float = 0.02,
    effect_accuracy: float = 2.0,
    inference: Inference = DEFAULT_INFERENCE,
) -> pd.DataFrame:
    """One row per claim and σ₀ (module docstring). Each of ``claims`` names its ``paper``, ``claim``,
    ``kind``, ``variant`` and ``baseline`` rows, ``metric`` (a radius column such as ``"0.00"``, or an
    ACR column) and ``direction``; ``classes`` gives each dataset's number of classes; a claim on
    ACR is planned for ``effect_acr``, one on certified accuracy for ``effect_accuracy`` (points).
    Each log is given once (a row's name picks it, whichever table it also belongs to)."""
    rows = claim_values(records, claims, radii, classes, inference.seed)
    if not rows:
        return pd.DataFrame()
    frame = decide(
        pd.DataFrame([keys | _described(values, keys["dataset"], inference) for keys, values in rows]),
        inference.alpha,
    )
    testable = int((frame["p"] < 1).sum())
    plans = []
    for (keys, values), row in zip(rows, frame.itertuples(), strict=True):
        if row.runs < MIN_RUNS:
            plans.append({})
            continue
        effect = effect_acr if keys["metric"] in ACR_COLUMNS else effect_accuracy
        plan = _plan(values, effect, inference.alpha / max(testable, 1), inference.alpha)
        plans.append({"planned_effect": effect} | plan)
    frame = pd.concat([frame, pd.DataFrame(plans, index=frame.index, columns=[*BUDGET, *PLAN])], axis=1)
    frame = frame[[*LEADING, *DECIDED, *VERDICT, *BUDGET, *PLAN]]
    for column in PLAN[1:4]:
        frame[column] = frame[column].astype("Int64")
    frame.attrs |= {BOLD_ATTR: frozenset(), ALPHA_ATTR: inference.alpha, SCIENTIFIC_ATTR: BUDGET[:3]}
    return frame
