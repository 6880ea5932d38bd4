"""The job plan (ddrs.pipeline.job_plan): each certification-side job's complete arguments as one
JSON document, which ``ddrs job`` turns into the same settings objects the commands' flags build."""

from __future__ import annotations

import json
import math

import pytest
from snakemake.utils import validate
from workflow_helpers import REPO, load_config

from ddrs.cli import build_parser
from ddrs.cli.certify import check as certify_flags
from ddrs.cli.optimize_sigma import check as optimize_flags
from ddrs.core.distance_sigma import DistanceSigmaSettings
from ddrs.core.settings import (
    Algorithm1Settings,
    CertifySettings,
    DeviceSettings,
    GridSearchSettings,
    SequentialSettings,
    certify_from_parts,
    certify_speed,
)
from ddrs.jobs.runner import sigma_search_settings
from ddrs.pipeline import Experiment, Run
from ddrs.pipeline.job_plan import JobPlan

SCHEMA = REPO / "config" / "schema" / "config.schema.yaml"


def plan(edit=None) -> JobPlan:
    config = load_config()
    if edit is not None:
        edit(config)
    validate(config, str(SCHEMA), set_default=True)
    return JobPlan(Experiment(config).grid)


def through_json(document: dict) -> dict:
    """The document as the job reads it from its standard input."""
    return json.loads(json.dumps(document))


def certify_of(jobs: JobPlan, run: Run, document: dict) -> tuple[CertifySettings, DeviceSettings]:
    """CERTIFY's statistics and device settings as ``ddrs job`` builds them from the document and the plan's speed."""
    return certify_from_parts(through_json(document)["certify"], through_json(jobs.speed(run))["certify"])


def test_fixed_certification_hands_the_training_sigma_and_the_certify_section():
    config = load_config()
    run = Run("digits", "cohen", "fs", 0.25)
    document = through_json(plan().fixed_certification(run))
    assert document["kind"] == "fixed_certification"
    assert document["inputs"] == {
        "dataset": "digits",
        "data_root": "data",
        "skip": config["datasets"]["digits"]["test_skip"],
        "max": None,
        "seed": 0,
        "device": "auto",
    }
    assert document["sigma"] == 0.25
    section = config["certify"]
    expected = CertifySettings(noise="gaussian", n0=section["n0"], n=section["n"], alpha=section["alpha"])
    assert document["certify"] == expected.resume_settings()  # the statistics only: no batch, no sequential rule
    assert certify_of(plan(), run, document) == (expected, DeviceSettings(batch_size=section["batch"]))


def test_uniform_noise_is_handed_its_half_width_under_the_configs_convention():
    document = plan().fixed_certification(Run("digits", "uniform", "fs", 0.5))
    assert document["sigma"] == pytest.approx(0.5 * math.sqrt(3)) and document["certify"]["noise"] == "uniform"
    half_width = plan(lambda c: c["uniform"].update(convention="half_width"))
    assert half_width.fixed_certification(Run("digits", "uniform", "fs", 0.5))["sigma"] == 0.5


def test_an_absent_or_auto_batch_lets_the_device_choose():
    run = Run("digits", "cohen", "fs", 0.25)
    assert plan(lambda c: c["certify"].pop("batch")).speed(run)["certify"]["batch_size"] is None
    assert plan(lambda c: c["certify"].update(batch="auto")).speed(run)["certify"]["batch_size"] is None


def test_a_settings_field_the_config_names_travels_to_the_job_without_the_plan_naming_it():
    """The certify section is read by the settings' field names: a field added to CertifySettings
    (and to the schema) reaches the job as it is."""
    config = load_config()
    config["certify"]["inputs_per_call"] = 7
    config["certify"]["alpha"] = 0.01
    jobs, run = JobPlan(Experiment(config).grid), Run("digits", "cohen", "fs", 0.25)
    assert jobs.speed(run)["certify"]["inputs_per_call"] == 7  # a speed setting: beside the document
    assert jobs.fixed_certification(run)["certify"]["alpha"] == 0.01  # a statistic: in it
    assert certify_of(jobs, run, jobs.fixed_certification(run))[1].inputs_per_call == 7


def test_the_document_holds_what_decides_rows_and_the_speed_what_does_not():
    """What the workflow compares (the document) changes with a statistic and never with a speed
    setting; the speed mapping is the other way round."""
    run = Run("digits", "cohen", "fs", 0.25)
    base = plan()
    faster = plan(lambda c: c["certify"].update(batch=64, memory_format="channels_last", compile=True))
    for kind in ("fixed_certification", "data_dependent_certification", "sequential_certification"):
        assert getattr(faster, kind)(run) == getattr(base, kind)(run)
    assert faster.grid_search_certification(run, 4) == base.grid_search_certification(run, 4)
    assert faster.speed(run) != base.speed(run)
    # what orders a σ search's sums (its batch and threads) is its documents', and no other job's
    for reordered in (plan(lambda c: c["optimize_sigma"].update(batch=8)), plan(lambda c: c.update(threads_per_job=2))):
        assert reordered.data_dependent_certification(run) != base.data_dependent_certification(run)
        assert reordered.grid_search_certification(run, 4) != base.grid_search_certification(run, 4)
        assert reordered.fixed_certification(run) == base.fixed_certification(run)
        assert reordered.speed(run) == base.speed(run)
    stricter = plan(lambda c: c["certify"].update(n=500))
    assert stricter.fixed_certification(run) != base.fixed_certification(run)
    assert stricter.speed(run) == base.speed(run)
    # the sequential stopping rule decides the sequential job only
    sequential = plan(lambda c: c["certify"].update(sequential={"sequence": "union_cp", "checks": "look"}))
    assert sequential.fixed_certification(run) == base.fixed_certification(run)
    assert sequential.sequential_certification(run) != base.sequential_certification(run)


def test_data_dependent_certification_runs_algorithm1_from_the_training_sigma_to_every_k():
    config = load_config()
    run = Run("digits", "macer", "ds", 0.5)
    edited = plan(lambda c: c["optimize_sigma"].update(n_by_method={"macer": 8}))
    document = through_json(edited.data_dependent_certification(run))
    options = config["optimize_sigma"]
    assert document["kind"] == "data_dependent_certification"
    assert sigma_search_settings(document) == Algorithm1Settings(
        sigma0=0.5,
        n=8,
        steps=tuple(options["k"]),
        lr=options["lr"],
        n0=options["n0"],
        min_sigma=options["min_sigma"],
        objective=options["objective"],
    )
    assert "sigma" not in document and certify_of(edited, run, document)[0].n == config["certify"]["n"]


def _flags(command: str, *words: str):
    return build_parser([command]).parse_args([command, "--checkpoint", "m.pt", "--dataset", "digits", *words])


def test_the_document_and_the_flags_are_two_doors_to_one_settings_object():
    """What `ddrs job` builds from a document equals what `ddrs optimize-sigma` and `ddrs certify`
    build from the flags the workflow used to pass."""
    config = load_config()
    opt, certify, grid = config["optimize_sigma"], config["certify"], config["grid_search"]
    run = Run("digits", "smoothadv", "fs", 0.5)
    document = through_json(plan().grid_search_certification(run, "4"))
    shared = ["--n0", str(opt["n0"]), "--batch", str(opt["batch"]), "--objective", opt["objective"]]
    grid_flags = ["--grid-search", "--grid-n", "4", "--grid-budget", str(grid["budget"])]
    grid_flags += ["--grid-min", str(grid["low"]), "--grid-max", str(grid["high"])]
    by_flags = optimize_flags(_flags("optimize-sigma", "--sigma0", "0.5", *shared, *grid_flags, "--out", "s.tsv"))
    speed = through_json(plan().speed(run))
    assert isinstance(by_flags, GridSearchSettings) and sigma_search_settings(document) == by_flags
    # the σ search's batch and threads order its sums: in the document, not beside it
    assert document["search_batch"] == opt["batch"] and document["threads"] == config["threads_per_job"]
    assert set(speed) == {"certify"}
    certify_words = ["--n0", str(certify["n0"]), "--n", str(certify["n"]), "--alpha", str(certify["alpha"])]
    radii = ["--radii", *map(str, config["datasets"]["digits"]["radii"])]
    by_flags = certify_flags(
        _flags("certify", "--sigma", "0.5", *certify_words, "--batch", "2000", *radii, "--out", "c.tsv")
    )
    (statistics, on_device), (by_statistics, by_device) = certify_of(plan(), run, document), by_flags
    assert statistics.resume_settings() == by_statistics.resume_settings()
    assert certify_speed(statistics, on_device) == certify_speed(by_statistics, by_device)
    ds = through_json(plan().data_dependent_certification(run))
    algorithm1 = ["--sigma0", "0.5", "--k", *map(str, opt["k"]), "--n", str(opt["n"]), "--lr", str(opt["lr"])]
    algorithm1 += ["--min-sigma", str(opt["min_sigma"]), *shared, "--out", "s.tsv"]
    assert sigma_search_settings(ds) == optimize_flags(_flags("optimize-sigma", *algorithm1))
    assert sigma_search_settings(plan().fixed_certification(run)) is None


def test_gradient_norms_measure_every_configured_training_input_at_the_training_sigma():
    document = plan(lambda c: c.update(sun2024={"gradient_norm_skip": 4})).gradient_norms(
        Run("digits", "cohen", "fs", 0.25)
    )
    assert document["sigma"] == 0.25 and document["method"] == "cohen" and document["precision"] == "fp32"
    assert document["inputs"]["skip"] == 4 and document["inputs"]["max"] is None and "certify" not in document


def test_the_sequential_job_certifies_the_fixed_sigma_in_looks_over_the_datasets_radius_grid():
    """The comparison's sequential log: the fixed-σ job in sequential mode, its stopping rule the
    config's certify.sequential by field name and the radii of the method's norm; the same settings
    as `ddrs certify --mode sequential` with the same flags. The fixed job stays fixed."""
    config = load_config()
    rule = {"sequence": "union_cp", "checks": "look", "first_look": 16, "futility": 0.01}
    edited = plan(lambda c: c["certify"].update(sequential=dict(rule)))
    run = Run("digits", "cohen", "fs", 0.5)
    document = through_json(edited.sequential_certification(run))
    settings, on_device = certify_of(edited, run, document)
    radii = config["datasets"]["digits"]["radii"]
    assert document["sigma"] == 0.5 and settings.mode == "sequential"
    assert settings.sequential == SequentialSettings(**rule, radii=tuple(radii))
    certify = config["certify"]
    words = ["--n0", str(certify["n0"]), "--n", str(certify["n"]), "--alpha", str(certify["alpha"])]
    words += ["--batch", "2000", "--mode", "sequential", "--sequence", "union_cp", "--checks", "look"]
    words += ["--first-look", "16", "--futility", "0.01"]
    by_flags = certify_flags(_flags("certify", "--sigma", "0.5", *words, "--radii", *map(str, radii), "--out", "c.tsv"))
    assert (settings, on_device) == by_flags
    assert certify_of(edited, run, edited.fixed_certification(run))[0].mode == "fixed"
    uniform_run = Run("digits", "uniform", "fs", 0.5)
    uniform, _ = certify_of(edited, uniform_run, edited.sequential_certification(uniform_run))
    assert uniform.sequential.radii == tuple(sorted({0.0, *config["datasets"]["digits"]["l1_radii"]}))


def test_the_document_hands_the_training_sigma_the_design_and_a_fixed_n_certify_section():
    config = load_config()
    sequential = plan(lambda c: c["certify"].update(mode="sequential"))
    found = through_json(sequential.semi_elastic_certification(Run("digits", "cohen", "fs", 0.5)))
    assert found["kind"] == "semi_elastic_certification" and found["sigma"] == 0.5
    assert DistanceSigmaSettings(**found["semi_elastic"]) == DistanceSigmaSettings(
        rate=config["semi_elastic"]["rate"], k=20, reference=None, calibration=200
    )
    assert found["certify"] == plan().fixed_certification(Run("digits", "cohen", "fs", 0.5))["certify"]
    assert "mode" not in found["certify"]  # fixed n, whatever certify.mode says
