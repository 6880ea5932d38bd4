"""The resumable certification loop."""

import json
from dataclasses import fields

import pandas as pd
import pytest
import torch
from killed_job import FailsAfter
from torch import nn

from ddrs.core.device import BaseClassifier, prepare_certification
from ddrs.core.seeds import KEY_SCHEME
from ddrs.core.settings import CertifySettings, DeviceSettings, SequentialSettings
from ddrs.jobs.certification import LogFile, LogInputs, certify_dataset
from ddrs.logs.certification_log import COHEN_COLUMNS, partial_path, read_log

NUM_INPUTS = 11
#: the devices whose rows must not depend on batching or interruption (CUDA draws Philox streams)
DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


def tiny_model() -> nn.Module:
    """In float64, as :func:`tiny_dataset`: logs certified in other batchings are compared exactly, and
    float32 rounding that differs with the batch could tip a draw whose top two logits nearly tie."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 3)).double()
    generator = torch.Generator().manual_seed(0)
    torch.nn.init.normal_(model[1].weight, std=3.0, generator=generator)
    torch.nn.init.normal_(model[1].bias, generator=generator)
    return model.eval()


def tiny_dataset() -> list[tuple[torch.Tensor, int]]:
    images = torch.rand(NUM_INPUTS, 1, 4, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    return [(image, i % 3) for i, image in enumerate(images)]


SETTINGS = dict(noise="gaussian", n0=20, n=150, alpha=0.01, seed=3)
#: the device settings of every run, unless a test changes them
SPEED = dict(batch_size=64)


def certify(model, out, indices=range(NUM_INPUTS), scales=0.5, extra_columns=None, device="cpu", **changes):
    speed = {**SPEED, **{f.name: changes.pop(f.name) for f in fields(DeviceSettings) if f.name in changes}}
    settings = CertifySettings(**{**SETTINGS, **changes})
    loaded = BaseClassifier(model.to(device), 3, torch.device(device), DeviceSettings(**speed))
    classifier = prepare_certification(loaded, settings, sample_shape=(1, 4, 4))
    inputs = LogInputs(tiny_dataset(), list(indices), scales)
    return certify_dataset(classifier, inputs, settings, LogFile(out, extra_columns=extra_columns or {}))


def rows(path) -> pd.DataFrame:
    """A log without its timing column, which differs between runs."""
    return read_log(path).drop(columns="time")


def test_log_round_trips_through_read_log(tmp_path):
    out = certify(tiny_model(), tmp_path / "log.tsv", indices=[9, 0, 4, 2], extra_columns={"k": 100})
    log = read_log(out)
    assert list(log.columns) == [*COHEN_COLUMNS, "scale", "p_a_lower", "noise", "precision", "k"]
    assert log["idx"].tolist() == [0, 2, 4, 9]
    assert log["label"].tolist() == [0, 2, 1, 0]
    assert (log["correct"] == (log["predict"] == log["label"])).all()
    assert ((log["predict"] == -1) == (log["radius"] == 0)).all()
    assert (log["time"] > 0).all()
    assert set(log["noise"]) == {"gaussian"} and set(log["precision"]) == {"fp32"} and set(log["k"]) == {100}
    assert not partial_path(out).exists()


@pytest.mark.parametrize("device", DEVICES)
def test_rows_do_not_depend_on_how_inputs_are_batched(tmp_path, device):
    one = certify(tiny_model(), tmp_path / "one.tsv", inputs_per_call=1, device=device)
    many = certify(tiny_model(), tmp_path / "many.tsv", inputs_per_call=4, device=device)
    pd.testing.assert_frame_equal(rows(one), rows(many))


@pytest.mark.parametrize("device", DEVICES)
def test_resume_after_a_crash_equals_an_uninterrupted_run(tmp_path, device):
    reference = certify(tiny_model(), tmp_path / "reference.tsv", device=device)
    out = tmp_path / "log.tsv"
    with pytest.raises(RuntimeError, match="simulated crash"):
        certify(FailsAfter(tiny_model(), calls=20), out, inputs_per_call=2, device=device)
    assert not out.exists()
    written = read_log(partial_path(out))
    assert 0 < len(written) < NUM_INPUTS
    resumed = certify(tiny_model(), out, inputs_per_call=3, device=device)
    pd.testing.assert_frame_equal(rows(resumed), rows(reference))
    # the resumed run kept the rows of the crashed one, time included
    pd.testing.assert_frame_equal(read_log(resumed).iloc[: len(written)], written)


def test_resume_from_a_torn_last_row(tmp_path):
    reference = certify(tiny_model(), tmp_path / "reference.tsv")
    out = tmp_path / "log.tsv"
    with pytest.raises(RuntimeError, match="simulated crash"):
        certify(FailsAfter(tiny_model(), calls=20), out, inputs_per_call=2)
    partial = partial_path(out)
    partial.write_text(partial.read_text()[:-15])  # killed in the middle of writing a row
    resumed = certify(tiny_model(), out)
    pd.testing.assert_frame_equal(rows(resumed), rows(reference))


def test_a_partial_log_of_other_settings_is_not_resumed(tmp_path):
    out = tmp_path / "log.tsv"
    with pytest.raises(RuntimeError, match="simulated crash"):
        certify(FailsAfter(tiny_model(), calls=20), out, inputs_per_call=2)
    with pytest.warns(UserWarning, match="other settings"):
        changed = certify(tiny_model(), out, n=300)
    pd.testing.assert_frame_equal(rows(changed), rows(certify(tiny_model(), tmp_path / "reference.tsv", n=300)))


def test_a_rerun_with_another_skip_publishes_only_its_own_inputs(tmp_path):
    """Rows an interrupted --skip 1 run wrote are kept only where a --skip 5 rerun wants them."""
    out = tmp_path / "log.tsv"
    with pytest.raises(RuntimeError, match="simulated crash"):
        certify(FailsAfter(tiny_model(), calls=20), out, inputs_per_call=2)
    with pytest.warns(UserWarning, match="dropping .* rows of inputs this run does not certify"):
        skipped = certify(tiny_model(), out, indices=[0, 5, 10])
    reference = certify(tiny_model(), tmp_path / "reference.tsv", indices=[0, 5, 10])
    pd.testing.assert_frame_equal(rows(skipped), rows(reference))


def test_per_input_scales_are_used_and_logged(tmp_path):
    scales = {i: 0.1 * (i + 1) for i in range(NUM_INPUTS)}
    log = read_log(certify(tiny_model(), tmp_path / "log.tsv", scales=scales))
    assert log["scale"].tolist() == pytest.approx([scales[i] for i in range(NUM_INPUTS)])
    fixed = read_log(certify(tiny_model(), tmp_path / "fixed.tsv", scales=0.1 * 3))
    # idx 2 has the same scale in both runs and the same seed, so the same row
    assert (
        fixed.loc[2, ["predict", "radius", "p_a_lower"]].tolist()
        == log.loc[2, ["predict", "radius", "p_a_lower"]].tolist()
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (dict(n0=0), "n0 must be positive"),
        (dict(alpha=1.5), r"alpha must lie in \(0, 1\)"),
        (dict(noise="cauchy"), "unknown noise 'cauchy'"),
        (dict(scales={0: 0.5}), "no sigma for test input idx 1"),
        (dict(scales=-1.0), "sigma must be positive, got -1.0"),
    ],
)
def test_bad_arguments_fail_before_any_file_is_written(tmp_path, changes, message):
    out = tmp_path / "log.tsv"
    with pytest.raises(ValueError, match=message):
        certify(tiny_model(), out, **changes)
    assert not out.exists() and not partial_path(out).exists()


def test_a_partial_log_drawn_under_the_old_seed_keys_starts_over(tmp_path):
    """Rows drawn before derived_seed named its purpose first (no ``stream_keys`` recorded) are not
    mixed with rows of the current streams."""
    out = tmp_path / "log.tsv"
    with pytest.raises(RuntimeError, match="simulated crash"):
        certify(FailsAfter(tiny_model(), calls=20), out, inputs_per_call=2)
    settings_file = partial_path(out).with_name(partial_path(out).name + ".json")
    recorded = json.loads(settings_file.read_text())
    assert recorded["stream_keys"] == KEY_SCHEME and recorded["streams"] == "generator"
    del recorded["stream_keys"]
    settings_file.write_text(json.dumps(recorded, sort_keys=True))
    with pytest.warns(UserWarning, match="other settings"):
        again = certify(tiny_model(), out)
    pd.testing.assert_frame_equal(rows(again), rows(certify(tiny_model(), tmp_path / "reference.tsv")))


SEQUENTIAL = dict(mode="sequential", sequential=SequentialSettings(radii=(0.25, 0.5), first_look=8))


@pytest.mark.parametrize("noise", ["gaussian", "uniform"])
def test_a_sequential_log_keeps_cohens_columns_and_adds_the_draws(tmp_path, noise):
    scales = {i: 0.3 + 0.05 * i for i in range(NUM_INPUTS)}  # data-dependent: one scale per input
    log = read_log(certify(tiny_model(), tmp_path / "log.tsv", scales=scales, noise=noise, **SEQUENTIAL))
    assert list(log.columns) == [*COHEN_COLUMNS, "scale", "p_a_lower", "noise", "precision", "draws", "decided"]
    assert log["idx"].tolist() == list(range(NUM_INPUTS))
    assert ((log["draws"] >= 20 + 8) & (log["draws"] <= 20 + 150)).all()
    assert log["scale"].tolist() == [scales[i] for i in range(NUM_INPUTS)]
    certified = log["predict"] >= 0
    assert (log.loc[certified, "p_a_lower"] >= 0.5).all() and (log.loc[~certified, "radius"] == 0).all()


def test_a_sequential_log_resumes_to_the_rows_of_an_uninterrupted_run(tmp_path):
    reference = certify(tiny_model(), tmp_path / "reference.tsv", **SEQUENTIAL)
    out = tmp_path / "log.tsv"
    with pytest.raises(RuntimeError, match="simulated crash"):
        certify(FailsAfter(tiny_model(), calls=40), out, **SEQUENTIAL)
    assert 0 < len(read_log(partial_path(out))) < NUM_INPUTS
    resumed = certify(tiny_model(), out, batch_size=17, **SEQUENTIAL)
    pd.testing.assert_frame_equal(rows(resumed), rows(reference))


def test_the_fixed_mode_keeps_its_resume_settings(tmp_path):
    """Sequential fields are not recorded for fixed-n logs, so their partials resume as before."""
    certify(tiny_model(), tmp_path / "log.tsv")
    assert "mode" not in CertifySettings(**SETTINGS).resume_settings()
    assert CertifySettings(**SETTINGS, **SEQUENTIAL).resume_settings()["sequential"]["radii"] == (0.0, 0.25, 0.5)


def test_certify_dataset_takes_device_settings_resolved_at_the_jobs_entry(tmp_path):
    """The batch and memory format are resolved once per job (prepare_certification), not per log."""
    settings = CertifySettings(**SETTINGS)
    with pytest.raises(ValueError, match="is not resolved: see ddrs.core.device.prepare_certification"):
        unresolved = BaseClassifier(nn.Flatten(), 3, torch.device("cpu"), DeviceSettings(batch_size=None))
        certify_dataset(unresolved, LogInputs(tiny_dataset(), [0], 0.5), settings, LogFile(tmp_path / "log.tsv"))
    assert not (tmp_path / "log.tsv").exists() and not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("indices", "extra_columns", "message"),
    [
        ([0, 2, 0], None, "indices contain duplicates"),
        ([0, 1], {"radius": 1, "k": 3}, r"extra_columns \['radius'\] would overwrite standard log columns"),
    ],
)
def test_certify_dataset_refuses_duplicate_inputs_and_columns_over_the_logs_own(
    tmp_path, indices, extra_columns, message
):
    with pytest.raises(ValueError, match=message):
        certify(tiny_model(), tmp_path / "log.tsv", indices=indices, extra_columns=extra_columns)
    assert not list(tmp_path.iterdir())
