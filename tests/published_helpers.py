"""Small published-log worlds the tests build: Cohen-format logs, a registry CSV naming them, and a git
repository holding them (the mirror a published config reads offline). No network, no fetched log."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm

from ddrs.published.families import COLUMNS as FAMILY_COLUMNS
from ddrs.published.log_registry import COLUMNS

HEADER = ("idx", "label", "predict", "radius", "correct", "time")
REPOSITORY = "someone/smoothing"


def log_text(correct: np.ndarray, radius: np.ndarray, *, labels: np.ndarray | None = None, idx=None) -> str:
    """A Cohen-format log: ``correct`` (bool) and ``radius`` per input; a wrong row predicts another
    class with its radius, an abstention (radius ≤ 0 and wrong) predicts −1 with radius 0."""
    n = len(correct)
    idx = np.arange(n) if idx is None else np.asarray(idx)
    labels = idx % 10 if labels is None else np.asarray(labels)
    lines = ["\t".join(HEADER)]
    for i, label, ok, r in zip(idx, labels, correct, radius, strict=True):
        abstain = not ok and r <= 0
        predict = label if ok else (-1 if abstain else (label + 1) % 10)
        shown = 0.0 if abstain else max(float(r), 0.0)
        lines.append(f"{i}\t{label}\t{predict}\t{shown:.3}\t{int(bool(ok))}\t0:00:01.250000")
    return "\n".join(lines) + "\n"


def scaled_radii(text: str, factor: float) -> str:
    """The Cohen-format log ``text`` with every radius multiplied by ``factor``."""
    lines = text.split("\n")
    rows = [line.split("\t") for line in lines[1:-1]]
    scaled = ("\t".join([*row[:3], f"{float(row[3]) * factor:.6g}", *row[4:]]) for row in rows)
    return "\n".join([lines[0], *scaled]) + "\n"


def gaussian_like(n: int, sigma: float, accuracy: float, scale: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per input: correct with probability ``accuracy``, radius σ·Φ⁻¹(p) with p drawn so radii spread to ``scale``·σ."""
    rng = np.random.default_rng(seed)
    correct = rng.random(n) < accuracy
    p = norm.cdf(rng.uniform(0.05, scale, n))
    return correct, np.where(correct, sigma * norm.ppf(p), 0.0)


def registry_row(path: str, text: str, **fields) -> dict:
    """A registry row (:data:`ddrs.published.log_registry.COLUMNS`) of a log with content ``text``."""
    data = text.encode()
    row = dict.fromkeys(COLUMNS, "")
    row.update(
        repository=REPOSITORY,
        commit="0" * 40,
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        rows=text.count("\n") - 1,
        dataset="cifar10",
        sigma=0.5,
        arch="resnet110",
        method_authors="gaussian",
        method="cohen",
        noise=0.5,
        n=100000,
        n0=100,
        alpha=0.001,
        skip=1,
        paper="someone2024",
        licence="MIT",
        split="test",
    )
    row.update(fields)
    return row


def write_registry(path: Path, rows: list[dict]) -> Path:
    pd.DataFrame(rows, columns=list(COLUMNS)).to_csv(path, index=False)
    return path


def write_families(
    path: Path, rows: list[dict], families: dict[str, str], extra_data: dict[str, str] | None = None
) -> Path:
    """A families table (:mod:`ddrs.published.families`) of the registry ``rows``' methods: method_authors →
    family, and → extra training data where some."""
    extra_data = extra_data or {}
    keys = dict.fromkeys((row["repository"], row["method_authors"]) for row in rows)
    table = [[repository, method, families[method], extra_data.get(method, "")] for repository, method in keys]
    pd.DataFrame(table, columns=list(FAMILY_COLUMNS)).to_csv(path, index=False)
    return path


def git_repository(directory: Path, files: dict[str, str]) -> str:
    """A git repository at ``directory`` committing ``files`` (path → text); returns its commit."""
    directory.mkdir(parents=True, exist_ok=True)
    for relative, text in files.items():
        target = directory / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def git(*args: str) -> str:
        environment = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
        environment |= {"GIT_COMMITTER_EMAIL": "t@t", "HOME": str(directory), "PATH": "/usr/bin:/bin"}
        result = subprocess.run(["git", *args], cwd=directory, env=environment, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "logs")
    return git("rev-parse", "HEAD")


def order_label_table(dataset: str, orders: dict[str, tuple[np.ndarray, np.ndarray]]) -> pd.DataFrame:
    """A label-fingerprint table (:func:`ddrs.published.input_orders.read_order_labels`) of ``dataset``'s
    ``orders``: order → (idx, label at each)."""
    frames = [
        pd.DataFrame({"dataset": dataset, "order": order, "idx": idx, "label": labels})
        for order, (idx, labels) in orders.items()
    ]
    return pd.concat(frames, ignore_index=True).astype({"idx": np.int64, "label": np.int64})
