"""The certificate audit (issue 69): its attacks find what an unsound certifier claims, the fixed-σ control stays
within the bound its α allows, the memory answers inside its certified balls, the job resumes to the same bytes,
and the command's errors are one line. On the digits MLP of conftest.py, a few inputs and small n."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from scipy.stats import binom

from ddrs.cli import main
from ddrs.core.attack import OPEN_BALL, line_points, project
from ddrs.core.audit_settings import AuditSettings
from ddrs.core.device import BaseClassifier
from ddrs.core.memory import memory_answer, memory_certify
from ddrs.core.settings import Algorithm1Settings, CertifySettings, DeviceSettings
from ddrs.jobs import audit as audit_job
from ddrs.jobs.audit import Auditor, DataDependentSigma, FixedSigma, audit_log, training_inputs
from ddrs.jobs.certification import LogFile, LogInputs, certify_dataset
from ddrs.jobs.memory_log import memory_certify_log
from ddrs.jobs.sigma_search import sigma_log_dataset
from ddrs.logs.sigma_log import read_sigma_log
from ddrs.pipeline import Experiment
from ddrs.pipeline.audit_plan import AuditPlan
from ddrs.pipeline.job_plan import JobPlan

SIGMA, ALPHA = 0.25, 0.001
#: the inputs of the audited logs (every 3rd test digit) and the audit's sizes
INDICES = list(range(0, 36, 3))
SIZES = AuditSettings(inputs=len(INDICES), steps=6, draws=4, line_points=4, n=500)
#: the chance the control test fails although every certificate is sound
FALSE_FAILURE = 1e-6
ON_CPU = DeviceSettings(batch_size=1000, memory_format="contiguous")


def certify(model, test_set, sigmas, path):
    settings = CertifySettings(n0=100, n=1000, alpha=ALPHA)
    classifier = BaseClassifier(model, 10, torch.device("cpu"), ON_CPU)
    return certify_dataset(classifier, LogInputs(test_set, INDICES, sigmas), settings, LogFile(path))


@pytest.fixture(scope="module")
def train_inputs():
    return training_inputs("digits", "data", 0, torch.device("cpu"))


def auditor(model, sigma, train_inputs, sizes=SIZES) -> Auditor:
    images, labels = train_inputs
    return Auditor(model, sigma, sizes, alpha=ALPHA, precision="fp32", seed=0, train_images=images, train_labels=labels)


@pytest.fixture(scope="module")
def fixed_log(digits_model, digits_data, tmp_path_factory):
    return certify(digits_model, digits_data["test"], SIGMA, tmp_path_factory.mktemp("fixed") / "certify_fixed.tsv")


def violations(audit: pd.DataFrame) -> int:
    return int((audit["pgd_violation"] | audit["line_violation"]).sum())


def test_the_fixed_sigma_control_stays_within_what_its_alpha_allows(digits_model, digits_data, fixed_log, train_inputs):
    """A sound certificate is broken with probability at most 2α (α that CERTIFY's bound failed, α for the
    confirmations): the count over the audited certificates stays at or below the Binomial(N, 2α) quantile
    that exceeding has probability FALSE_FAILURE, so a sound certifier fails this test at most that often."""
    out = audit_log(auditor(digits_model, FixedSigma(SIGMA), train_inputs), digits_data["test"], fixed_log,
                    fixed_log.with_name("audit_fixed.tsv"))  # fmt: skip
    audit = pd.read_csv(out, sep="\t")
    allowed = int(binom.isf(FALSE_FAILURE, len(audit), 2 * ALPHA))
    assert len(audit) == len(INDICES) and violations(audit) <= allowed
    assert (audit[["pgd_distance", "line_distance"]].max(axis=1) < audit["radius"]).all()
    assert (audit["pgd_elasticity"] == 0).all() and (audit["scale_rerun"] == SIGMA).all()


def test_a_planted_unsound_certifier_is_caught(digits_model, digits_data, fixed_log, train_inputs, tmp_path):
    """Radii doubled: the attacks find confirmed violations inside the claimed balls, many more than a sound
    certifier's bound allows."""
    planted = pd.read_csv(fixed_log, sep="\t")
    planted["radius"] *= 2
    planted.to_csv(tmp_path / "planted.tsv", sep="\t", index=False)
    out = audit_log(auditor(digits_model, FixedSigma(SIGMA), train_inputs), digits_data["test"],
                    tmp_path / "planted.tsv", tmp_path / "audit.tsv")  # fmt: skip
    audit = pd.read_csv(out, sep="\t")
    allowed = int(binom.isf(FALSE_FAILURE, len(audit), 2 * ALPHA))
    assert violations(audit) > allowed + 3
    broken = audit[audit["pgd_violation"] == 1]
    assert (broken["pgd_distance"] < broken["radius"]).all() and (broken["pgd_predict"] != broken["predict"]).all()


def test_the_memory_answers_a_query_inside_an_earlier_certified_ball_with_that_balls_class():
    points = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]])
    predict, radius = np.array([0, 1, 2]), np.array([1.0, 1.0, 0.0])
    assert memory_answer(points, predict, radius, [0.5, 0.0], 1, norm=2) == 0  # inside ball 0: its class
    assert memory_answer(points, predict, radius, [2.2, 0.0], 0, norm=2) == 1  # inside ball 1
    assert memory_answer(points, predict, radius, [1.5, 0.0], 7, norm=2) == 7  # in no ball: its own
    assert memory_answer(points, predict, radius, [0.0, 3.0], 1, norm=2) == 2  # on a stored point of radius 0
    assert memory_answer(points, predict, radius, [1.0, 0.0], 1, norm=2) == 1  # the ball is open
    rng = np.random.default_rng(0)  # the same answer as the query run through Algorithm 3 after the memory
    for _ in range(50):
        stored, query = rng.uniform(0, 2, (6, 3)), rng.uniform(0, 2, 3)
        kept = memory_certify(stored, rng.integers(0, 3, 6), rng.uniform(0, 1, 6), 2)
        own = int(rng.integers(0, 3))
        stream = memory_certify(np.vstack([stored, query]), np.append(kept.predict, own), np.append(kept.radius, 0), 2)
        assert memory_answer(stored, kept.predict, kept.radius, query, own, norm=2) == stream.predict[-1]


@pytest.fixture(scope="module")
def data_dependent(digits_model, digits_data, tmp_path_factory):
    """A Cohen-DS log of the digits model (Algorithm 1 to K = 20) and its Algorithm 3 log."""
    folder = tmp_path_factory.mktemp("ds")
    search = Algorithm1Settings(sigma0=SIGMA, steps=(20,), lr=0.002, min_sigma=0.01)
    sigma_log_dataset(digits_model, digits_data["test"], INDICES, folder / "sigma_opt.tsv", search, num_classes=10)
    sigmas = read_sigma_log(folder / "sigma_opt.tsv", k=20)
    log = certify(digits_model, digits_data["test"], sigmas, folder / "certify_K20.tsv")
    memory_certify_log(log, digits_data["test"], folder / "memory_K20.tsv")
    return search, log, folder / "memory_K20.tsv"


def test_the_data_dependent_audit_answers_through_algorithm_1_and_the_memory(
    digits_model, digits_data, data_dependent, train_inputs, tmp_path
):
    """Without memory each query gets Algorithm 1's σ (a rerun at x moves it by Algorithm 1's own noise, but
    where the objective saturates and σ climbs by the same step whatever the draws); with the memory every
    candidate inside a certified ball gets that ball's class, so no memory certificate is ever broken
    (Algorithm 3's stateful guarantee)."""
    search, log, memory = data_dependent
    sizes = AuditSettings(inputs=6, steps=3, draws=4, line_points=3, n=300)
    deployed = auditor(digits_model, DataDependentSigma(search, num_classes=10), train_inputs, sizes)
    audit = pd.read_csv(audit_log(deployed, digits_data["test"], log, tmp_path / "a.tsv", memory_log=memory), sep="\t")
    certified = pd.read_csv(log, sep="\t").set_index("idx")
    assert len(audit) == 6 and (audit["scale"] == certified.loc[audit["idx"], "scale"].to_numpy()).all()
    assert (audit["scale_rerun"] != audit["scale"]).any() and (audit["pgd_elasticity"] > 0).any()
    for attack in ("pgd", "line"):
        inside = audit[f"{attack}_distance"] < audit["memory_radius"]
        assert inside.all() and (audit[f"{attack}_memory"] == audit["memory_predict"]).all()
    assert (audit["memory_violation"] == 0).all()


def test_an_interrupted_audit_resumes_to_the_bytes_of_an_uninterrupted_one(
    digits_model, digits_data, fixed_log, train_inputs, tmp_path, monkeypatch
):
    monkeypatch.setattr(audit_job, "GROUP", 4)
    sizes = AuditSettings(inputs=8, steps=2, draws=2, line_points=2, n=100)
    deployed = auditor(digits_model, FixedSigma(SIGMA), train_inputs, sizes)
    whole = audit_log(deployed, digits_data["test"], fixed_log, tmp_path / "whole.tsv").read_text()
    calls = []
    original = Auditor.group

    def killed_after_one_group(self, rows, x):
        calls.append(len(rows))
        if len(calls) > 1:
            raise KeyboardInterrupt
        return original(self, rows, x)

    monkeypatch.setattr(Auditor, "group", killed_after_one_group)
    with pytest.raises(KeyboardInterrupt):
        audit_log(deployed, digits_data["test"], fixed_log, tmp_path / "resumed.tsv")
    monkeypatch.setattr(Auditor, "group", original)
    resumed = audit_log(deployed, digits_data["test"], fixed_log, tmp_path / "resumed.tsv").read_text()
    drop_time = [line.rsplit("\t", 1)[0] for line in whole.splitlines()]
    assert [line.rsplit("\t", 1)[0] for line in resumed.splitlines()] == drop_time


def test_the_attack_points_stay_in_the_open_ball_and_the_data_domain():
    x = torch.tensor([[0.0, 0.5, 1.0], [0.2, 0.2, 0.2]])
    far = torch.tensor([[3.0, -2.0, 1.0], [0.2, 0.2, 0.21]])
    radius = torch.tensor([0.5, 1.0], dtype=torch.float64)
    projected = project(x, far, radius)
    assert ((projected - x).norm(dim=1).double() <= radius * OPEN_BALL).all()
    assert projected.min() >= 0 and projected.max() <= 1 and torch.equal(projected[1], far[1])
    line = line_points(x[1], torch.tensor([1.0, 1.0, 1.0]), 0.5, 4)
    steps = 0.5 * OPEN_BALL * torch.arange(1, 5, dtype=torch.float64) / 4
    assert torch.allclose((line - x[1]).norm(dim=1).double(), steps)


def test_the_audit_commands_errors_are_one_line(digits_checkpoint, fixed_log, tmp_path, capsys):
    document = {"inputs": {"dataset": "digits", "data_root": "data", "seed": 0, "device": "cpu"}, "alpha": ALPHA,
                "sigma": SIGMA, "audit": {"inputs": 2, "steps": 1, "draws": 1, "line_points": 1, "n": 10}}  # fmt: skip
    (tmp_path / "audit.json").write_text(json.dumps(document))
    (tmp_path / "bad.tsv").write_text("idx\tlabel\n0\t1\n")
    args = ["audit", "--config", str(tmp_path / "audit.json"), "--out", str(tmp_path / "out.tsv")]
    cases = [
        (["--checkpoint", str(tmp_path / "none.pt"), "--log", str(fixed_log)], "none.pt: no such file"),
        (["--checkpoint", str(digits_checkpoint), "--log", str(tmp_path / "bad.tsv")], "missing column"),
    ]
    for flags, message in cases:
        assert main([*args, *flags]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("ddrs audit: error:") and message in err
    (tmp_path / "audit.json").write_text(json.dumps({**document, "algorithm1": {"sigma0": SIGMA}}))
    assert main([*args, "--checkpoint", str(digits_checkpoint), "--log", str(fixed_log)]) == 2
    assert "either sigma" in capsys.readouterr().err


def test_the_plan_audits_table1s_logs_with_the_settings_that_certified_them():
    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "digits.yaml").read_text())
    exp = Experiment(config)
    plan, sigmas = AuditPlan(exp), [0.12, 0.25, 0.5]
    audited = plan.audited("digits")
    rows = [("Cohen", None), ("Cohen-DS", 200), ("Cohen-DS²", 200)]
    assert [(a.record.name, a.k, a.record.sigma0) for a in audited] == [(*row, s) for row in rows for s in sigmas]
    assert (audited[0].log, audited[0].memory_log) == ("results/digits/cohen/fs/sigma0.12/certify_fixed.tsv", None)
    assert audited[0].audit == "results/audit/digits/cohen/fs/sigma0.12/audit_fixed.tsv"
    assert audited[-1].log == "results/digits/cohen/ds/sigma0.5/certify_K200.tsv"
    assert audited[-1].memory_log == "results/digits/cohen/ds/sigma0.5/memory_K200.tsv"
    fixed, data_dependent = plan.document(audited[0].run), plan.document(audited[-1].run, 200)
    assert fixed["sigma"] == 0.12 and "algorithm1" not in fixed and fixed["alpha"] == config["certify"]["alpha"]
    assert fixed["audit"] == {"inputs": 10, "steps": 4, "draws": 4, "line_points": 4, "n": 500}
    certified = JobPlan(exp.grid).data_dependent_certification(audited[-1].run)["algorithm1"]
    assert data_dependent["algorithm1"] == {**certified, "steps": (200,)}
    assert AuditPlan(Experiment({**config, "audit": {"enabled": False}})).datasets() == []
