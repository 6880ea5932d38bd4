"""Paired comparisons of table rows, and how much choosing on the test set flatters a row.

**Comparisons** (one table per best or study table). Each variant is compared with its baseline on
the same test inputs: in a best table (DDRS Tables 1–4) Method-DS against Method, Method-DS²
against Method-DS and Method, Method-IDRS (ours) against Method and Method-DS; in a per-σ study
(Jeong & Shin 2020 Table 2, Sun et al. 2024 Tables 2–3) every method against the baseline
(Gaussian, ``cohen``) at the same σ. One row per pair; the CSV columns are

- keys: ``dataset`` (``sigma0``), ``variant``, ``baseline``; ``tested``, whether the pair is
  tested (below);
- per radius ``c`` (``"0.25"``): ``c`` the difference of certified accuracy (variant − baseline,
  percentage points) of the logs behind the two cells; ``c_better`` / ``c_worse`` the inputs
  certified at r by the variant only / by the baseline only; ``c_p`` the exact McNemar p-value;
  ``c_p_holm`` that p Holm-adjusted over the family (below);
- per ACR column: the difference and ``_low`` / ``_high``, its paired-bootstrap interval (the
  resamples of the tables, so it pairs with their intervals), a description; for the tested one
  (``ACR_per_log``, or ``ACR`` for rows of one log) also ``_p``, the paired sign-flip permutation
  test of the per-input differences (:func:`~ddrs.analysis.stats.sign_flip_p`, valid at any number
  of inputs), and ``_p_holm``.

The family is every tested comparison row of the table that shares a dataset × every tested
column (the radii and the tested ACR column): one Holm adjustment over all of them, less the tests
that cannot reject whatever the data (``_p_holm`` = ``_p`` = 1: fewer than two inputs where the
rows differ; :func:`~ddrs.analysis.stats.holm`). A cell is bold
when significant, ``c_p_holm < α``. ``ACR_per_input_best``'s difference and interval are reported
but never tested: the oracle gains from every extra candidate log, so a DS row (σ₀ × K logs) beats
its FS baseline (one log per σ) even when all logs come from the same classifier
(:data:`~ddrs.analysis.evidence.UNTESTED`).

A pair is not tested (``tested`` false) when either cell was chosen among several candidate logs on
the inputs it reports (``selection="test"``, the paper's; :attr:`~ddrs.analysis.evidence.Evidence.tested`):
the maximum over more candidates is biased upward, so the test would favour the row with more logs.
Its ``_p`` and ``_p_holm`` (Holm over the dataset's untested cells) are reported as a description,
outside the family and never bold; the ``held_out`` comparisons, chosen on the other half of the
inputs, carry the tests.

**Selection optimism.** Per best row and cell, on the evaluation half of
:func:`~ddrs.analysis.stats.held_out_split` (the inputs the ``held_out`` table reports):
``optimism = max_l value_E(l) − value_E(l_S)``, where ``value_E(l)`` is candidate ``l``'s certified
accuracy at r (or ACR) on the evaluation half and ``l_S`` is the candidate the selection half
chose. The first term is what the paper's test-set selection reports on those inputs, the second
the held-out table's cell, so optimism ≥ 0. Its interval is the percentile bootstrap over the
evaluation half, recomputing the maximum in every resample (the split itself is held fixed). The
maximum of resampled means is biased upward, and optimism cannot be negative, so an interval above
0 is no test: nothing in this table is bold. ``ACR_per_input_best`` selects nothing and has no
optimism.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ddrs.analysis.assemble import ALPHA_ATTR, BOLD_ATTR, interval_columns, ordered, pair_p_values, radius_column
from ddrs.analysis.evidence import (
    PER_LOG,
    Evidence,
    candidate_arrays,
    chosen_candidates,
    row_evidence,
    selection_masks,
)
from ddrs.analysis.loading import grouped, labelled_frames, load_records
from ddrs.analysis.log_record import LogRecord
from ddrs.analysis.stats import DEFAULT_INFERENCE, Inference, bootstrap_means, holm, mcnemar, percentile_interval
from ddrs.analysis.tables import LogRecords, Radii, envelope, radii_for, row_modes

#: (train, certify) modes of a best-table row → the modes of its baselines, in order: Method-IDRS
#: (Súkeník et al.'s sound data-dependent certificate) against Method and Method-DS
BASELINES = {
    ("fs", "ds"): (("fs", "fs"),),
    ("ds", "ds"): (("fs", "ds"), ("fs", "fs")),
    ("fs", "idrs"): (("fs", "fs"), ("fs", "ds")),
}


def _modes(modes: dict) -> tuple[str, str]:
    return modes["train"].lower(), modes["certify"].lower()


def best_table_pairs(rows: dict[tuple[str, str], tuple[LogRecord, dict]]) -> list[tuple[tuple, tuple]]:
    """The ``(variant, baseline)`` row keys a best table compares (:data:`BASELINES`), from its rows'
    ``(dataset, name) → (record, {"train", "certify"})``: within one dataset and method, each row
    against its :data:`BASELINES`."""
    pairs = []
    for key, (record, modes) in rows.items():
        for wanted in BASELINES.get(_modes(modes), ()):
            pairs += [
                (key, key_b)
                for key_b, (record_b, modes_b) in rows.items()
                if key_b[0] == key[0] and record_b.method == record.method and _modes(modes_b) == wanted
            ]
    return pairs


def study_baseline(dataset: str, sigma0: float, members: list[LogRecord], baseline: str) -> int:
    """The position of a per-σ study block's ``baseline`` row among ``members``: the row named
    ``baseline`` (``"Gaussian"``, an ablation variant's name), or the un-renamed row of that method
    (``cohen``). A block without exactly one is refused, naming its rows."""
    is_base = [r.name == baseline or (r.variant is None and r.method == baseline) for r in members]
    if sum(is_base) != 1:
        names = [r.name for r in members]
        raise ValueError(f"{dataset} σ₀={sigma0:g}: need exactly one baseline {baseline!r} row among {names}")
    return is_base.index(True)


def radius_comparison(variant: Evidence, baseline: Evidence) -> tuple[dict, np.ndarray]:
    """Per radius of two rows on the same test inputs: the difference in certified accuracy (points)
    and the discordant counts, as a comparison row's cells, and the exact McNemar p-values."""
    better, worse, p = mcnemar(variant.certified, baseline.certified)
    difference = 100 * (variant.certified.mean(axis=1) - baseline.certified.mean(axis=1))
    cells = {}
    for i, r in enumerate(variant.radii):
        column = radius_column(r)
        cells |= {column: difference[i], f"{column}_better": int(better[i]), f"{column}_worse": int(worse[i])}
    return cells, p


def compare(variant: Evidence, baseline: Evidence, inference: Inference) -> dict:
    """One comparison row's values (module docstring) but its tests: differences, discordant counts
    and intervals; :func:`_table` adds the p-values of the table's family."""
    if variant.radii != baseline.radii or variant.inputs != baseline.inputs:
        raise ValueError("compared rows must share their radius grid and test inputs")
    row = {"tested": variant.tested and baseline.tested, **radius_comparison(variant, baseline)[0]}
    columns = [c for c in variant.acr if c in baseline.acr]
    values = np.stack([variant.acr[c] - baseline.acr[c] for c in columns], axis=1)
    means = bootstrap_means(values, n_boot=inference.n_boot, seed=inference.seed, dataset=variant.dataset)
    low, high = percentile_interval(means, inference.alpha)
    for j, column in enumerate(columns):
        row[column] = float(values[:, j].mean())
        row |= dict(zip(interval_columns(column), (float(low[j]), float(high[j])), strict=True))
    return row


def _table(pairs: list[tuple[dict, Evidence, Evidence]], leading: list[str], inference: Inference) -> pd.DataFrame:
    """The comparison rows, their p-values and the bold (significant) cells: per dataset, one Holm
    family over every tested row × tested column, and one over the untested rows' cells."""
    rows = [{**keys, **compare(variant, baseline, inference)} for keys, variant, baseline in pairs]
    bold = set()
    for dataset in dict.fromkeys(variant.dataset for _, variant, _ in pairs):
        positions = [k for k, (_, variant, _) in enumerate(pairs) if variant.dataset == dataset]
        columns, p, can_reject = pair_p_values([pairs[k][1:] for k in positions], inference)
        for k, ps in zip(positions, p, strict=True):
            rows[k] |= {f"{column}_p": float(value) for column, value in zip(columns, ps, strict=True)}
        for tested in (True, False):
            family = [j for j, k in enumerate(positions) if rows[k]["tested"] == tested]
            adjusted = holm(p[family].ravel(), can_reject[family].ravel()).reshape(len(family), len(columns))
            for j, values in zip(family, adjusted, strict=True):
                k = positions[j]
                rows[k] |= {f"{column}_p_holm": float(value) for column, value in zip(columns, values, strict=True)}
                if tested:
                    bold |= {
                        (k, column) for column, value in zip(columns, values, strict=True) if value < inference.alpha
                    }
    leading = [*leading, "tested"]
    present = list(dict.fromkeys(c for row in rows for c in row))
    suffixes = ("", "_better", "_worse", "_p", "_p_holm")
    grouped = [f"{c}{suffix}" for c in present for suffix in suffixes if f"{c}{suffix}" in present]
    frame = pd.DataFrame(rows, columns=list(dict.fromkeys([*leading, *grouped, *present])))
    frame = ordered(frame, leading)
    frame.attrs[BOLD_ATTR] = frozenset(bold)
    frame.attrs[ALPHA_ATTR] = inference.alpha
    return frame


def comparisons_table(
    records: LogRecords, radii: Radii = None, *, selection: str = "test", inference: Inference = DEFAULT_INFERENCE
) -> pd.DataFrame:
    """The comparisons of a best table (:func:`~ddrs.analysis.tables.best_table`, same arguments):
    Method-DS vs Method, Method-DS² vs Method-DS and vs Method, per dataset and method."""
    groups = grouped(load_records(records), lambda r: (r.dataset, r.name))
    rows = {key: (candidates[0][0], row_modes(candidates, key[1])) for key, candidates in groups.items()}
    evidence = {key: envelope(candidates, radii, selection, inference.seed) for key, candidates in groups.items()}
    pairs = [
        ({"dataset": key[0], "variant": key[1], "baseline": key_b[1]}, evidence[key], evidence[key_b])
        for key, key_b in best_table_pairs(rows)
    ]
    return _table(pairs, ["dataset", "variant", "baseline"], inference)


def study_comparisons_table(
    records: LogRecords, radii: Radii = None, *, baseline: str = "cohen", inference: Inference = DEFAULT_INFERENCE
) -> pd.DataFrame:
    """The comparisons of a per-σ study (:func:`~ddrs.analysis.tables.per_sigma_table`): every
    row against the ``baseline`` row at the same dataset and σ₀. ``baseline`` is a row name
    (``"Gaussian"``, an ablation variant's name) or the method key of an un-renamed row (``cohen``)."""
    loaded = load_records(records)
    blocks: dict[tuple, list] = {}
    for record, log in loaded:
        blocks.setdefault((record.dataset, record.sigma0), []).append((record, log))
    pairs = []
    for (dataset, sigma0), members in sorted(blocks.items(), key=lambda item: item[0][1]):
        base_at = study_baseline(dataset, sigma0, [record for record, _ in members], baseline)
        base_record, base_log = members[base_at]
        base = envelope([(base_record, base_log)], radii, "test", inference.seed, single=True)
        for at, (record, log) in enumerate(members):
            if at != base_at:
                keys = {"dataset": dataset, "sigma0": sigma0, "variant": record.name, "baseline": base_record.name}
                pairs.append((keys, envelope([(record, log)], radii, "test", inference.seed, single=True), base))
    leading = ["dataset", "sigma0", "variant", "baseline"]
    return _table(pairs, leading, inference)


def selection_optimism_table(
    records: LogRecords, radii: Radii = None, *, inference: Inference = DEFAULT_INFERENCE
) -> pd.DataFrame:
    """Per best-table row and cell, test-selected minus held-out-selected value on the evaluation
    half, with a bootstrap interval (module docstring); arguments as
    :func:`~ddrs.analysis.tables.best_table`. Nothing is bold."""
    rows = []
    for (dataset, name), candidates in grouped(load_records(records), lambda r: (r.dataset, r.name)).items():
        record = candidates[0][0]
        grid = radii_for(radii, dataset, record.norm)
        certified, radius = candidate_arrays([log for _, log in candidates], grid)
        select, evaluate = selection_masks("held_out", radius.shape[1], seed=inference.seed, dataset=dataset)
        by_radius, by_acr = chosen_candidates(certified, radius, select)
        chosen = [*by_radius, by_acr]
        # candidates × cells × evaluation inputs: each radius's indicators (percent), then the radii
        values = np.concatenate([100 * certified[:, :, evaluate], radius[:, None, evaluate]], axis=1)
        point = values.mean(axis=2)
        cells = np.arange(values.shape[1])
        estimate = point.max(axis=0) - point[chosen, cells]
        flat = values.transpose(2, 0, 1).reshape(values.shape[2], -1)
        draws = bootstrap_means(flat, n_boot=inference.n_boot, seed=inference.seed, dataset=dataset)
        draws = draws.reshape(inference.n_boot, *point.shape)
        low, high = percentile_interval(draws.max(axis=1) - draws[:, chosen, cells], inference.alpha)
        row = {"dataset": dataset, "variant": name, **row_modes(candidates, name)}
        for column, value, lo, hi in zip([*map(radius_column, grid), PER_LOG], estimate, low, high, strict=True):
            row |= {column: value, **dict(zip(interval_columns(column), (lo, hi), strict=True))}
        rows.append(row)
    frame = ordered(pd.DataFrame(rows), ["dataset", "variant", "train", "certify"])
    frame.attrs[BOLD_ATTR] = frozenset()
    return frame


def log_comparisons_table(
    logs: Mapping[str, str | os.PathLike | pd.DataFrame],
    radii: Sequence[float],
    *,
    baseline: str,
    inference: Inference = DEFAULT_INFERENCE,
) -> pd.DataFrame:
    """Any labelled logs against the one labelled ``baseline`` (``ddrs table --baseline``): one
    row per other log, columns as the comparisons tables (module docstring)."""
    if baseline not in logs:
        raise ValueError(f"baseline {baseline!r} is not one of the logs {list(logs)}")
    frames = labelled_frames(logs)
    evidence = {label: row_evidence("", [frame], radii) for label, frame in frames.items()}
    pairs = [({"log": label, "baseline": baseline}, e, evidence[baseline]) for label, e in evidence.items()]
    pairs = [pair for pair in pairs if pair[0]["log"] != baseline]
    return _table(pairs, ["log", "baseline"], inference)
