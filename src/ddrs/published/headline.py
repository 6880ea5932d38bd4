"""The leaderboard's headline: how many published logs beat Gaussian training, per input and beyond runs.

A row of :func:`~ddrs.published.gaussian_comparisons.gaussian_comparisons_table` tests two fixed models
on the test inputs. The headline counts a log as beating Gaussian *beyond runs* only where both hold
(an intersection–union test, level α for the claim that needs both):

- it is significantly better on ACR by the per-input test (Holm over the published logs, p < α);
- its ΔACR exceeds the run-level margin of its comparison (:mod:`ddrs.published.run_margin`): the
  σ's pooled margin t_{1−α/2, df} · √2 · s_run where Levene's test does not reject one run variance,
  else t_{1−α/2, ν} · √(s²_log + s²_baseline) from the spreads of the two recipes compared
  (Welch–Satterthwaite ν), none where either has no spread of its own.

The margin is a per-comparison level; the family-wise control over the table is the per-input Holm.
A comparison without a margin is not counted beyond runs (``compared_with_margin`` counts those that
can be); ``run_margin`` says which margin each σ's wins were tested against, and
``beyond_runs_by_margin`` how many wins each gave; a dataset with no replicated recipe says ``no
replication data`` and leaves the counts beyond runs empty.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ddrs.published.families import GAUSSIAN_FAMILY
from ddrs.published.gaussian_comparisons import ALTERNATIVE_GAUSSIANS, MATCHED
from ddrs.published.own_logs import is_own_repository
from ddrs.published.run_margin import NO_REPLICATION, PER_RECIPE_RULE, POOLED, Margins

#: the headline's columns, in order
COLUMNS = (
    "against",
    "logs",
    "family",
    "extra_data",
    "methods",
    "methods_better_beyond_runs",
    "compared",
    "better_ACR",
    "better_rate",
    "compared_with_margin",
    "better_ACR_beyond_runs",
    "beyond_runs_rate",
    "worse_ACR",
    "better_somewhere",
    "worse_somewhere",
    "not_compared",
    "gaussian_compared",
    "gaussian_better_ACR",
    "gaussian_vs_gaussian",
    "gaussian_vs_gaussian_better",
    "gaussian_vs_gaussian_rate",
    "gaussian_vs_gaussian_beyond_runs",
    "run_margin",
    "beyond_runs_by_margin",
)
#: ``family`` of a headline row over every family
ALL_FAMILIES = "all"


def published_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a comparisons table whose log is published (a user's own logs left out)."""
    return table[~table["repository"].astype(str).map(is_own_repository)]


def run_margins(table: pd.DataFrame, replication: pd.DataFrame, alpha: float) -> pd.Series:
    """Each row's run-level margin (:class:`~ddrs.published.run_margin.Margins`; NaN: none)."""
    margins = Margins.of(replication)
    return pd.Series(
        [
            margins.margin(float(row.sigma), str(row.log), str(row.baseline), alpha)
            for row in table[["sigma", "log", "baseline"]].itertuples(index=False)
        ],
        index=table.index,
        dtype=float,
    )


def describe_margins(replication: pd.DataFrame) -> str:
    """``σ 0.25: pooled 0.0123 (s_run 0.0041, df 36, Levene p 0.31); σ 0.5: per recipe (Levene p
    4e-06); …``, or ``no replication data`` where no σ has any."""
    pooled = replication[replication["kind"] == POOLED]
    if not (pooled["df"].astype(float) > 0).any():
        return NO_REPLICATION
    described = []
    for row in pooled.itertuples(index=False):
        levene = "" if pd.isna(row.levene_p) else f", Levene p {float(row.levene_p):.2g}"
        if not row.df > 0:
            text = NO_REPLICATION
        elif row.margin_rule == PER_RECIPE_RULE:
            text = f"per recipe, Welch–Satterthwaite (pooled s_run {float(row.ACR_sd):.4f} not used{levene})"
        else:
            text = f"pooled {float(row.margin):.4f} (s_run {float(row.ACR_sd):.4f}, df {int(row.df)}{levene})"
        described.append(f"σ {float(row.sigma):g}: {text}")
    return "; ".join(described)


def headline(table: pd.DataFrame, replication: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """The headline of a comparisons table (or its CSV read back) under the run-level margins of a
    replication table (module docstring).

    **Rows.** One per Gaussian baseline (``against``) over every family (``family`` = ``all``), and the
    rule's baseline again on the logs an alternative one applies to (``logs``: which); then, under the
    rule's baseline, one per family and extra training data. ``methods`` counts methods (a repository's
    name with one architecture), ``methods_better_beyond_runs`` those with at least one log beating
    Gaussian beyond runs; the other counts are logs. Gaussian logs and a user's own logs are not
    counted among the methods: the Gaussian logs compared are counted apart, with how many Gaussian
    pairs (``gaussian_vs_gaussian``: two Gaussian logs of one σ from other runs or repositories) the
    per-input test calls better, and how many of them lie beyond runs."""
    published = published_rows(table).assign(_margin=lambda frame: run_margins(frame, replication, alpha))
    published = published.assign(_rule=published["sigma"].map(Margins.of(replication).rule))
    described = describe_margins(replication)
    pairs = gaussian_pairs(published, alpha, described != NO_REPLICATION) | {"run_margin": described}
    rows = [_headline_row(published, MATCHED, "all", alpha, pairs)]
    for against in ALTERNATIVE_GAUSSIANS.values():
        logs = set(published.loc[published["against"] == against, "log"])
        if not logs:
            continue
        applies = f"those {against} applies to"
        rows.append(_headline_row(published, against, applies, alpha, pairs))
        rows.append(_headline_row(published[published["log"].isin(logs)], MATCHED, applies, alpha, pairs))
    methods = published[published["family"] != GAUSSIAN_FAMILY]
    extra = methods["extra_data"].fillna("").astype(str)
    for (family, extra_data), members in methods.groupby([methods["family"], extra], sort=True):
        rows.append(_headline_row(members, MATCHED, "all", alpha, pairs, family, extra_data))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def gaussian_pairs(published: pd.DataFrame, alpha: float, replicated: bool) -> dict:
    """Gaussian against Gaussian under the rule's baseline (the ``gaussian_pair`` rows): how many, how
    many the per-input test calls significantly better on ACR, its rate, and how many of those lie
    beyond the run-level margin (empty where the dataset has no replication data)."""
    rows = published[(published["against"] == MATCHED) & published["gaussian_pair"].astype(bool)]
    difference = rows["ACR"].astype(float)
    better = (rows["ACR_p_holm"].astype(float) < alpha) & (difference > 0)
    beyond = better & (difference > rows["_margin"].astype(float))
    return {
        "gaussian_vs_gaussian": len(rows),
        "gaussian_vs_gaussian_better": int(better.sum()),
        "gaussian_vs_gaussian_rate": _rate(int(better.sum()), len(rows)),
        "gaussian_vs_gaussian_beyond_runs": int(beyond.sum()) if replicated else np.nan,
    }


def _headline_row(
    table: pd.DataFrame,
    against: str,
    logs: str,
    alpha: float,
    pairs: dict,
    family: str = ALL_FAMILIES,
    extra_data: str = "",
) -> dict:
    at = table[table["against"] == against]
    gaussian = at["family"] == GAUSSIAN_FAMILY
    tested = at["tested"].astype(bool)
    difference = at["ACR"].astype(float)
    significant = at["ACR_p_holm"].astype(float) < alpha
    better, worse = significant & (difference > 0), significant & (difference < 0)
    margin = at["_margin"].astype(float)
    beyond = better & margin.notna() & (difference > margin)
    compared = tested & ~gaussian
    with_margin = int((compared & margin.notna()).sum())
    by_margin = _by_margin(at, compared & beyond, compared & margin.notna())
    replicated = pairs["run_margin"] != NO_REPLICATION
    method = at["repository"].astype(str) + "\0" + at["method"].astype(str) + "\0" + at["arch"].fillna("").astype(str)
    return {
        "against": against,
        "logs": logs,
        "family": family,
        "extra_data": extra_data,
        "methods": int(method[compared].nunique()),
        "methods_better_beyond_runs": int(method[compared & beyond].nunique()) if replicated else np.nan,
        "compared": int(compared.sum()),
        "better_ACR": int((compared & better).sum()),
        "better_rate": _rate(int((compared & better).sum()), int(compared.sum())),
        "compared_with_margin": with_margin,
        "better_ACR_beyond_runs": int((compared & beyond).sum()) if replicated else np.nan,
        "beyond_runs_rate": _rate(int((compared & beyond).sum()), with_margin),
        "worse_ACR": int((compared & worse).sum()),
        "better_somewhere": int((compared & (at["better_at"].fillna("") != "")).sum()),
        "worse_somewhere": int((compared & (at["worse_at"].fillna("") != "")).sum()),
        "not_compared": int((~tested & ~gaussian).sum()),
        "gaussian_compared": int((tested & gaussian).sum()),
        "gaussian_better_ACR": int((tested & gaussian & better).sum()),
        **pairs,
        "beyond_runs_by_margin": by_margin,
    }


def _by_margin(rows: pd.DataFrame, beyond: pd.Series, with_margin: pd.Series) -> str:
    """Per σ of the compared logs with a margin: which margin they were tested against, and how many
    of them beat Gaussian beyond it (``σ 0.5 (pooled): 3 of 12; …``)."""
    sigma = rows["sigma"].astype(float)
    described = []
    for value in sorted(sigma[with_margin].unique()):
        here = sigma == value
        rule = rows.loc[here, "_rule"].iloc[0]
        described.append(f"σ {value:g} ({rule}): {int((beyond & here).sum())} of {int((with_margin & here).sum())}")
    return "; ".join(described)


def _rate(part: int, whole: int) -> float:
    return part / whole if whole else float("nan")
