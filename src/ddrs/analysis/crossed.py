"""The crossed design of training runs × test inputs: variance components, the test of a mean, its power.

Every training run of a replicated recipe is certified on the same N test inputs, so a per-input
value y[r, i] (a radius, 100 · "certified at r", or the paired difference of two rows) follows the
two-way crossed random-effects model without replication (Searle, Casella & McCulloch 1992,
*Variance Components*, ch. 4, balanced data)::

    y[r, i] = μ + a_r + b_i + e_ri,   a_r ~ (0, σ²_run),  b_i ~ (0, σ²_input),  e_ri ~ (0, σ²_residual)

with R runs and N inputs. The residual holds the run × input interaction and what CERTIFY's noise
draws do to one model (its Monte Carlo part; with common noise draws, the part shared by every run
lies in b_i).

**Components** (ANOVA, by moments): with the mean squares of runs (R − 1 df), inputs (N − 1 df) and
the residual ((R − 1)(N − 1) df), E MS_run = σ²_res + N σ²_run, E MS_input = σ²_res + R σ²_input,
E MS_res = σ²_res. In a balanced design these are the REML estimates wherever they are positive
(statsmodels' ``MixedLM`` with a run and an input variance component, checked in the tests). A
negative estimate (the runs, or the inputs, vary less than the residual predicts) is kept, and
flagged where it is shown.

**The test of μ = 0** over new runs and new inputs (unconditional): the grand mean has variance
V = σ²_run/R + σ²_input/N + σ²_res/(RN), estimated by (MS_run + MS_input − MS_res)/(RN): the
variance the paired t-test over runs sees, MS_run/(RN) = (σ²_run/R + σ²_res/(RN)) estimated, plus
the inputs' part σ²_input/N, counted where it is estimated positive. t = mean/√V is referred to
Student's t with Satterthwaite's (1946, Biometrics Bulletin 2(6)) degrees of freedom,
V² / Σ_k (c_k MS_k/(RN))² / df_k, as in Welch's test. Without an input part it is the paired t-test
over runs (R − 1 df). The run term is never dropped: a σ²_run estimated negative (by chance, of R − 1
df) would otherwise swap the runs' few degrees of freedom for the inputs' many. Like Welch's test,
it is somewhat liberal at small α where runs and inputs both weigh (the degrees of freedom grow
where MS_run is small by chance); the tests measure its level. The test that holds the inputs fixed
(do the runs differ on *these* inputs?) is the paired t-test of the R run means,
:func:`ddrs.analysis.replication.run_level_p`.

**Power** of that test at R runs and N inputs for a true mean ``effect`` and components, from the
expected mean squares: statsmodels' ``ttest_power`` with the noncentrality effect/√V and the
Satterthwaite df; where it gives NaN (the noncentral t at 1–2 df and a large noncentrality) the
power is integrated directly, P(|T| > t_crit) = E_W[Φ(δ − t_crit √(W/ν)) + Φ(−δ − t_crit √(W/ν))],
W ~ χ²_ν.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

#: the power a plan asks for
POWER = 0.8
#: run counts scanned for a plan (a plan beyond this many runs says "more than")
MAX_RUNS = 1000
#: input counts searched for a plan that more runs cannot reach
MAX_INPUTS = 10**8
#: the components, in the order the tables print them
PARTS = ("run", "input", "residual")


@dataclass(frozen=True)
class MeanSquares:
    """The crossed design's mean squares, per column: ``values`` runs × inputs × columns."""

    runs: int
    inputs: int
    mean: np.ndarray
    run: np.ndarray
    input: np.ndarray
    residual: np.ndarray

    @classmethod
    def of(cls, values: np.ndarray) -> MeanSquares:
        values = np.asarray(values, dtype=float)
        values = values[:, :, None] if values.ndim == 2 else values
        runs, inputs = values.shape[:2]
        if runs < 2 or inputs < 2:
            raise ValueError(f"the crossed design needs at least 2 runs and 2 inputs, got {runs} × {inputs}")
        mean = values.mean(axis=(0, 1))
        by_run, by_input = values.mean(axis=1), values.mean(axis=0)
        residual = values - by_run[:, None] - by_input[None] + mean
        return cls(
            runs,
            inputs,
            mean,
            inputs * ((by_run - mean) ** 2).sum(axis=0) / (runs - 1),
            runs * ((by_input - mean) ** 2).sum(axis=0) / (inputs - 1),
            (residual**2).sum(axis=(0, 1)) / ((runs - 1) * (inputs - 1)),
        )

    def components(self) -> dict[str, np.ndarray]:
        """σ²_run, σ²_input, σ²_residual by moments (module docstring): negative where the data say so."""
        return {
            "run": (self.run - self.residual) / self.inputs,
            "input": (self.input - self.residual) / self.runs,
            "residual": self.residual,
        }

    def test(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The unconditional test of mean 0 (module docstring): the mean's variance V, its
        Satterthwaite df and the two-sided p; p = 1 where every value is 0 alike (V = 0 and mean 0),
        0 where V = 0 and the mean is not."""
        from scipy.stats import t as student

        use_input = self.components()["input"] > 0
        cells = self.runs * self.inputs
        terms = [
            (self.run / cells, self.runs - 1),
            (np.where(use_input, self.input, 0.0) / cells, self.inputs - 1),
            (np.where(use_input, -self.residual, 0.0) / cells, (self.runs - 1) * (self.inputs - 1)),
        ]
        variance = sum(term for term, _ in terms)
        with np.errstate(divide="ignore", invalid="ignore"):
            df = variance**2 / sum(term**2 / dof for term, dof in terms)
            t = self.mean / np.sqrt(variance)
            p = 2 * student.sf(np.abs(t), df)
        p = np.where(variance > 0, p, np.where(self.mean == 0, 1.0, 0.0))
        return variance, df, p

    def run_variance_bounds(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        """A 1 − α interval for σ²_run from MS_run's χ² with R − 1 df alone (the residual's many df
        taken as known), each end at least 0."""
        from scipy.stats import chi2

        dof = self.runs - 1
        high_ms = dof * self.run / chi2.ppf(alpha / 2, dof)
        low_ms = dof * self.run / chi2.ppf(1 - alpha / 2, dof)
        return (
            np.maximum(0.0, (low_ms - self.residual) / self.inputs),
            np.maximum(0.0, (high_ms - self.residual) / self.inputs),
        )


def partition(components: dict[str, float], weights: dict[str, float]) -> dict:
    """A variance Σ_k w_k σ²_k split into its parts: ``sigma2_<part>`` (a negative moment estimate
    shown as 0), ``share_<part>`` (w_k σ²_k over the sum: they sum to 1; NaN where every part is 0),
    and ``flag``, naming each estimate shown as 0 with its value."""
    shown = {part: max(float(components[part]), 0.0) for part in PARTS}
    total = sum(weights[part] * shown[part] for part in PARTS)
    row = {f"sigma2_{part}": shown[part] for part in PARTS}
    row |= {f"share_{part}": weights[part] * shown[part] / total if total > 0 else math.nan for part in PARTS}
    negative = [f"σ²_{part} estimated {components[part]:.2e}, shown as 0" for part in PARTS if components[part] < 0]
    return row | {"flag": "; ".join(negative)}


@dataclass(frozen=True)
class Components:
    """Variance components of one per-input value (each at least 0): what a plan assumes."""

    run: float
    input: float
    residual: float

    def mean_variance(self, runs, inputs) -> np.ndarray:
        """V: the variance of the mean over ``runs`` runs and ``inputs`` inputs."""
        runs = np.asarray(runs, dtype=float)
        return self.run / runs + self.input / inputs + self.residual / (runs * inputs)

    def df(self, runs, inputs) -> np.ndarray:
        """Satterthwaite's df of V̂ at its expected mean squares (the test's coefficients)."""
        runs = np.asarray(runs, dtype=float)
        use_input = float(self.input > 0)
        cells = runs * inputs
        terms = [
            ((self.residual + inputs * self.run) / cells, runs - 1),
            (use_input * (self.residual + runs * self.input) / cells, inputs - 1),
            (-use_input * self.residual / cells, (runs - 1) * (inputs - 1)),
        ]
        variance = sum(term for term, _ in terms)
        with np.errstate(divide="ignore", invalid="ignore"):
            return variance**2 / sum(term**2 / dof for term, dof in terms)


def power(effect: float, components: Components, runs, inputs: int, alpha: float) -> np.ndarray:
    """Power of the unconditional two-sided test at level ``alpha`` to find a mean ``effect`` with
    ``runs`` runs (an array) on ``inputs`` inputs (module docstring); 1 where V = 0 and effect ≠ 0."""
    runs = np.atleast_1d(np.asarray(runs, dtype=float))
    if components.run == components.input == components.residual == 0:
        return np.full(len(runs), float(effect != 0))
    size = abs(effect) / np.sqrt(components.mean_variance(runs, inputs))
    return t_power(size, components.df(runs, inputs), alpha)


def t_power(size, df, alpha: float) -> np.ndarray:
    """Power of a two-sided t-test at ``alpha`` of noncentrality ``size`` and ``df`` (arrays alike):
    statsmodels' ``ttest_power``, integrated directly (:func:`direct_power`) where it gives NaN."""
    from statsmodels.stats.power import ttest_power

    size, df = np.broadcast_arrays(np.asarray(size, dtype=float), np.asarray(df, dtype=float))
    with np.errstate(invalid="ignore"):
        result = np.atleast_1d(np.asarray(ttest_power(size, 1, alpha, df=df, alternative="two-sided"), dtype=float))
    missing = ~np.isfinite(result)
    if missing.any():
        result[missing] = direct_power(np.atleast_1d(size)[missing], np.atleast_1d(df)[missing], alpha)
    return result


@functools.cache
def _quadrature(points: int = 128) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights on (0, 1): :func:`direct_power`'s integral over χ² quantiles."""
    nodes, weights = np.polynomial.legendre.leggauss(points)
    return (nodes + 1) / 2, weights / 2


def direct_power(size, df, alpha: float) -> np.ndarray:
    """Power of a two-sided t-test of noncentrality ``size`` at ``df`` (arrays alike), integrated over
    the χ² of its variance (module docstring) in its quantiles u = F_χ²(W): ∫₀¹ [Φ(δ − c√(W(u)/ν)) +
    Φ(−δ − c√(W(u)/ν))] du by Gauss–Legendre, where the noncentral t's tail is not evaluated."""
    from scipy.special import chdtri, ndtr, stdtrit

    nodes, weights = _quadrature()
    size, df = np.asarray(size, dtype=float)[..., None], np.asarray(df, dtype=float)[..., None]
    bar = stdtrit(df, 1 - alpha / 2) * np.sqrt(chdtri(df, 1 - nodes) / df)
    return ((ndtr(size - bar) + ndtr(-size - bar)) * weights).sum(axis=-1)


def limit_power(effect: float, components: Components, inputs: int, alpha: float) -> float:
    """The power with unboundedly many runs on ``inputs`` inputs: the input part alone stays (N − 1 df)."""
    if components.input <= 0:
        return 1.0 if effect != 0 else alpha
    return _input_power(abs(effect) / math.sqrt(components.input / inputs), inputs, alpha)


def _input_power(size: float, inputs: int, alpha: float) -> float:
    return float(t_power(size, inputs - 1, alpha)[0])


def runs_needed(effect: float, components: Components, inputs: int, alpha: float) -> float:
    """The least run count (from 2) whose unconditional test has power :data:`POWER` at ``alpha``;
    ``inf`` where no run count reaches it on ``inputs`` inputs (:func:`limit_power`), NaN where it
    takes more than :data:`MAX_RUNS`."""
    if limit_power(effect, components, inputs, alpha) < POWER:
        return math.inf
    start = 2
    for stop in (16, 128, MAX_RUNS):  # few runs first: most plans end there
        runs = np.arange(start, stop + 1)
        reached = np.flatnonzero(power(effect, components, runs, inputs, alpha) >= POWER)
        if len(reached):
            return float(runs[reached[0]])
        start = stop + 1
    return math.nan


def inputs_needed(effect: float, components: Components, alpha: float) -> float:
    """The least input count at which unboundedly many runs reach power :data:`POWER`: where
    :func:`runs_needed` says no run count does, how many inputs would (NaN beyond :data:`MAX_INPUTS`)."""
    if components.input <= 0:
        return 2.0

    def enough(inputs: int) -> bool:
        return _input_power(abs(effect) / math.sqrt(components.input / inputs), inputs, alpha) >= POWER

    if enough(2):
        return 2.0
    high = 4
    while not enough(high):
        if high >= MAX_INPUTS:
            return math.nan
        high *= 2
    low = high // 2  # not enough
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return float(high)


def mixed_model_components(values: np.ndarray) -> dict[str, float]:
    """σ²_run, σ²_input and σ²_residual of one column's ``values`` (runs × inputs) fitted by REML with
    statsmodels' ``MixedLM`` (one group, a variance component per run and per input): never
    negative, and equal to the moment estimates where those are positive (module docstring).

    Powell's method, then Nelder–Mead: on the default's ACR (5 runs × 200 inputs, σ²_run four orders
    below σ²_input) MixedLM's gradient methods stop short of the maximum (bfgs, lbfgs: a REML
    log-likelihood 3.4–5.6 below it, σ²_run off by 2–3×) and say so; a fit that converges by
    neither is refused."""
    import pandas as pd
    import statsmodels.formula.api as smf

    runs, inputs = values.shape
    data = pd.DataFrame(
        {"y": np.ravel(values), "run": np.repeat(np.arange(runs), inputs), "input": np.tile(np.arange(inputs), runs)}
    )
    model = smf.mixedlm(
        "y ~ 1",
        data,
        groups=np.zeros(len(data)),
        re_formula="0",
        vc_formula={"run": "0 + C(run)", "input": "0 + C(input)"},
    )
    fit = model.fit(reml=True, method=["powell", "nm"], maxiter=5000)
    if not fit.converged:
        raise RuntimeError("MixedLM's REML fit did not converge (Powell, Nelder–Mead)")
    by_name = dict(zip(model.exog_vc.names, fit.vcomp, strict=True))
    return {"run": float(by_name["run"]), "input": float(by_name["input"]), "residual": float(fit.scale)}
