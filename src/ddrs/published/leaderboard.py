"""One leaderboard per dataset: every published method × σ, and each method's envelope over σ.

**What is on it.** Every test-split log of the dataset in the registry with a stated σ and at least
one row (:func:`dataset_logs`). Byte-identical logs (same sha256) are one result: it is counted
once, credited to the repository that produced it (:mod:`ddrs.published.origins`: the copy first
committed; else the first in registry order), and ``also_at`` names its copies.

**Methods.** A published method is what its authors call it in one repository (``method_authors``,
which carries its settings, e.g. ``PGD_10steps/eps_127``) with one architecture, over one set of
test inputs: ``(repository, method_authors, arch, inputs)`` (:class:`MethodKey`). Its logs are its
σ (and, where the authors publish several, its runs or seeds). Logs of one method over other test
inputs (a full test set beside a 1-in-20 subset, a run split in halves) make another method row, so
that every envelope compares its logs on the same inputs.

**Input sets and families.** An input set is its images, not its indices: a log's inputs are keyed
by ``(input order, idx)``, its order the registry's (:mod:`ddrs.published.input_orders`: its
repository's test-set order, which its labels must match). Methods are ranked within their input set
(``input_set``: the order and the ``idx`` they certify), never across: a 500-input log and a
10,000-input log are not one ranking, nor are Salman et al.'s ImageNet logs (their own order, label
65 at idx 0) and Cohen et al.'s (the sorted order, label 0 at idx 0), though both certify idx
0:49900:100.
Each row carries its method's family and extra training data (:mod:`ddrs.published.families`).
A user's own logs (:mod:`ddrs.published.own_logs`) are entries like the published ones.

**Rows.** Per method, its envelope row (``sigma`` = ``envelope``): the best certified accuracy at
each radius over its logs, with both ACR conventions (``ACR_per_log``, the best ACR of any one of
its logs; ``ACR_per_input_best``, each input's best radius, an oracle), then one row per log
(``ACR``). Every cell has its interval: exact Clopper–Pearson for certified accuracy over the
row's inputs (for an envelope cell, that of the log that won it), seeded percentile bootstrap for
ACR, resamples shared by rows of as many inputs (:func:`ddrs.analysis.assemble.assemble`, the
statistics of the project's tables). Methods are ranked by their envelope's ``ACR_per_log``; no
cell is bold: the leaderboard's claims are its comparisons with Gaussian training
(:mod:`ddrs.published.gaussian_comparisons`).

Certified accuracy and ACR follow Cohen et al. (2019, §4): the share of inputs with ``correct == 1``
and ``radius ≥ r``; the mean of ``radius · correct``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ddrs.analysis.assemble import assemble
from ddrs.analysis.evidence import PER_LOG, row_evidence
from ddrs.analysis.stats import DEFAULT_INFERENCE, Inference
from ddrs.io import atomic_path
from ddrs.logs.certification_log import read_log
from ddrs.published.families import Families, Family, family_of, read_families
from ddrs.published.input_orders import ORDERS_PATH, STANDARD, describe, guard_order, order_of, read_orders
from ddrs.published.log_registry import PublishedLog, select
from ddrs.published.manifest import local_file
from ddrs.published.origins import read_origins

#: the ``sigma`` of a method's envelope row
ENVELOPE = "envelope"
#: the leading (key) columns of the leaderboard, in order
LEADING = (
    "dataset",
    "input_set",
    "input_order",
    "rank",
    "method",
    "family",
    "extra_data",
    "ours",
    "repository",
    "paper",
    "arch",
    "sigma",
    "noise",
    "run",
    "logs",
    "inputs",
    "log",
    "also_at",
)


@dataclass(frozen=True)
class MethodKey:
    """A published method: its authors' name in one repository, with one architecture, on one set of inputs."""

    repository: str
    method_authors: str
    arch: str
    inputs: int
    #: a digest of the input order and the ``idx`` it certifies: logs of one digest certify the same images
    inputs_digest: str

    @property
    def label(self) -> str:
        """How figures name it: ``PGD_10steps/eps_127 (resnet110) [Hadisalman]``, the repository by its owner."""
        arch = f" ({self.arch})" if self.arch else ""
        return f"{self.method_authors}{arch} [{self.repository.split('/')[0]}]"


@dataclass(frozen=True, eq=False)
class Entry:
    """One distinct published log of the dataset (or a user's own): its registry row, the names of its
    byte-identical copies (its own first), its rows sorted by ``idx``, its method's family, and the
    input order its ``idx`` number (:mod:`ddrs.published.input_orders`)."""

    log: PublishedLog
    names: tuple[str, ...]
    frame: pd.DataFrame
    family: Family
    order: str = STANDARD

    @property
    def name(self) -> str:
        return self.names[0]

    @property
    def sigma(self) -> float:
        return float(self.log.sigma)

    @property
    def idx(self) -> np.ndarray:
        return self.frame["idx"].to_numpy()

    @functools.cached_property
    def inputs_digest(self) -> str:
        """A digest of its input order and the ``idx`` it certifies: logs of one digest certify the same images."""
        return inputs_digest(self.idx, self.order)

    @property
    def method(self) -> MethodKey:
        return MethodKey(self.log.repository, self.log.method_authors, self.log.arch, len(self.idx), self.inputs_digest)

    def shipped_by(self, repository: str) -> bool:
        """Whether ``repository`` publishes this log (under any of its names)."""
        return any(name.startswith(f"{repository}:") for name in self.names)


def inputs_digest(idx: np.ndarray, order: str) -> str:
    """A digest of the images ``idx`` number in input ``order``: equal digests, the same images."""
    return hashlib.sha1(order.encode() + b"\0" + np.ascontiguousarray(idx, dtype=np.int64).tobytes()).hexdigest()[:16]


def input_set(idx: np.ndarray, order: str) -> str:
    """How tables and figures name the test inputs a log certifies: ``10,000 inputs: idx 0:9999:1,
    standard order`` where evenly spaced (first:last:step), else ``… inputs: idx sha1 <digest>, …``."""
    idx = np.asarray(idx)
    steps = np.diff(idx)
    if len(idx) == 1 or (len(idx) > 1 and (steps == steps[0]).all()):
        step = int(steps[0]) if len(idx) > 1 else 1
        return f"{len(idx):,} inputs: idx {int(idx[0])}:{int(idx[-1])}:{step}, {describe(order)}"
    digest = hashlib.sha1(np.ascontiguousarray(idx, dtype=np.int64).tobytes()).hexdigest()
    return f"{len(idx):,} inputs: idx sha1 {digest[:8]}, {describe(order)}"


def dataset_logs(
    registry: pd.DataFrame | None, dataset: str, origins: Mapping[str, tuple[str, str]] | None = None
) -> list[tuple[PublishedLog, tuple[str, ...]]]:
    """The leaderboard's logs of ``dataset``: test split, σ stated, at least one row; each sha256 once,
    under the copy that produced it (``origins``: sha256 → (repository, path), default the shipped
    :mod:`ddrs.published.origins`; a content it does not name, or whose origin is not selected, under
    its first copy in registry order), with the names of all its copies, its own first."""
    origins = read_origins() if origins is None else origins
    rows = select(registry, dataset=dataset, split="test")
    rows = rows[rows["sigma"].notna() & (rows["rows"] > 0)]
    logs = []
    for sha256, copies in rows.groupby("sha256", sort=False):
        names = list(copies["repository"] + ":" + copies["path"])
        origin = origins.get(sha256)
        credited = names.index(":".join(origin)) if origin is not None and ":".join(origin) in names else 0
        names.insert(0, names.pop(credited))
        logs.append((PublishedLog.from_row(copies.iloc[credited]), tuple(names)))
    return logs


def load_entries(
    registry: pd.DataFrame | None,
    dataset: str,
    files: Mapping[tuple[str, str], str | Path],
    families: Families | None = None,
    orders: pd.DataFrame | None = None,
    order_labels: pd.DataFrame | None = None,
) -> list[Entry]:
    """:func:`dataset_logs` read from their local ``files`` ((repository, path) → file; a manifest's),
    each with its family in ``families`` (default: the shipped table) and its input order: the one
    ``orders`` declares (default: the shipped table), which its labels must match in the fingerprints
    ``order_labels`` (default: the shipped ones; :func:`~ddrs.published.input_orders.guard_order`)."""
    families = read_families() if families is None else families
    orders = read_orders() if orders is None else orders
    entries = []
    for log, names in dataset_logs(registry, dataset):
        frame = read_log(local_file(files, log.repository, log.path, log.sha256))
        family = family_of(families, log.repository, log.method_authors)
        declared = order_of(orders, dataset, log.repository, log.path)
        order = guard_order(names[0], dataset, frame, declared, str(ORDERS_PATH), order_labels)
        frame = frame.sort_values("idx", kind="stable").reset_index(drop=True)
        entries.append(Entry(log, names, frame, family, order))
    if not entries:
        raise ValueError(f"the registry holds no test-split log of {dataset!r} with a stated σ and rows")
    return entries


#: the columns of a log the leaderboard reads, and the types :func:`save_entries` stores them in
#: (:func:`read_entries` gives them back as :func:`~ddrs.logs.certification_log.read_log` types them)
ENTRY_COLUMNS = {"idx": np.int32, "label": np.int32, "predict": np.int32, "radius": np.float64, "correct": np.int8}


def save_entries(entries: Sequence[Entry], path: str | os.PathLike) -> None:
    """Write a dataset's entries to one ``.npz`` file (atomically): its logs' columns concatenated, with
    each log's registry row and names. The leaderboard's jobs read it instead of every log again."""
    lengths = [len(entry.frame) for entry in entries]
    arrays = {}
    for column, kind in ENTRY_COLUMNS.items():
        values = np.concatenate([entry.frame[column].to_numpy() for entry in entries])
        arrays[column] = values.astype(kind) if kind is np.float64 else _narrow(values, kind, column)
    meta = json.dumps(
        [
            {
                "log": dataclasses.asdict(entry.log),
                "names": list(entry.names),
                "family": dataclasses.asdict(entry.family),
                "order": entry.order,
            }
            for entry in entries
        ]
    )
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.savez(handle, offsets=np.cumsum([0, *lengths]), meta=np.array(meta), **arrays)


def _narrow(values: np.ndarray, kind, column: str) -> np.ndarray:
    """``values`` in the smaller integer type ``kind``, refused where one does not fit."""
    narrowed = values.astype(kind)
    if not np.array_equal(narrowed, values):
        raise ValueError(f"a log's {column} does not fit {np.dtype(kind).name}; store it wider")
    return narrowed


def read_entries(path: str | os.PathLike) -> list[Entry]:
    """The entries :func:`save_entries` wrote, as :func:`load_entries` gave them."""
    with np.load(path) as data:
        meta, offsets = json.loads(str(data["meta"])), data["offsets"]
        arrays = {
            column: data[column].astype(np.float64 if kind is np.float64 else np.int64)
            for column, kind in ENTRY_COLUMNS.items()
        }
    return [
        Entry(
            PublishedLog(**item["log"]),
            tuple(item["names"]),
            pd.DataFrame({column: values[offsets[k] : offsets[k + 1]] for column, values in arrays.items()}),
            Family(**item["family"]),
            item["order"],
        )
        for k, item in enumerate(meta)
    ]


def methods(entries: Sequence[Entry]) -> dict[MethodKey, list[Entry]]:
    """The entries of each published method (:class:`MethodKey`), in registry order, its logs by σ."""
    grouped: dict[MethodKey, list[Entry]] = {}
    for entry in entries:
        grouped.setdefault(entry.method, []).append(entry)
    for members in grouped.values():
        members.sort(key=lambda entry: entry.sigma)
    return grouped


def _shared_keys(key: MethodKey, members: Sequence[Entry], dataset: str) -> dict:
    log = members[0].log
    return {
        "dataset": dataset,
        "method": key.method_authors,
        "ours": log.method,
        "repository": key.repository,
        "paper": log.paper,
        "arch": key.arch,
        "inputs": key.inputs,
        "input_set": input_set(members[0].idx, members[0].order),
        "input_order": members[0].order,
        "family": members[0].family.name,
        "extra_data": members[0].family.extra_data,
    }


def _log_keys(entry: Entry) -> dict:
    return {
        "sigma": f"{entry.sigma:g}",
        "noise": "" if entry.log.noise is None else f"{entry.log.noise:g}",
        "run": entry.log.run,
        "logs": 1,
        "log": entry.name,
        "also_at": "; ".join(entry.names[1:]),
    }


def leaderboard_table(
    entries: Sequence[Entry], dataset: str, radii: Sequence[float], *, inference: Inference = DEFAULT_INFERENCE
) -> pd.DataFrame:
    """The leaderboard of one dataset's entries (module docstring): per input set, largest first, its
    methods ranked by their envelope's ``ACR_per_log``, best first; per method its envelope row, then
    its logs."""
    grouped = methods(entries)
    rows = []
    for key, members in grouped.items():
        shared = _shared_keys(key, members, dataset)
        envelope = row_evidence(dataset, [m.frame for m in members], radii)
        rows.append(({**shared, "sigma": ENVELOPE, "logs": len(members), "_key": key}, envelope))
        for member in members:
            evidence = row_evidence(dataset, [member.frame], radii, single=True)
            rows.append(({**shared, **_log_keys(member), "_key": key}, evidence))
    keys = [keys for keys, _ in rows]
    for number, key in enumerate(keys):
        key["_row"] = number  # each row its own group: no pairwise test between rows (module docstring)
    frame = assemble(rows, ["dataset", "method", "_row"], groups=("_row",), inference=inference)
    best = frame.loc[frame["sigma"] == ENVELOPE].set_index("_key")[PER_LOG]
    score = best.to_dict()
    order = sorted(score, key=lambda key: (-key.inputs, key.inputs_digest, -score[key]))
    rank, position = {}, {}
    for number, key in enumerate(order):
        within = [other for other in order[:number] if other.inputs_digest == key.inputs_digest]
        rank[key], position[key] = len(within) + 1, number
    frame["rank"] = frame["_key"].map(rank)
    frame["_position"] = frame["_key"].map(position)
    frame["_envelope"] = frame["sigma"] != ENVELOPE
    frame = frame.sort_values(["_position", "_envelope", "_row"], kind="stable")
    frame = frame.drop(columns=["_key", "_row", "_envelope", "_position"])
    leading = [column for column in LEADING if column in frame.columns]
    frame = frame[[*leading, *[c for c in frame.columns if c not in leading]]].reset_index(drop=True)
    frame.attrs.update(bold_cells=frozenset(), alpha=inference.alpha)
    return frame
