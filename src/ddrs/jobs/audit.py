"""The certificate audit (issue 69): attack the certificates of a certification log inside their radius, and
count what the deployed smoothed classifier confirms.

The audited certificates (x, c, R) are the first ``inputs`` rows of the log with R > 0, in ``idx`` order. Two
attacks look for x′ with ‖x′ − x‖ < R (:mod:`ddrs.core.attack`): PGD on the soft smoothed classifier
(SmoothAdv's objective), and a line search toward the nearest training input of another class than c. They
attack the classifier as deployed:

- :class:`FixedSigma`, Cohen et al.'s classifier with one σ: the control;
- :class:`DataDependentSigma`, DDRS without memory: at every query σ*ₓ′ is chosen by Algorithm 1 at x′
  (§3.4) with the log's σ search's settings and K, the certified input keeping the σ its row was certified at;
  the PGD holds each step's σ while it takes the step's gradient;
- with a :class:`Memory`, DDRS's Algorithm 3 classifier after certifying the test set in ``idx`` order (§3.5,
  Appendix C): a query inside a stored region of another prediction takes that region's class. The same
  candidates are asked of it; a memory certificate (its class and radius from the memory log) counts a
  violation only at a candidate inside its own radius.

A candidate is confirmed by Cohen et al.'s PREDICT (§3.2.1) with ``n`` fresh draws at level α/2 (two
candidates per certificate), and x itself at level α. A violation counts only when PREDICT at x returns c and
PREDICT at x′ does not abstain and returns another class: for a sound certificate that happens with
probability at most 2α (α that CERTIFY's bound failed, α for the two confirmations).

Each row is one certificate, written as soon as it is audited (:class:`~ddrs.logs.certification_log.LogWriter`:
a rerun resumes). Input ``idx``'s draws come from its own streams ``(seed, AUDIT_*, idx)``
(:class:`~ddrs.core.seeds.StudyStream`), consumed one certificate at a time in a fixed order, so a row depends
neither on the other rows nor on where a run resumed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn

from ddrs.core.attack import line_points, nearest_of_other_class, smoothed_pgd, soft_classifier
from ddrs.core.audit_settings import ATTACKS, AuditSettings
from ddrs.core.certificate import ABSTAIN
from ddrs.core.memory import NORM_OF_NOISE, memory_answer
from ddrs.core.seeds import StudyStream
from ddrs.core.settings import DEFAULT_CERTIFY_BATCH, Algorithm1Settings
from ddrs.core.sigma import optimize_sigma, smoothed_top_class
from ddrs.core.smoothing import predict_batch
from ddrs.core.streams import InputStreams, input_streams, stream_settings
from ddrs.io import file_digest
from ddrs.logs.certification_log import LogWriter, read_log

#: an audit log's columns: the certificate and PREDICT at it, each attack's candidate, then ``time``
CERTIFICATE_COLUMNS = ("idx", "label", "predict", "radius", "scale", "predict_x", "scale_rerun")
ATTACK_COLUMNS = tuple(
    f"{attack}_{field}" for attack in ATTACKS for field in ("distance", "scale", "predict", "elasticity", "violation")
)
#: the columns an audit with a memory adds before ``time``
MEMORY_COLUMNS = ("memory_predict", "memory_radius", *(f"{attack}_memory" for attack in ATTACKS), "memory_violation")


@dataclass(frozen=True)
class FixedSigma:
    """Cohen et al.'s smoothed classifier: one σ at every input (the control)."""

    sigma: float

    def certified(self, row: pd.Series) -> float:
        if not np.isclose(row.get("scale", self.sigma), self.sigma, rtol=1e-12, atol=0):
            raise ValueError(f"log row idx {row['idx']} was certified at σ = {row['scale']}, not at {self.sigma}")
        return self.sigma

    def at(self, model: nn.Module, points: Tensor, streams: InputStreams) -> Tensor:
        return torch.full((len(points),), self.sigma, dtype=torch.float64, device=points.device)

    def identity(self) -> dict:
        return {"sigma": self.sigma}


@dataclass(frozen=True)
class DataDependentSigma:
    """DDRS's smoothed classifier without memory: σ*ₓ by Algorithm 1 at every query (§3.4, ``search`` with one
    K), the σ a certified input's row was certified at (the log's ``scale``) at that input."""

    search: Algorithm1Settings
    num_classes: int

    def certified(self, row: pd.Series) -> float:
        if "scale" not in row:
            raise ValueError("a data-dependent log needs its scale column (the σ*ₓ each row was certified at)")
        return float(row["scale"])

    def at(self, model: nn.Module, points: Tensor, streams: InputStreams) -> Tensor:
        """Algorithm 1 at ``points`` as the σ search runs it: c_A from σ₀-smoothing first where the objective
        holds it (``fixed_class``), both from ``streams``."""
        search, held = self.search, None
        if search.objective == "fixed_class":
            held = smoothed_top_class(
                model, points, search.sigma0, num_classes=self.num_classes, noise=search.noise, n0=search.n0,
                batch_size=search.n0, generator=streams, precision=search.precision,
            )  # fmt: skip
        return optimize_sigma(model, points, search, held, generator=streams)[-1].detach()

    def identity(self) -> dict:
        return {"algorithm1": self.search.resume_settings()}


@dataclass(frozen=True)
class Memory:
    """Algorithm 3's state after certifying the test set in ``idx`` order: a memory log's inputs, predictions
    and radii (:func:`ddrs.core.memory.memory_answer` answers a query against it)."""

    points: np.ndarray
    frame: pd.DataFrame
    norm: int

    def row(self, idx: int) -> pd.Series:
        return self.frame.loc[idx]

    def answer(self, query: Tensor, query_predict: int) -> int:
        predict, radius = self.frame["predict"].to_numpy(), self.frame["radius"].to_numpy()
        return memory_answer(self.points, predict, radius, query.cpu().numpy(), query_predict, self.norm)


#: certificates attacked together, by their position among a log's audited rows: a constant, not a setting,
#: as the model's float kernels sum in another order for another batch (a σ moves by an ulp); a resumed run
#: recomputes a whole group, so its rows are those an uninterrupted run writes
GROUP = 50


@dataclass(frozen=True)
class Auditor:
    """Attacks a group of certificates: the model, the deployed classifier's σ, the audit's sizes, PREDICT's
    level ``alpha``, the run ``seed`` of the streams, and the training inputs the line search heads for."""

    model: nn.Module
    sigma: FixedSigma | DataDependentSigma
    settings: AuditSettings
    alpha: float
    precision: str
    seed: int
    train_images: Tensor
    train_labels: Tensor

    def predict(self, points: Tensor, sigma: Tensor, level: float, streams: InputStreams) -> list[int]:
        """PREDICT at ``points`` with ``n`` fresh draws each at ``level``: the class, or ABSTAIN, per point."""
        return predict_batch(
            self.model, points, sigma, noise="gaussian", n=self.settings.n, alpha=level,
            batch_size=DEFAULT_CERTIFY_BATCH, generator=streams, precision=self.precision,
        ).tolist()  # fmt: skip

    def sigma_at(self, streams: InputStreams):
        return lambda points: self.sigma.at(self.model, points, streams)

    def group(self, rows: pd.DataFrame, x: Tensor) -> tuple[list[dict], dict[str, Tensor]]:
        """Audit the certificates of ``rows`` (idx, label, predict, radius) at their inputs ``x``: one audit row
        each (without ``time``), and each attack's candidate points."""
        idx, label = rows["idx"].tolist(), torch.tensor(rows["predict"].tolist(), device=x.device)
        radius = torch.tensor(rows["radius"].tolist(), dtype=torch.float64, device=x.device)
        sigma_x = torch.tensor([self.sigma.certified(row) for _, row in rows.iterrows()], dtype=torch.float64)
        sigmas, draws, confirm = (
            input_streams(self.seed, idx, stream, x.device)
            for stream in (StudyStream.AUDIT_SIGMA, StudyStream.AUDIT_ATTACK, StudyStream.AUDIT_PREDICT)
        )
        audited = {"predict_x": self.predict(x, sigma_x, self.alpha, confirm)}
        path = smoothed_pgd(
            self.model, x, label, radius, self.sigma_at(sigmas), draws,
            steps=self.settings.steps, count=self.settings.draws, precision=self.precision,
        )  # fmt: skip
        audited["scale_rerun"] = path[0][1].tolist()
        last = torch.full_like(label, len(path) - 2)
        paths = {"pgd": (path[1:], last), "line": self.line_search(x, label, radius, sigmas, draws)}
        candidates, rows_of = {}, torch.arange(len(x), device=x.device)
        for attack, (visited, chosen) in paths.items():
            point = torch.stack([p for p, _ in visited], dim=1)[rows_of, chosen]
            sigma = torch.stack([s for _, s in visited], dim=1)[rows_of, chosen]
            predicted = self.predict(point, sigma, self.alpha / len(ATTACKS), confirm)
            audited |= {
                f"{attack}_distance": _distances(point, x).tolist(), f"{attack}_scale": sigma.tolist(),
                f"{attack}_predict": predicted, f"{attack}_elasticity": _elasticity(visited, x, sigma_x).tolist(),
            }  # fmt: skip
            candidates[attack] = point
        return _rows(rows, sigma_x, audited), candidates

    def line_search(self, x: Tensor, label: Tensor, radius: Tensor, sigmas: InputStreams, draws: InputStreams):
        """The lines toward each input's nearest training input of another class: their points with their σ,
        and the point to confirm per input, the first the soft smoothed classifier (``draws`` draws) gives
        another class, else the last."""
        target = self.train_images[nearest_of_other_class(x, label, self.train_images, self.train_labels)]
        lines = torch.stack(
            [line_points(x[i], target[i], float(radius[i]), self.settings.line_points) for i in range(len(x))], dim=1
        )
        visited, last = [], len(lines) - 1
        chosen = torch.full_like(label, last)
        for j, points in enumerate(lines):
            sigma = self.sigma.at(self.model, points, sigmas)
            with torch.no_grad():
                psi = soft_classifier(self.model, points, sigma, draws, self.settings.draws, self.precision)
            visited.append((points, sigma))
            chosen = torch.where((psi.argmax(dim=1) != label) & (chosen == last), j, chosen)
        return visited, chosen


def _rows(rows: pd.DataFrame, sigma_x: Tensor, audited: Mapping[str, list]) -> list[dict]:
    """One audit row per certificate from the group's columns; a violation where PREDICT returns the certified
    class at x and another class at a candidate inside the radius."""
    out = []
    for position, (_, row) in enumerate(rows.iterrows()):
        c = int(row["predict"])
        found = {"idx": int(row["idx"]), "label": int(row["label"]), "predict": c, "radius": float(row["radius"])}
        found |= {"scale": float(sigma_x[position]), **{k: v[position] for k, v in audited.items()}}
        for attack in ATTACKS:
            predicted, inside = found[f"{attack}_predict"], found[f"{attack}_distance"] < found["radius"]
            found[f"{attack}_violation"] = int(inside and found["predict_x"] == c and predicted not in (c, ABSTAIN))
        out.append(found)
    return out


def _distances(points: Tensor, x: Tensor) -> Tensor:
    return (points.double() - x.double()).flatten(1).norm(dim=1)


def _elasticity(visited, x: Tensor, sigma_x: Tensor) -> Tensor:
    """Per input, the largest empirical semi-elasticity of σ along an attack's path: |log σ(p) − log σ*ₓ| /
    ‖p − x‖ over its points p ≠ x (Súkeník et al. 2022's semi-elasticity, measured; 0 for a fixed σ)."""
    largest = torch.zeros(len(x), dtype=torch.float64)
    for points, sigma in visited:
        distance = _distances(points, x).cpu()
        ratio = (sigma.double().cpu().log() - sigma_x.log()).abs() / distance
        largest = torch.where(distance > 0, torch.maximum(largest, ratio), largest)
    return largest


def memory_columns(memory: Memory, row: Mapping, point: Mapping[str, Tensor]) -> dict:
    """What the memory classifier answers at each candidate, and whether its own certificate of the row's
    input (the memory log's class and radius) is violated: a candidate inside that radius answered another class."""
    stored = memory.row(row["idx"])
    c, radius = int(stored["predict"]), float(stored["radius"])
    answers = {attack: memory.answer(point[attack], row[f"{attack}_predict"]) for attack in ATTACKS}
    violated = any(row[f"{a}_distance"] < radius and answer not in (c, ABSTAIN) for a, answer in answers.items())
    return {
        "memory_predict": c, "memory_radius": radius, **{f"{a}_memory": answers[a] for a in ATTACKS},
        "memory_violation": int(violated),
    }  # fmt: skip


def audited_rows(log: pd.DataFrame, inputs: int) -> pd.DataFrame:
    """The certificates an audit attacks: the first ``inputs`` rows with a class and a radius > 0, by ``idx``."""
    certified = log[(log["predict"] != ABSTAIN) & (log["radius"] > 0)]
    return certified.sort_values("idx", kind="stable").head(inputs)


def load_memory(memory_log: str | os.PathLike, log: pd.DataFrame, test_set) -> Memory:
    """The memory log of ``log`` (Algorithm 3 over the same inputs) with its inputs from ``test_set``."""
    frame = read_log(memory_log).sort_values("idx", kind="stable")
    if "memory_action" not in frame.columns or set(frame["idx"]) != set(log["idx"]):
        raise ValueError(f"{memory_log} is not the memory log of the audited log (Algorithm 3 over its inputs)")
    points = np.stack([np.asarray(test_set[int(idx)][0]) for idx in frame["idx"]])
    return Memory(points=points, frame=frame.set_index("idx", drop=False), norm=NORM_OF_NOISE["gaussian"])


def _inputs(test_set, rows: pd.DataFrame, log_path, device) -> Tensor:
    """The inputs of ``rows`` from ``test_set``, each checked to carry the row's label (the log's split)."""
    images = []
    for idx, label in zip(rows["idx"], rows["label"], strict=True):
        image, own = test_set[int(idx)]
        if int(own) != int(label):
            raise ValueError(
                f"{log_path}: idx {idx} has label {label}, the split's input {own}: it certifies another split; "
                "use the dataset and seed it was certified with"
            )
        images.append(torch.as_tensor(image))
    return torch.stack(images).to(device)


def audit_log(
    auditor: Auditor,
    test_set,
    log_path: str | os.PathLike,
    out_path: str | os.PathLike,
    *,
    memory_log: str | os.PathLike | None = None,
    provenance: Mapping[str, object] | None = None,
    device: torch.device | str = "cpu",
) -> Path:
    """Audit the certificates of the log ``log_path`` (inputs ``test_set[idx]``) into the audit log
    ``out_path``, :data:`GROUP` at a time and resumably; with ``memory_log`` (its Algorithm 3 log) the memory
    classifier's certificates too. ``time`` is the group's seconds per certificate."""
    log = read_log(log_path)
    if "noise" in log.columns and set(log["noise"]) - {"gaussian"}:
        raise ValueError(f"{log_path}: the audit attacks ℓ2 certificates of Gaussian smoothing; its noise is not")
    memory = None if memory_log is None else load_memory(memory_log, log, test_set)
    rows = audited_rows(log, auditor.settings.inputs)
    columns = (*CERTIFICATE_COLUMNS, *ATTACK_COLUMNS, *(MEMORY_COLUMNS if memory else ()), "time")
    settings = {
        "audit": asdict(auditor.settings), "alpha": auditor.alpha, "precision": auditor.precision,
        "seed": auditor.seed, **auditor.sigma.identity(), **stream_settings(device), "log": file_digest(log_path),
        "memory": None if memory_log is None else file_digest(memory_log), **(provenance or {}),
    }  # fmt: skip
    writer = LogWriter(out_path, columns, settings, indices=rows["idx"].tolist())
    for start in range(0, len(rows), GROUP):
        group = rows.iloc[start : start + GROUP]
        if group["idx"].isin(writer.done).all():
            continue
        started = time.perf_counter()
        audited, candidates = auditor.group(group, _inputs(test_set, group, log_path, device))
        seconds = (time.perf_counter() - started) / len(group)
        for position, row in enumerate(audited):
            if memory is not None:
                row |= memory_columns(memory, row, {a: points[position] for a, points in candidates.items()})
            if row["idx"] not in writer.done:
                writer.write({**row, "time": seconds})
    return writer.finish()


#: the keys of an audit document's ``inputs``: where the test and training inputs come from
INPUT_KEYS = ("dataset", "data_root", "seed", "device")


def deployed_sigma(document: Mapping, num_classes: int) -> FixedSigma | DataDependentSigma:
    """The classifier a document audits: ``sigma`` (fixed σ) or ``algorithm1`` (its one K)."""
    if ("sigma" in document) == ("algorithm1" in document):
        raise ValueError("an audit document gives either sigma (a fixed-σ log) or algorithm1 (a data-dependent log)")
    if "sigma" in document:
        return FixedSigma(float(document["sigma"]))
    search = Algorithm1Settings(**document["algorithm1"])
    if len(search.steps) != 1:
        raise ValueError(f"algorithm1.steps is {list(search.steps)}: give the one K the audited log was certified at")
    return DataDependentSigma(search, num_classes)


def training_inputs(dataset: str, data_root: str, seed: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """The training split's images and labels (never augmented), where the line search heads."""
    from ddrs.data import load_images, load_labels

    images = load_images(dataset, "train", root=data_root, seed=seed)
    stacked = np.stack([images[i] for i in range(len(images))])
    labels = load_labels(dataset, "train", root=data_root, seed=seed)
    return torch.from_numpy(stacked).to(device), torch.from_numpy(labels).to(device)


def run_audit(document: Mapping, *, checkpoint: str, log: str, out: str, memory_log: str | None = None) -> Path:
    """Run the audit a document describes on ``checkpoint``'s model: ``inputs`` (:data:`INPUT_KEYS`), ``alpha``
    (PREDICT's level: the log's), ``precision``, ``sigma`` or ``algorithm1`` (:func:`deployed_sigma`), the
    ``threads`` its σ searches sum on, and ``audit`` (:class:`~ddrs.core.audit_settings.AuditSettings`)."""
    from ddrs.jobs.runner import load_test_inputs

    missing = [key for key in ("inputs", "alpha") if key not in document]
    inputs = dict(document.get("inputs", {}))
    if missing or sorted(inputs) != sorted(INPUT_KEYS):
        raise ValueError(f"an audit document needs alpha and inputs of keys {list(INPUT_KEYS)}; got {sorted(document)}")
    settings = AuditSettings(**document.get("audit", {}))
    if "threads" in document:
        torch.set_num_threads(document["threads"])
    loaded = load_test_inputs(checkpoint, **inputs, skip=1, max=None)
    for parameter in loaded.model.parameters():
        parameter.requires_grad_(False)
    sigma = deployed_sigma(document, loaded.num_classes)
    images, labels = training_inputs(inputs["dataset"], inputs["data_root"], int(inputs["seed"]), loaded.device)
    auditor = Auditor(
        loaded.model.eval(), sigma, settings, alpha=float(document["alpha"]),
        precision=document.get("precision", "fp32"), seed=int(inputs["seed"]), train_images=images, train_labels=labels,
    )  # fmt: skip
    return audit_log(
        auditor, loaded.dataset, log, out, memory_log=memory_log, provenance=loaded.provenance, device=loaded.device
    )
