"""Gradient norms of easy and hard inputs (Sun et al. 2024, Table 1): the per-input norm against the
closed form of a linear model, the easy/hard summary, and ``ddrs gradient-norms`` end to end."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from ddrs.cli import main
from ddrs.data import TensorImages
from ddrs.methods import get_method
from ddrs.training import cohen_loss
from ddrs.training.gradient_norms import (
    ROW_COLUMNS,
    SUMMARY_COLUMNS,
    LossAt,
    gradient_norm_table,
    per_input_gradient_norms,
    summarize,
)


def _linear() -> tuple[nn.Module, TensorImages]:
    model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3))
    with torch.no_grad():
        model[1].weight.copy_(torch.tensor([[1.0, -1.0, 0.5, 0.0], [0.0, 2.0, -1.0, 0.3], [-0.5, 0.0, 1.0, 1.0]]))
        model[1].bias.copy_(torch.tensor([0.1, 0.0, -0.2]))
    images = torch.tensor([[0.2, 0.9, 0.1, 0.4], [0.8, 0.1, 0.5, 0.0], [0.3, 0.3, 0.9, 0.7]]).view(3, 1, 4)
    return model, TensorImages(images, torch.tensor([1, 0, 1]))


def test_per_input_norm_is_the_cross_entropy_gradient_of_a_linear_model():
    """∇_W CE = (p − e_y) xᵀ and ∇_b CE = p − e_y, so ‖∇‖ = ‖p − e_y‖·√(‖x‖² + 1) (noise negligible)."""
    model, dataset = _linear()
    norms = per_input_gradient_norms(
        model,
        dataset,
        [0, 1, 2],
        1e-9,
        loss=LossAt(cohen_loss, get_method("cohen").make_params(), epoch=0),
        seed=0,
        device=torch.device("cpu"),
    )
    w, b = model[1].weight.detach().double().numpy(), model[1].bias.detach().double().numpy()
    for k, (x, y) in enumerate(dataset):
        x = x.flatten().double().numpy()
        z = w @ x + b
        p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        residual = p - np.eye(3)[y]
        assert norms[k].item() == pytest.approx(np.linalg.norm(residual) * math.sqrt(x @ x + 1), rel=1e-5)


def test_summary_separates_easy_and_hard_inputs():
    p_a = torch.tensor([0.9, 0.2, 0.5, 0.7, 0.0], dtype=torch.float64)
    norms = torch.tensor([1.0, 4.0, 9.0, 3.0, 6.0], dtype=torch.float64)
    summary = summarize(p_a, norms)
    assert summary == {
        "inputs": 5,
        "easy_inputs": 2,
        "hard_inputs": 2,  # p_A = 0.5 is neither
        "easy_grad_norm": 2.0,
        "hard_grad_norm": 5.0,
        "easy_over_hard": 0.4,
    }
    assert math.isnan(summarize(p_a[:1], norms[:1])["easy_over_hard"])  # no hard input


def test_an_input_gets_the_same_values_whatever_else_is_measured(digits_data, digits_checkpoint):
    from ddrs.models import load_checkpoint

    model, _ = load_checkpoint(digits_checkpoint)
    common = dict(
        loss=LossAt(cohen_loss, get_method("cohen").make_params(), epoch=0),
        draws=50,
        noise="gaussian",
        seed=3,
        batch_size=100,
        device=torch.device("cpu"),
    )
    every, _ = gradient_norm_table(model, digits_data["train"], list(range(12)), 0.5, **common)
    some, _ = gradient_norm_table(model, digits_data["train"], [4, 9], 0.5, **common)
    pd.testing.assert_frame_equal(every.iloc[[4, 9]].reset_index(drop=True), some)
    assert every["p_correct"].between(0, 1).all() and (every["grad_norm"] > 0).all()


def test_cli_writes_the_summary_and_the_per_input_table(tmp_path, digits_checkpoint):
    out, per_input = tmp_path / "norms.tsv", tmp_path / "inputs.tsv"
    args = ["gradient-norms", "--checkpoint", str(digits_checkpoint), "--dataset", "digits", "--sigma", "0.5"]
    assert (
        main(
            [*args, "--max", "60", "--draws", "40", "--device", "cpu", "--out", str(out), "--per-input", str(per_input)]
        )
        == 0
    )

    row = pd.read_csv(out, sep="\t")
    assert list(row.columns) == [*ROW_COLUMNS, *SUMMARY_COLUMNS] and len(row) == 1
    row = row.iloc[0]
    assert (row["method"], row["sigma"], row["split"], row["draws"], row["inputs"]) == ("cohen", 0.5, "train", 40, 60)
    inputs = pd.read_csv(per_input, sep="\t")
    assert list(inputs.columns) == ["idx", "label", "p_correct", "grad_norm"] and inputs["idx"].tolist() == list(
        range(60)
    )
    assert ((inputs["p_correct"] * 40).round() == inputs["p_correct"] * 40).all()
    easy, hard = inputs[inputs["p_correct"] > 0.5], inputs[inputs["p_correct"] < 0.5]
    assert 0 < len(easy) and 0 < len(hard)  # the digits model at σ = 0.5 has both
    assert (row["easy_inputs"], row["hard_inputs"]) == (len(easy), len(hard))
    assert row["easy_grad_norm"] == pytest.approx(easy["grad_norm"].mean())
    assert row["easy_over_hard"] == pytest.approx(easy["grad_norm"].mean() / hard["grad_norm"].mean())


def test_a_gradient_norms_job_document_writes_what_the_command_writes(tmp_path, digits_checkpoint):
    """``ddrs job`` runs the workflow's ``gradient_norms`` document (:meth:`JobPlan.gradient_norms`'s keys)
    into the table ``ddrs gradient-norms`` writes from the same settings, byte for byte."""
    by_command, by_job = tmp_path / "command.tsv", tmp_path / "job.tsv"
    inputs = {"dataset": "digits", "data_root": str(tmp_path), "skip": 3, "max": 60, "seed": 0, "device": "cpu"}
    flags = ["--checkpoint", str(digits_checkpoint), "--dataset", "digits", "--sigma", "0.5", "--skip", "3"]
    flags += ["--max", "60", "--device", "cpu", "--data-root", str(tmp_path), "--out", str(by_command)]
    assert main(["gradient-norms", *flags]) == 0
    document = {"kind": "gradient_norms", "inputs": inputs, "sigma": 0.5, "method": "cohen", "precision": "fp32"}
    (tmp_path / "job.json").write_text(json.dumps(document))
    job = ["job", "--config", str(tmp_path / "job.json"), "--checkpoint", str(digits_checkpoint), "--out", str(by_job)]
    assert main(job) == 0
    assert by_job.read_bytes() == by_command.read_bytes()
    assert pd.read_csv(by_job, sep="\t").loc[0, "inputs"] == 20


def test_cli_errors_name_the_problem(tmp_path, digits_checkpoint, capsys):
    args = [
        "gradient-norms",
        "--checkpoint",
        str(digits_checkpoint),
        "--dataset",
        "digits",
        "--out",
        str(tmp_path / "x"),
    ]
    assert main([*args, "--sigma", "0"]) == 2
    assert "--sigma must be > 0" in capsys.readouterr().err
    assert main([*args, "--sigma", "0.5", "--precision", "fp8"]) == 2
    assert "unknown --precision 'fp8'" in capsys.readouterr().err


def test_command_module_imports_without_torch():
    path = Path(__file__).parents[1] / "src" / "ddrs" / "cli" / "gradient_norms.py"
    code = (
        "import sys, importlib.util; sys.modules['torch'] = None; "
        f"spec = importlib.util.spec_from_file_location('gradient_norms', {str(path)!r}); "
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module); "
        "print(module.COMMAND_HELP.split()[0])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "mean"
