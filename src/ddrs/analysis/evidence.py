"""What one table row stands on: per-input values, so every cell has an interval and a paired test.

A row is built from candidate logs of the same test inputs (one log for a per-setting row; every
training σ, or every σ₀ and K, for a "best" row of Tables 1–4). Its :class:`Evidence` holds, on the
inputs it is reported over,

- per radius, the "certified at r" indicators of the candidate that won the cell (certified
  accuracy is their mean; a paired comparison uses them);
- per ACR convention, the per-input radii whose mean is the cell:

  - ``ACR_per_log``: the radii (0 when wrong or abstained) of the one candidate with the best ACR,
    the ACR of a smoothed classifier someone could deploy;
  - ``ACR_per_input_best``: each input's largest radius among the candidates where it is correct.
    This is the paper's convention (Tables 1–3 print ACRs no single log reaches; see
    ``docs/protocol.md``): it chooses σ per input after seeing its certificate, so it is an
    oracle figure, not the ACR of any one classifier. For one candidate both are equal. It is
    never tested against another row (:data:`UNTESTED`): its expectation grows with the number
    of candidates, so a row with more logs beats one with fewer even when every log is the same.

**Selection.** ``selection="test"`` is the paper's: the candidate behind each cell is chosen on
all test inputs and the cell is reported on the same inputs. ``selection="held_out"`` chooses each
cell's candidate on a seeded half of the test inputs (:func:`~ddrs.analysis.stats.held_out_split`)
and reports certified accuracy and both ACRs on the other half. ``ACR_per_input_best`` has no
choice to make and only moves to the evaluation half: it stays an oracle.

**Tested rows.** A row whose cells are each the best of several candidate logs chosen on the very
inputs they report (``selection="test"`` over more than one log) is described, not tested
(:attr:`Evidence.tested` is false): the maximum of several noisy candidates is biased upward, so a
paired test against a row with fewer candidates favours the row with more even when every log is
the same classifier. Rows of one log, and rows chosen on the held-out half, are tested.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ddrs.analysis.stats import held_out_split

PER_LOG = "ACR_per_log"
PER_INPUT_BEST = "ACR_per_input_best"
#: the ACR column of a table whose rows are single logs (both conventions coincide)
SINGLE_ACR = "ACR"
#: columns reported with their interval but never tested between rows, so never bold: an oracle's
#: gain over a row with fewer candidates is a selection effect, not a difference of classifiers
UNTESTED = frozenset({PER_INPUT_BEST})
SELECTIONS = ("test", "held_out")


@dataclass(frozen=True)
class Evidence:
    """Per-input values of one row on its ``n`` reported inputs (see the module docstring).

    ``certified`` is radii × n (bool); ``acr`` maps an ACR column to its n per-input radii;
    ``chosen`` is the candidate behind each radius cell, then behind ``ACR_per_log``;
    ``candidates`` how many logs each cell was chosen among; ``selected_on_reported`` whether that
    choice saw the inputs the cells report (``selection="test"``; false for held-out selection).
    """

    dataset: str
    radii: tuple[float, ...]
    certified: np.ndarray
    acr: dict[str, np.ndarray]
    chosen: tuple[int, ...]
    candidates: int = 1
    selected_on_reported: bool = False

    @property
    def inputs(self) -> int:
        return self.certified.shape[1]

    @property
    def tested(self) -> bool:
        """Whether a test may compare this row's cells with another row's (module docstring): not
        when each cell is the best of several logs chosen on the inputs it reports."""
        return self.candidates == 1 or not self.selected_on_reported


def per_input(log: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """A log's ``correct`` flags and radii (0 where wrong or abstained), in ``idx`` order."""
    ordered = log.sort_values("idx", kind="stable")
    correct = ordered["correct"].to_numpy() == 1
    return correct, np.where(correct, ordered["radius"].to_numpy(float), 0.0)


def candidate_arrays(logs: Sequence[pd.DataFrame], radii: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Indicators (candidates × radii × inputs) and per-input radii (candidates × inputs)."""
    pairs = [per_input(log) for log in logs]
    correct = np.stack([c for c, _ in pairs])
    radius = np.stack([r for _, r in pairs])
    grid = np.asarray(radii, dtype=float)[None, :, None]
    return correct[:, None, :] & (radius[:, None, :] >= grid), radius


def chosen_candidates(certified: np.ndarray, radius: np.ndarray, select: np.ndarray) -> tuple[np.ndarray, int]:
    """The candidate behind each radius cell (most certified on ``select``) and behind
    ``ACR_per_log`` (best ACR on ``select``); the first candidate on ties."""
    return certified[:, :, select].sum(axis=2).argmax(axis=0), int(radius[:, select].sum(axis=1).argmax())


def selection_masks(selection: str, inputs: int, *, seed: int, dataset: str) -> tuple[np.ndarray, np.ndarray]:
    """(select, evaluate) masks over a dataset's inputs for ``selection`` (see the module docstring)."""
    if selection == "test":
        everything = np.ones(inputs, dtype=bool)
        return everything, everything
    if selection == "held_out":
        return held_out_split(inputs, seed=seed, dataset=dataset)
    raise ValueError(f"selection {selection!r}: choose one of {SELECTIONS}")


def row_evidence(
    dataset: str,
    logs: Sequence[pd.DataFrame],
    radii: Sequence[float],
    *,
    select: np.ndarray | None = None,
    evaluate: np.ndarray | None = None,
    single: bool = False,
) -> Evidence:
    """Evidence of a row over candidate ``logs``: each cell's candidate is the first with the most
    certified (or the best ACR) on ``select``; values are on ``evaluate`` (default: all inputs).
    With ``single`` the ACR is one ``ACR`` column (rows of one log)."""
    if not logs:
        raise ValueError("a row needs at least one certification log")
    certified, radius = candidate_arrays(logs, radii)
    everything = np.ones(radius.shape[1], dtype=bool)
    select = everything if select is None else select
    evaluate = everything if evaluate is None else evaluate
    by_radius, by_acr = chosen_candidates(certified, radius, select)
    cells = certified[by_radius, np.arange(len(radii))][:, evaluate]
    if single:
        acr = {SINGLE_ACR: radius[by_acr, evaluate]}
    else:
        acr = {PER_LOG: radius[by_acr, evaluate], PER_INPUT_BEST: radius[:, evaluate].max(axis=0)}
    chosen = (*map(int, by_radius), by_acr)
    seen = bool((select & evaluate).any())  # the choice saw reported inputs: test selection
    return Evidence(dataset, tuple(map(float, radii)), cells, acr, chosen, len(logs), seen)
