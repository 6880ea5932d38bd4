"""Table 1's soundly certified data-dependent row (Cohen-IDRS): the job that certifies a model with
Súkeník et al.'s semi-elastic σ(x), and the row's logs and caption in table1 (its document is tested
in test_job_plan.py, the row and its comparisons in test_table_statistics.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from snakemake.utils import validate
from workflow_helpers import REPO, load_config

from ddrs.core.distance_sigma import DistanceSigmaSettings, mean_knn_distance
from ddrs.core.semi_elastic import semi_elastic_radius
from ddrs.data import load_images
from ddrs.jobs.runner import JobFiles, run_certification
from ddrs.jobs.semi_elastic_log import SIGMA_COLUMN, semi_elastic_certify_log
from ddrs.logs.certification_log import read_log
from ddrs.pipeline import Experiment
from ddrs.pipeline.catalogue import CATALOGUE

SCHEMA = REPO / "config" / "schema" / "config.schema.yaml"
#: a handful of digits test inputs, few draws: the job's contract, not its statistics
INPUTS = {"dataset": "digits", "skip": 60, "max": None, "seed": 0, "device": "cpu"}
CERTIFY = {"n0": 50, "n": 400, "alpha": 0.001, "seed": 0, "noise": "gaussian", "precision": "fp32"}


def document(kind: str, data_root, **more) -> dict:
    return {"kind": kind, "inputs": {**INPUTS, "data_root": str(data_root)}, "sigma": 0.25, "certify": CERTIFY, **more}


def semi_elastic(rate: float, k: int = 5) -> dict:
    return {"semi_elastic": DistanceSigmaSettings(rate=rate, k=k, calibration=50).resume_settings()}


def test_the_job_writes_sigma_x_certifies_at_it_and_shrinks_only_the_radius(digits_checkpoint, tmp_path):
    files = [str(tmp_path / name) for name in ("sigmas.tsv", "certify.tsv", "sound.tsv")]
    run_certification(
        document("semi_elastic_certification", tmp_path, **semi_elastic(0.3)),
        {},
        JobFiles(str(digits_checkpoint), files[1:], sigma_log=files[0]),
    )
    sigmas, certified, sound = (
        pd.read_csv(files[0], sep="\t", float_precision="round_trip"),
        read_log(files[1]),
        read_log(files[2]),
    )
    assert list(sigmas["idx"]) == list(certified["idx"]) == list(range(0, 540, 60))
    # σ(x) = 0.25·exp(0.3(d̄_5(x) − m)) over the training inputs, m the median of 50 of them
    training = np.asarray(load_images("digits", "train", root=tmp_path, seed=0)).reshape(1257, -1)
    distances = mean_knn_distance(np.asarray(load_images("digits", "test", root=tmp_path, seed=0))[::60], training, 5)
    np.testing.assert_allclose(sigmas["knn_distance"], distances, rtol=1e-12)
    assert np.ptp(np.log(sigmas[SIGMA_COLUMN]) - 0.3 * distances) < 1e-12 and np.ptp(sigmas[SIGMA_COLUMN]) > 0
    np.testing.assert_array_equal(certified["scale"], sigmas[SIGMA_COLUMN])
    # the certificate changes the radius and nothing else; Cohen's stays beside it
    assert sound.drop(columns=["radius", "radius_cohen", "semi_elasticity"]).equals(certified.drop(columns="radius"))
    np.testing.assert_array_equal(sound["radius_cohen"], certified["radius"])
    kept = sound["predict"] != -1
    assert kept.sum() >= 7 and (sound["radius"][kept] < sound["radius_cohen"][kept]).all()
    expected = [
        semi_elastic_radius(p, s, 0.3, 64) for p, s in zip(sound["p_a_lower"][kept], sound["scale"][kept], strict=True)
    ]
    np.testing.assert_array_equal(sound["radius"][kept], expected)


def test_at_rate_zero_the_row_is_cohens_log(digits_checkpoint, tmp_path):
    """r = 0: σ(x) = σ₀ for every input, the same CERTIFY draws, and Cohen's radius: the fixed-σ log."""
    files = [str(tmp_path / name) for name in ("sigmas.tsv", "certify.tsv", "sound.tsv", "fixed.tsv")]
    kinds = (
        ("semi_elastic_certification", semi_elastic(0.0), files[1:3], files[0]),
        ("fixed_certification", {}, files[3:], None),
    )
    for kind, more, outs, sigma_log in kinds:
        run_certification(document(kind, tmp_path, **more), {}, JobFiles(str(digits_checkpoint), outs, sigma_log))
    sound, fixed = read_log(files[2]), read_log(files[3])
    columns = ["idx", "label", "predict", "correct", "scale", "p_a_lower"]
    assert sound[columns].equals(fixed[columns])
    # scipy's σΦ⁻¹(p̲) against torch's: equal to a few ulps
    np.testing.assert_allclose(sound["radius"], fixed["radius"], rtol=1e-15, atol=0)


def test_a_log_not_written_at_a_semi_elastic_sigma_is_refused(tmp_path):
    plain = tmp_path / "plain.tsv"
    pd.DataFrame({"idx": [0], "label": [1], "predict": [1], "radius": [0.3], "correct": [1], "time": [0.1]}).to_csv(
        plain, sep="\t", index=False
    )
    with pytest.raises(ValueError, match="no scale and p_a_lower column"):
        semi_elastic_certify_log(plain, tmp_path / "out.tsv", 0.1, 64)


def test_a_document_with_a_sequential_certify_section_is_refused(digits_checkpoint, tmp_path):
    sequential = document("semi_elastic_certification", tmp_path, **semi_elastic(0.1))
    sequential["certify"] = {**CERTIFY, "mode": "sequential", "sequential": {"radii": [0.5]}}
    with pytest.raises(ValueError, match="fixed-n CERTIFY"):
        run_certification(sequential, {}, JobFiles(str(digits_checkpoint), ["a", "b"], sigma_log="s"))


def test_table1_of_the_digits_config_reads_the_row_and_says_what_it_is():
    config = load_config()
    validate(config, str(SCHEMA), set_default=True)
    arguments = CATALOGUE["best_table"].arguments(Experiment(config), {"table": "table1"})
    records = arguments["builder"]["records"]
    rows = {record.name for record in records}
    assert rows == {"Cohen", "Cohen-DS", "Cohen-DS²", "Cohen-IDRS"}
    idrs = [r for r in records if r.name == "Cohen-IDRS"]
    assert [str(r.log) for r in idrs] == [
        f"results/digits/cohen/fs/sigma{s}/semi_elastic.tsv" for s in ("0.12", "0.25", "0.5")
    ]
    assert "Súkeník et al." in arguments["render"]["caption"] and "r = 0.1" in arguments["render"]["caption"]
    config["semi_elastic"]["enabled"] = False
    records = CATALOGUE["best_table"].arguments(Experiment(config), {"table": "table1"})["builder"]["records"]
    assert "Cohen-IDRS" not in {record.name for record in records}
