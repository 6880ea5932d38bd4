"""How much two training runs of one recipe differ in ACR: the leaderboard's run-level margin (issue 55).

The per-input tests of :mod:`ddrs.published.gaussian_comparisons` compare two *fixed models* on the
test inputs: they see the noise of drawing inputs, not what a second training run would change. A
claim that one *method* beats another must also beat run-to-run variation. Where authors published
several runs of one recipe, that variation can be measured.

**Recipes and runs.** A recipe is a published method (:class:`~ddrs.published.leaderboard.MethodKey`:
its authors' name in one repository, with one architecture, on one input set) at one σ; its runs are
its logs at that σ whose registry ``run`` names distinct training runs (Jeong & Shin's ``--id``: five
seeds per MNIST recipe, re-shipped by SmoothMix beside six runs of each SmoothMix recipe).
Byte-identical copies are one log (:func:`~ddrs.published.leaderboard.dataset_logs`); a user's own
logs are left out; logs of a recipe without a run name are not counted as runs (they may be
re-certifications of one model).

**Estimator** (per dataset and σ). Each recipe's own spread, the SD of its runs' ACRs (n_r − 1 df),
is used where it has at least :data:`MIN_OWN_RUNS` runs. The pooled within-recipe variance of ACR
over runs is the residual mean square of a one-way analysis of variance with the recipe as the
factor::

    s²_run = Σ_r Σ_k (ACR_rk − mean_r)² / df,   df = Σ_r (n_r − 1),

over every recipe with at least two runs. A recipe's runs certify the same inputs, so a spread
measures training and Monte Carlo certification variation with the inputs held fixed.

**Which spread.** Pooling assumes one run variance for every recipe of the dataset and σ: Levene's
test (Brown–Forsythe's median-centred form, ``scipy.stats.levene``) of the recipes with their own
spread checks it (``levene_p``). Where it does not reject at α (or cannot be made: fewer than two
such recipes), the σ's margin is the pooled one (``margin_rule`` = ``pooled``). Where it rejects,
no spread is pooled (``per recipe``): a comparison of two logs is calibrated by the spreads of the
two recipes it compares, Welch–Satterthwaite, and a comparison with a recipe of no own spread has no
run-level margin.

**Margin.** Two logs at σ of different recipes, one run each, compared on shared inputs, differ by the
methods' effect plus run noise of variance σ²_a + σ²_b. With no effect, ΔACR / √(s²_a + s²_b) is about
Student's t, so ΔACR lies beyond run-to-run variation at level α (two-sided) when
|ΔACR| > t_{1−α/2, ν} · √(s²_a + s²_b): the margin, with ν = df under the pooled rule (s_a = s_b =
s_run: t · √2 · s_run) and Welch–Satterthwaite's ν = (s²_a + s²_b)² / (s⁴_a/df_a + s⁴_b/df_b) per
recipe (two runs of one recipe: √2 · s_a on df_a). Two-sided, so a loss is judged as a win is, and a
win's bar is the higher one-sided 1 − α/2 quantile. A dataset or σ without a replicated recipe has no
margin: ``no replication data``, never a margin carried over from another dataset.

**Pairs of runs.** Every two runs of one recipe are compared as the leaderboard compares logs: ΔACR on
their shared inputs with the paired sign-flip test (Hoeffding bound, Holm over the table's pairs).
That test compares two fixed models, and it can call two seeds of one recipe different; under the
run-level rule a pair differs only beyond the margin estimated *without* its own recipe (so a
recipe's own spread does not set the bar its pairs are judged by; no margin where it is the only one).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from ddrs.analysis import stats
from ddrs.analysis.metrics import acr
from ddrs.published.leaderboard import Entry, methods
from ddrs.published.own_logs import is_own

#: the replication table's columns, in order
COLUMNS = (
    "dataset",
    "sigma",
    "kind",
    "repository",
    "method",
    "arch",
    "inputs",
    "run",
    "runs",
    "recipes",
    "df",
    "ACR",
    "ACR_difference",
    "ACR_sd",
    "levene_p",
    "margin_rule",
    "margin",
    "p",
    "p_holm",
    "significant_per_input",
    "beyond_runs",
    "logs",
    "note",
)
#: ``kind`` of a σ's pooled estimate, of a replicated recipe, of two runs of one recipe
POOLED, RECIPE, PAIR = "pooled", "recipe", "pair"
#: ``margin_rule`` of a σ whose recipes share one run variance (Levene does not reject), and of one whose do not
POOLED_RULE, PER_RECIPE_RULE = "pooled", "per recipe"
#: the fewest runs that give a recipe its own spread (and a place in Levene's test)
MIN_OWN_RUNS = 3
#: how a recipe's logs are listed in its ``logs`` cell
LOG_SEPARATOR = "; "
#: ``note`` of a σ without a replicated recipe
NO_REPLICATION = "no replication data"
#: ``note`` of a pair whose recipe is the σ's only replicated one
ONLY_RECIPE = "no replication data beyond its own recipe"
#: ``note`` of a pair row: what its per-input test is
FIXED_MODELS = "per-input test: a comparison of two fixed models"


@dataclass(frozen=True)
class Recipe:
    """One published method at one σ with its runs (registry order), each a log of distinct ``run``."""

    sigma: float
    runs: tuple[Entry, ...]

    @property
    def acrs(self) -> np.ndarray:
        return np.array([acr(run.frame) for run in self.runs])


@dataclass(frozen=True)
class RunSpread:
    """The pooled between-run SD of ACR at one σ (module docstring) and its degrees of freedom."""

    sd: float
    df: int
    recipes: int

    def margin(self, alpha: float) -> float:
        """t_{1−α/2, df} · √2 · s_run: the |ΔACR| two single runs of one recipe exceed with probability α."""
        if self.df < 1:
            return float("nan")
        return float(scipy_stats.t.ppf(1 - alpha / 2, self.df) * np.sqrt(2) * self.sd)


def replicated_recipes(entries: Sequence[Entry]) -> list[Recipe]:
    """The published recipes of ``entries`` with at least two runs (module docstring), by σ then registry order."""
    recipes = []
    for members in methods([entry for entry in entries if not is_own(entry)]).values():
        by_sigma: dict[float, list[Entry]] = {}
        for entry in members:
            if entry.log.run:
                by_sigma.setdefault(entry.sigma, []).append(entry)
        for sigma, runs in by_sigma.items():
            if len({run.log.run for run in runs}) == len(runs) >= 2:
                recipes.append(Recipe(sigma, tuple(runs)))
    return sorted(recipes, key=lambda recipe: recipe.sigma)


def run_spread(acrs: Sequence[np.ndarray]) -> RunSpread:
    """The pooled within-recipe SD of ACR over runs, one array of run ACRs per recipe (module docstring)."""
    replicated = [np.asarray(values, dtype=float) for values in acrs if len(values) >= 2]
    df = sum(len(values) - 1 for values in replicated)
    if df == 0:
        return RunSpread(float("nan"), 0, 0)
    squares = sum(float(((values - values.mean()) ** 2).sum()) for values in replicated)
    return RunSpread(float(np.sqrt(squares / df)), df, len(replicated))


def levene_p(acrs: Sequence[np.ndarray]) -> float:
    """Levene's test (median-centred) of one run variance over the recipes with their own spread (at
    least :data:`MIN_OWN_RUNS` runs); NaN where fewer than two have one, or none varies."""
    from scipy.stats import levene

    own = [np.asarray(values, dtype=float) for values in acrs if len(values) >= MIN_OWN_RUNS]
    if len(own) < 2 or not any(values.std() > 0 for values in own):
        return float("nan")
    return float(levene(*own, center="median").pvalue)


def _pooled_row(dataset: str, sigma: float, acrs: list[np.ndarray], alpha: float) -> dict:
    """A σ's pooled spread, Levene's p and its margin rule (module docstring)."""
    pooled, homogeneity = run_spread(acrs), levene_p(acrs)
    rule = PER_RECIPE_RULE if homogeneity < alpha else POOLED_RULE
    return {
        "dataset": dataset,
        "sigma": sigma,
        "kind": POOLED,
        "runs": sum(len(values) for values in acrs),
        "recipes": pooled.recipes,
        "df": pooled.df,
        "ACR_sd": pooled.sd,
        "levene_p": homogeneity,
        "margin_rule": rule if pooled.df else "",
        "margin": pooled.margin(alpha) if rule == POOLED_RULE else float("nan"),
        "note": "" if pooled.df else NO_REPLICATION,
    }


def replication_table(entries: Sequence[Entry], dataset: str, alpha: float) -> pd.DataFrame:
    """Per σ of the dataset's published logs: its pooled run spread, Levene's test and the margin
    rule at level ``alpha`` (or ``no replication data``), then each replicated recipe (its runs' mean
    ACR and SD, and its logs), then every two of its runs (ΔACR, the per-input test, and whether ΔACR
    lies beyond the pooled margin without its recipe)."""
    recipes = replicated_recipes(entries)
    sigmas = sorted({entry.sigma for entry in entries if not is_own(entry)})
    rows: list[dict] = []
    pair_rows, pair_p, pair_testable = [], [], []
    for sigma in sigmas:
        at = [recipe for recipe in recipes if recipe.sigma == sigma]
        acrs = [recipe.acrs for recipe in at]
        rows.append(_pooled_row(dataset, sigma, acrs, alpha))
        for r, recipe in enumerate(at):
            key, values = recipe.runs[0].method, acrs[r]
            described = {
                "dataset": dataset,
                "sigma": sigma,
                "repository": key.repository,
                "method": key.method_authors,
                "arch": key.arch,
                "inputs": key.inputs,
            }
            rows.append(
                described
                | {
                    "kind": RECIPE,
                    "runs": len(values),
                    "df": len(values) - 1,
                    "ACR": float(values.mean()),
                    "ACR_sd": float(values.std(ddof=1)),
                    "run": " ".join(run.log.run for run in recipe.runs),
                    "logs": LOG_SEPARATOR.join(run.name for run in recipe.runs),
                }
            )
            without = run_spread(acrs[:r] + acrs[r + 1 :]).margin(alpha)
            for row, p, testable in _pairs(recipe, without):
                pair_rows.append(len(rows))
                pair_p.append(p)
                pair_testable.append(testable)
                rows.append(described | row)
    adjusted = stats.holm(np.array(pair_p), np.array(pair_testable, dtype=bool)) if pair_p else []
    for row, p, p_holm in zip(pair_rows, pair_p, adjusted, strict=True):
        rows[row] |= {"p": p, "p_holm": float(p_holm), "significant_per_input": bool(p_holm < alpha)}
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _pairs(recipe: Recipe, margin: float) -> list[tuple[dict, float, bool]]:
    """Every two runs of ``recipe``: its row (ΔACR, against ``margin``), the per-input sign-flip p, and
    whether that test can reject (at least two differing inputs)."""
    pairs = []
    for first, second in itertools.combinations(recipe.runs, 2):
        differences = _certified_radius(first.frame) - _certified_radius(second.frame)
        known = bool(np.isfinite(margin))
        row = {
            "kind": PAIR,
            "run": f"{first.log.run} − {second.log.run}",
            "runs": 2,
            "ACR_difference": float(differences.mean()),
            "margin": margin,
            "beyond_runs": bool(abs(differences.mean()) > margin) if known else None,
            "note": FIXED_MODELS if known else f"{FIXED_MODELS}; {ONLY_RECIPE}",
        }
        p = float(stats.sign_flip_bound_p(differences[:, None])[0])
        pairs.append((row, p, int((differences != 0).sum()) >= 2))
    return pairs


def _certified_radius(frame: pd.DataFrame) -> np.ndarray:
    """Per input, its ACR term: the radius where correct, else 0 (runs of one recipe share their inputs)."""
    return frame["radius"].to_numpy(float) * (frame["correct"].to_numpy() == 1)


def welch_margin(first: tuple[float, int], second: tuple[float, int], alpha: float, same: bool = False) -> float:
    """t_{1−α/2, ν} · √(s²_a + s²_b) of two recipes' (SD, df), ν by Welch–Satterthwaite; two runs of
    one recipe (``same``): √2 · s_a on its own df (module docstring)."""
    (sd_a, df_a), (sd_b, df_b) = first, second
    variance = sd_a**2 + sd_b**2
    if same:
        dof = df_a
    else:
        dof = variance**2 / (sd_a**4 / df_a + sd_b**4 / df_b) if variance > 0 else df_a + df_b
    return float(scipy_stats.t.ppf(1 - alpha / 2, dof) * np.sqrt(variance))


@dataclass(frozen=True)
class Margins:
    """The run-level margins of a replication table (:func:`replication_table` or its CSV read back):
    per σ its rule, Levene's p and pooled margin, and each log of a recipe with its own spread."""

    rules: dict[float, str]
    levene: dict[float, float]
    pooled: dict[float, float]
    #: (σ, log name) → (its recipe's first log, SD, df), recipes of at least :data:`MIN_OWN_RUNS` runs
    spreads: dict[tuple[float, str], tuple[str, float, int]]

    @classmethod
    def of(cls, replication: pd.DataFrame) -> Margins:
        pooled = replication[replication["kind"] == POOLED]
        sigmas = [_sigma_key(s) for s in pooled["sigma"]]
        rules = dict(zip(sigmas, pooled["margin_rule"].fillna("").astype(str), strict=True))
        recipes = replication[(replication["kind"] == RECIPE) & (replication["runs"] >= MIN_OWN_RUNS)]
        spreads = {}
        for row in recipes.itertuples(index=False):
            logs = str(row.logs).split(LOG_SEPARATOR)
            spreads |= {(_sigma_key(row.sigma), log): (logs[0], float(row.ACR_sd), int(row.df)) for log in logs}
        return cls(
            rules,
            dict(zip(sigmas, pooled["levene_p"].astype(float), strict=True)),
            dict(zip(sigmas, pooled["margin"].astype(float), strict=True)),
            spreads,
        )

    def rule(self, sigma: float) -> str:
        """``pooled``, ``per recipe``, or empty (no replication data at ``sigma``)."""
        return self.rules.get(_sigma_key(sigma), "")

    def pooled_margin(self, sigma: float) -> float:
        """The σ's one margin where its rule is ``pooled``; NaN otherwise."""
        return self.pooled.get(_sigma_key(sigma), float("nan"))

    def margin(self, sigma: float, log: str, baseline: str, alpha: float) -> float:
        """The margin ``log``'s ΔACR over ``baseline`` at ``sigma`` must exceed; NaN where there is none
        (no replication data, or, per recipe, a log whose recipe has no spread of its own)."""
        if self.rule(sigma) != PER_RECIPE_RULE:
            return self.pooled_margin(sigma)
        first, second = self.spreads.get((_sigma_key(sigma), log)), self.spreads.get((_sigma_key(sigma), baseline))
        if first is None or second is None:
            return float("nan")
        return welch_margin(first[1:], second[1:], alpha, same=first[0] == second[0])


def _sigma_key(sigma: float) -> float:
    return round(float(sigma), 9)
