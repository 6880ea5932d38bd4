"""Tables of a method, not of a model: every cell over several training runs (DESIGN.md, "Replication").

A claim that one *method* beats another varies with training runs as well as with test inputs
(Bouthillier et al., MLSys 2021). A replicated model is trained R times, run r changing every
training seed, the same r for every method (a paired design); every run is certified on the same
test inputs and, since CERTIFY's noise is keyed by ``(seed, idx)`` and not by the model, with the
same noise draws (common random numbers).

- **A cell** is the mean over runs of the run's cell: certified accuracy at r, or ACR, of the row's
  log (a per-σ study) or of its envelope over σ₀ and K (a best table, chosen as ``selection`` says,
  in each run on its own).
- **Its interval** is the pigeonhole bootstrap of a crossed design (Owen 2007, Ann. Appl. Stat. 1(2)):
  each resample draws R runs and N inputs with replacement, independently, and takes the mean over
  the drawn runs of each run's mean over the drawn inputs. It covers training runs and test inputs
  together. The input draws are :func:`~ddrs.analysis.stats.bootstrap_means`' own, so a row of one
  run, or of identical runs, has exactly the per-input bootstrap interval.
- **A comparison of two methods** pairs their runs by r. Its difference has the same pigeonhole
  interval, and its test is the paired t-test of the R per-run differences (``scipy.stats``, R − 1
  degrees of freedom), Holm-adjusted over the table's family (per dataset, every tested pair ×
  column): a test across training runs, on these test inputs. ``runs`` says how many runs a
  comparison rests on; with fewer than :data:`MIN_RUNS` the runs cannot carry a test, and the row
  says so (``test``) instead of printing a p-value. The per-input tests of the other tables
  compare two fixed models, and stay as they are.

As in the single-run tables, a best row chosen on the inputs it reports (``selection="test"``) is
described, not tested (:attr:`~ddrs.analysis.evidence.Evidence.tested`); its held-out twin is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ddrs.analysis.assemble import ALPHA_ATTR, BOLD_ATTR, interval_columns, ordered, radius_column
from ddrs.analysis.comparisons import best_table_pairs, study_baseline
from ddrs.analysis.evidence import UNTESTED, Evidence
from ddrs.analysis.loading import grouped, load_records
from ddrs.analysis.stats import DEFAULT_INFERENCE, Inference, holm, percentile_interval, pigeonhole_means
from ddrs.analysis.tables import LogRecords, Radii, envelope, row_modes

#: the fewest paired runs a run-level test is made on (a t-test of one difference has no variance)
MIN_RUNS = 2
#: what a comparison says where its runs cannot carry a test
TOO_FEW_RUNS = "too few runs: a comparison of two fixed models (see the per-input tables)"


@dataclass(frozen=True)
class RunEvidence:
    """One table row in each of its training runs: :class:`~ddrs.analysis.evidence.Evidence` per run."""

    runs: tuple[Evidence, ...]

    @property
    def dataset(self) -> str:
        return self.runs[0].dataset

    @property
    def tested(self) -> bool:
        return all(run.tested for run in self.runs)

    def columns(self) -> list[str]:
        """The row's metric columns: one per radius, then its ACR columns."""
        first = self.runs[0]
        return [radius_column(r) for r in first.radii] + list(first.acr)

    def values(self, runs: int | None = None) -> np.ndarray:
        """Per-input values, runs × inputs × columns: 100 · "certified at r", then the radii of each
        ACR column (the mean over inputs is the cell); the first ``runs`` runs where given."""
        chosen = self.runs[: runs or len(self.runs)]
        if len({(e.radii, e.inputs) for e in chosen}) != 1:
            raise ValueError(f"{self.dataset}: the runs of one row must share their radius grid and test inputs")
        return np.stack(
            [np.concatenate([100.0 * e.certified.T, np.stack(list(e.acr.values()), axis=1)], axis=1) for e in chosen]
        )


def run_level_p(differences: np.ndarray) -> np.ndarray:
    """Two-sided paired t-test of per-run differences (runs × columns) against 0, per column:
    ``scipy.stats.ttest_1samp``; 1 where every run's difference is 0, 0 where they are all one
    other value (a t of ±∞)."""
    from scipy.stats import ttest_1samp

    differences = np.asarray(differences, dtype=float)
    varies = differences.std(axis=0, ddof=1) > 0
    p = np.where(differences[0] == 0, 1.0, 0.0)
    if varies.any():
        p[varies] = ttest_1samp(differences[:, varies], 0.0, axis=0).pvalue
    return p


def run_evidence(candidates, radii: Radii, selection: str, seed: int, single: bool) -> RunEvidence:
    """A row's evidence in each of its training runs: its (record, log) candidates grouped by run."""
    return RunEvidence(tuple(envelope(c, radii, selection, seed, single=single) for c in by_run(candidates)))


def by_run(candidates) -> list[list]:
    """A row's (record, log) candidates, one list per training run, in run order."""
    runs: dict[int, list] = {}
    for record, log in candidates:
        runs.setdefault(record.replicate, []).append((record, log))
    if sorted(runs) != list(range(len(runs))):
        raise ValueError(f"row {candidates[0][0].name!r}: training runs {sorted(runs)} are not 0, 1, …")
    return [runs[r] for r in sorted(runs)]


def _cells(evidence: RunEvidence, inference: Inference) -> dict:
    """A replicated row's cells: per column the mean over runs and its pigeonhole interval."""
    values = evidence.values()
    means = pigeonhole_means(values, n_boot=inference.n_boot, seed=inference.seed, dataset=evidence.dataset)
    low, high = percentile_interval(means, inference.alpha)
    cells = {"runs": values.shape[0]}
    for j, column in enumerate(evidence.columns()):
        cells[column] = float(values[:, :, j].mean())
        cells |= dict(zip(interval_columns(column), (float(low[j]), float(high[j])), strict=True))
    return cells


def _frame(rows: list[dict], leading: list[str], inference: Inference, bold=frozenset()) -> pd.DataFrame:
    frame = ordered(pd.DataFrame(rows), leading)
    frame.attrs[BOLD_ATTR] = frozenset(bold)
    frame.attrs[ALPHA_ATTR] = inference.alpha
    return frame


def _best_rows(records: LogRecords, radii: Radii, selection: str, inference: Inference) -> dict:
    groups = grouped(load_records(records), lambda r: (r.dataset, r.name))
    return {
        key: (
            candidates[0][0],
            row_modes(candidates, key[1]),
            run_evidence(candidates, radii, selection, inference.seed, False),
        )
        for key, candidates in groups.items()
    }


def replicated_best_table(
    records: LogRecords, radii: Radii = None, *, selection: str = "test", inference: Inference = DEFAULT_INFERENCE
) -> pd.DataFrame:
    """DDRS Tables 1–4 over training runs: per dataset and row (Cohen, Cohen-DS, Cohen-DS²), each
    cell the mean over runs of the run's best cell, with its pigeonhole interval and the number of
    runs (module docstring). Nothing is bold: a row's cells are compared in
    :func:`replicated_comparisons_table`."""
    rows = [
        {"dataset": dataset, "variant": name, **modes, **_cells(evidence, inference)}
        for (dataset, name), (_, modes, evidence) in _best_rows(records, radii, selection, inference).items()
    ]
    return _frame(rows, ["dataset", "variant", "train", "certify", "runs"], inference)


def replicated_study_table(
    records: LogRecords, radii: Radii = None, *, inference: Inference = DEFAULT_INFERENCE
) -> pd.DataFrame:
    """A seed paper's per-σ study over training runs: per dataset, σ₀ and row (one log per run), the
    mean over runs with its pigeonhole interval and the number of runs."""
    rows = [
        {"dataset": dataset, "sigma0": sigma0, "variant": name, **_cells(evidence, inference)}
        for (dataset, sigma0, name), evidence in _study_rows(records, radii, inference).items()
    ]
    return _frame(rows, ["dataset", "sigma0", "variant", "runs"], inference)


def _study_rows(records: LogRecords, radii: Radii, inference: Inference) -> dict:
    groups = grouped(load_records(records), lambda r: (r.dataset, r.sigma0, r.name))
    return {
        key: run_evidence(candidates, radii, "test", inference.seed, True)
        for key, candidates in sorted(groups.items(), key=lambda item: item[0][1])
    }


def compare_runs(
    variant: RunEvidence, baseline: RunEvidence, inference: Inference
) -> tuple[dict, list[str], np.ndarray]:
    """A comparison row's cells over the runs both rows have (paired by r): per column the mean
    difference and its pigeonhole interval; the columns tested and their run-level p-values
    (``NaN`` with fewer than :data:`MIN_RUNS` runs)."""
    runs = min(len(variant.runs), len(baseline.runs))
    if variant.columns() != baseline.columns():
        raise ValueError(f"{variant.dataset}: compared rows must share their columns")
    differences = variant.values(runs) - baseline.values(runs)
    means = pigeonhole_means(differences, n_boot=inference.n_boot, seed=inference.seed, dataset=variant.dataset)
    low, high = percentile_interval(means, inference.alpha)
    tested = variant.tested and baseline.tested
    row: dict = {
        "runs": runs,
        "tested": tested,
        "test": "paired t-test over runs" if runs >= MIN_RUNS else TOO_FEW_RUNS,
    }
    columns = variant.columns()
    for j, column in enumerate(columns):
        row[column] = float(differences[:, :, j].mean())
        row |= dict(zip(interval_columns(column), (float(low[j]), float(high[j])), strict=True))
    compared = [c for c in columns if c not in UNTESTED]
    p = np.full(len(compared), np.nan)
    if runs >= MIN_RUNS:
        per_run = differences.mean(axis=1)[:, [columns.index(c) for c in compared]]
        p = run_level_p(per_run)
    return row, compared, p


def _comparisons(
    pairs: list[tuple[dict, RunEvidence, RunEvidence]], leading: list[str], inference: Inference
) -> pd.DataFrame:
    """Comparison rows with their run-level p-values Holm-adjusted per dataset over the tested pairs
    (the untested pairs' apart, never bold); a cell is bold where its adjusted p < α."""
    rows, tests = [], []
    for keys, variant, baseline in pairs:
        row, columns, p = compare_runs(variant, baseline, inference)
        rows.append({**keys, **row})
        tests.append((columns, p))
    bold = set()
    for dataset in dict.fromkeys(row["dataset"] for row in rows):
        for tested in (True, False):
            family = [k for k, row in enumerate(rows) if row["dataset"] == dataset and row["tested"] == tested]
            family = [k for k in family if rows[k]["runs"] >= MIN_RUNS]
            if not family:
                continue
            p = np.concatenate([tests[k][1] for k in family])
            adjusted = iter(holm(p, p < 1))  # all-zero differences (p = 1) cannot reject
            for k in family:
                for column, raw in zip(*tests[k], strict=True):
                    value = float(next(adjusted))
                    rows[k] |= {f"{column}_p": float(raw), f"{column}_p_holm": value}
                    if tested and value < inference.alpha:
                        bold.add((k, column))
    return _frame(rows, [*leading, "runs", "tested", "test"], inference, bold)


def replicated_comparisons_table(
    records: LogRecords, radii: Radii = None, *, selection: str = "test", inference: Inference = DEFAULT_INFERENCE
) -> pd.DataFrame:
    """The comparisons of :func:`replicated_best_table` (same arguments), paired over training runs:
    Method-DS vs Method, Method-DS² vs Method-DS and vs Method."""
    rows = _best_rows(records, radii, selection, inference)
    pairs = [
        ({"dataset": key[0], "variant": key[1], "baseline": key_b[1]}, rows[key][2], rows[key_b][2])
        for key, key_b in best_table_pairs({key: (record, modes) for key, (record, modes, _) in rows.items()})
    ]
    return _comparisons(pairs, ["dataset", "variant", "baseline"], inference)


def replicated_study_comparisons_table(
    records: LogRecords, radii: Radii = None, *, baseline: str = "cohen", inference: Inference = DEFAULT_INFERENCE
) -> pd.DataFrame:
    """The comparisons of :func:`replicated_study_table`: every row against the ``baseline`` row (a row
    name, or the method of an un-renamed row) at the same dataset and σ₀, paired over training runs."""
    rows = _study_rows(records, radii, inference)
    loaded = {
        key: record for record, _ in load_records(records) for key in [(record.dataset, record.sigma0, record.name)]
    }
    pairs = []
    for dataset, sigma0 in dict.fromkeys((d, s) for d, s, _ in rows):
        members = [key for key in rows if key[:2] == (dataset, sigma0)]
        base = members[study_baseline(dataset, sigma0, [loaded[key] for key in members], baseline)]
        for key in members:
            if key != base:
                keys = {"dataset": dataset, "sigma0": sigma0, "variant": key[2], "baseline": base[2]}
                pairs.append((keys, rows[key], rows[base]))
    return _comparisons(pairs, ["dataset", "sigma0", "variant", "baseline"], inference)
