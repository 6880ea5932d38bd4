"""What a certification log is: the experiment setting behind each file the tables combine.

A :class:`LogRecord` names one certification log and the setting that produced it (dataset,
training method, fixed- or data-dependent training and certification, σ₀, K). The paper's row
names follow from it: COHEN, COHEN-DS (certification only) and COHEN-DS² (training and
certification), DDRS §4.1–4.4; ``-GDS-n-<n>`` is the grid-search baseline of Appendix B; ``-IDRS``
the fixed-σ model certified with Súkeník et al.'s semi-elastic σ(x) (ours, not the paper's).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ddrs.errors import LogFormatError
from ddrs.logs.certification_log import read_log
from ddrs.methods import MATCH_SEPARATOR, TRAIN_MODES, get_method, variant_params

CERTIFY_MODES = ("fs", "ds", "gds", "idrs")


@dataclass(frozen=True, eq=False)
class LogRecord:
    """One certification log and the setting that produced it.

    ``log`` is a path (read with :func:`ddrs.logs.certification_log.read_log`) or an already-read DataFrame.
    ``certify_mode`` is ``fs`` (fixed σ), ``ds`` (Algorithm 1 + memory, Algorithm 3), ``gds``
    (Appendix B grid search with ``samples`` noise draws per candidate) or ``idrs`` (Súkeník et al.'s
    semi-elastic σ(x) and their certificate, :mod:`ddrs.core.semi_elastic`). ``K`` is the number of
    Algorithm 1 iterations (``None`` for fixed σ). ``variant`` overrides the derived row name
    (e.g. ``"MACER-DS² (n=8)"`` of Appendix H.3). ``sigma_log`` is the σ log that chose the
    log's scales (``ds``, ``gds``): its ``time`` column is Appendix F's cost of choosing σ.
    ``common_inputs``: a table may cut the logs of this record's dataset to the test inputs all of
    them certify (:func:`ddrs.analysis.loading.restrict_to_common_inputs`) instead of refusing them.
    ``replicate`` is the training run of the model behind the log (every training seed of run r, the
    same r across methods; :mod:`ddrs.analysis.replication` tests methods across them).
    """

    log: str | os.PathLike | pd.DataFrame
    dataset: str
    method: str
    train_mode: str = "fs"
    certify_mode: str = "fs"
    sigma0: float = 0.0
    K: int | None = None
    samples: int | None = None
    variant: str | None = None
    sigma_log: str | os.PathLike | None = None
    common_inputs: bool = False
    #: out of the repr, which the workflow compares (a table's parameters): the log's path names the run
    #: already, so a table of run 0's logs keeps the identity it had before runs existed
    replicate: int = field(default=0, repr=False)

    def __post_init__(self):
        if self.train_mode not in TRAIN_MODES:
            raise ValueError(f"train_mode {self.train_mode!r} of {self.source}: choose one of {TRAIN_MODES}")
        if self.certify_mode not in CERTIFY_MODES:
            raise ValueError(f"certify_mode {self.certify_mode!r} of {self.source}: choose one of {CERTIFY_MODES}")
        if self.certify_mode == "gds" and self.samples is None:
            raise ValueError(f"{self.source}: a grid-search (gds) record needs `samples` (Appendix B's n)")

    @property
    def source(self) -> str:
        """The file this record reads, for messages."""
        return "<DataFrame>" if isinstance(self.log, pd.DataFrame) else str(self.log)

    @property
    def name(self) -> str:
        """The paper's row name: Cohen, Cohen-DS, Cohen-DS², SmoothAdv-GDS-n-4, …"""
        if self.variant is not None:
            return self.variant
        method = display_name(self.method)
        if self.certify_mode == "gds":
            return f"{method}-GDS-n-{self.samples}"
        if self.certify_mode == "idrs":
            return f"{method}-IDRS"
        if self.certify_mode == "fs":
            return method if self.train_mode == "fs" else f"{method} (DS-trained, FS-certified)"
        return f"{method}-DS²" if self.train_mode == "ds" else f"{method}-DS"

    @property
    def label(self) -> str:
        """Row name with its setting, for legends: ``Cohen-DS σ₀=0.25 K=100``."""
        text = f"{self.name} σ₀={self.sigma0:g}"
        return text if self.K is None else f"{text} K={self.K}"

    @property
    def norm(self) -> int:
        """The ℓp norm of the certificate: 1 for uniform noise (YANG), else 2 (also for unregistered methods)."""
        try:
            return get_method(self.method).norm
        except ValueError:
            return 2

    def load(self) -> pd.DataFrame:
        """The log's rows (validated); Cohen's columns are required."""
        return load_log(self.log)


def display_name(method: str) -> str:
    """How the paper prints a method (its registry entry's ``display``, with an ablation variant's
    components: ``EasyFocus (discard+reweigh)``, or a matched variant's shared hyper-parameters:
    ``Cohen (as EasyFocus: m)``); unregistered names as given."""
    try:
        display = get_method(method).display
    except ValueError:
        return method
    base, _, other = method.partition(MATCH_SEPARATOR)
    if other:  # a matched variant: the baseline trained with hyper-parameters of another method
        return f"{display} (as {get_method(other).display}: {', '.join(get_method(base).matched_fields(other))})"
    switches = variant_params(method)
    if not switches:
        return display
    return f"{display} ({'+'.join(c for c, on in switches.items() if on) or 'none'})"


def load_log(log: str | os.PathLike | pd.DataFrame) -> pd.DataFrame:
    """Read a log path with :func:`read_log`, or check an in-memory log has the needed columns."""
    if not isinstance(log, pd.DataFrame):
        return read_log(log)
    missing = [column for column in ("idx", "radius", "correct") if column not in log.columns]
    if missing:
        raise LogFormatError(f"<DataFrame>: missing column(s) {', '.join(missing)}")
    return log


def variant_order(records: Iterable[LogRecord]) -> list[str]:
    """Row names in the paper's order: Method, Method-DS, Method-DS², then the rest as given."""
    rank = {("fs", "fs"): 0, ("fs", "ds"): 1, ("ds", "ds"): 2}
    first_seen: dict[str, tuple[int, int]] = {}
    for position, record in enumerate(records):
        key = (rank.get((record.train_mode, record.certify_mode), 3), position)
        first_seen.setdefault(record.name, key)
    return sorted(first_seen, key=first_seen.__getitem__)


def modes_of(records: Iterable[LogRecord], name: str) -> tuple[str, str]:
    """The (train, certify) modes shared by all records of one row; mixing them is an error."""
    modes = {(r.train_mode, r.certify_mode) for r in records}
    if len(modes) != 1:
        raise ValueError(f"row {name!r} mixes (train, certify) modes {sorted(modes)}")
    return modes.pop()


def labelled_logs(paths: Sequence[str | os.PathLike], labels: Sequence[str] | None = None) -> dict[str, str]:
    """Name each log path: the given labels, else the file stem, or where stems collide (a workflow's
    logs are all ``certify_fixed.tsv``) the shortest tail of the path that no other log shares."""
    if labels is None:
        every_path = [Path(p) for p in paths]
        labels = [_distinct_tail(path, every_path) for path in every_path]
    if len(labels) != len(paths):
        raise ValueError(f"got {len(labels)} label(s) for {len(paths)} log(s); give one label per log")
    if len(set(labels)) != len(labels):
        raise ValueError(f"labels must be distinct, got {list(labels)}")
    return {label: str(path) for label, path in zip(labels, paths, strict=True)}


def _distinct_tail(path: Path, paths: Sequence[Path]) -> str:
    """``path``'s stem, prefixed with as few of its parent folders as tell it from every other path."""
    others = [p for p in paths if p != path]
    for depth in range(1, 1 + max(len(p.parts) for p in paths)):
        tail = (*path.parts[-depth:-1], path.stem)
        if all((*other.parts[-depth:-1], other.stem) != tail for other in others):
            return "/".join(tail)
    return str(path)
