"""CERTIFY's GPU options — memory format, compilation, automatic batch — checked on the CPU.

On the CPU every default is today's behaviour; asked for explicitly, channels_last and a compiled
base classifier count the same draws into the same classes (they compute the same function). Those
comparisons run in float64: in float32 another kernel's rounding could tip a draw whose top two logits
nearly tie, and which draw does that depends on the CPU.
"""

import json

import pytest
import torch
from torch import nn

from ddrs.core import device as device_module
from ddrs.core.device import (
    BaseClassifier,
    auto_batch_size,
    batch_for_memory,
    make_generator,
    prepare_certification,
    prepare_classifier,
)
from ddrs.core.settings import DEFAULT_CERTIFY_BATCH, CertifySettings, DeviceSettings, resolve_memory_format
from ddrs.core.smoothing import certify_batch, sample_counts
from ddrs.jobs.certification import LogFile, LogInputs, certify_dataset
from ddrs.jobs.runner import LoadedTestSet, certify_logs
from ddrs.logs.certification_log import kept_partials, partial_path, read_log

CPU = torch.device("cpu")


def conv_model(dtype=torch.float32) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, stride=2), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4),
    ).to(dtype).eval()  # fmt: skip


def images(count=3, dtype=torch.float32):
    return torch.rand(count, 3, 8, 8, generator=torch.Generator().manual_seed(1), dtype=dtype)


def counts(model, x, **options):
    generators = [make_generator(7 + i, CPU) for i in range(len(x))]
    return sample_counts(model, x, 0.25, 300, "gaussian", 128, generators, **options)


def test_defaults_are_todays_behaviour_on_the_cpu():
    settings = DeviceSettings()
    assert settings.batch_size == DEFAULT_CERTIFY_BATCH == 400
    assert settings.memory_format == "auto" and settings.compile is False
    assert resolve_memory_format("auto", "cpu") == "contiguous"
    assert resolve_memory_format("auto", "cuda") == "channels_last"
    assert auto_batch_size(conv_model(), (3, 8, 8), CPU) == 400  # no memory probe off CUDA
    model = conv_model()
    assert prepare_classifier(model, CPU, memory_format="auto", compile=False) is model
    assert model[0].weight.is_contiguous()  # the CPU default leaves the weights' layout alone


def test_channels_last_counts_the_same_draws_into_the_same_classes_on_the_cpu():
    x = images(dtype=torch.float64)
    reference = counts(conv_model(torch.float64), x)
    model = prepare_classifier(conv_model(torch.float64), CPU, memory_format="channels_last", compile=False)
    assert model[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(counts(model, x, channels_last=True), reference)
    assert reference.sum(dim=1).tolist() == [300] * 3


def test_a_job_compiles_its_model_once_and_reuses_it(monkeypatch):
    compiled = []

    def fake_compile(model):
        compiled.append(model)
        return nn.Sequential(model)

    monkeypatch.setattr(torch, "compile", fake_compile)
    model = conv_model()
    first = prepare_classifier(model, CPU, memory_format="contiguous", compile=True)
    assert prepare_classifier(model, CPU, memory_format="contiguous", compile=True) is first
    assert compiled == [model]


def test_a_compiled_base_classifier_certifies_exactly_like_the_eager_one_on_the_cpu():
    """torch.compile on the CPU (inductor, about half a minute to build): same counts, same certificates."""
    x = images(2, torch.float64)
    settings = CertifySettings(n0=20, n=200, alpha=0.01)
    eager = prepare_certification(
        BaseClassifier(conv_model(torch.float64), 4, CPU, DeviceSettings(batch_size=64)), settings, None
    )
    eager_result = certify_batch(eager, x, 0.25, settings, generator=[make_generator(i, CPU) for i in range(2)])
    compiled = prepare_certification(
        BaseClassifier(conv_model(torch.float64), 4, CPU, DeviceSettings(batch_size=64, compile=True)), settings, None
    )
    try:
        result = certify_batch(compiled, x, 0.25, settings, generator=[make_generator(i, CPU) for i in range(2)])
    except Exception as error:  # noqa: BLE001 - no working compiler toolchain here
        pytest.skip(f"torch.compile does not run on this machine: {error}")
    assert torch.equal(result.predict, eager_result.predict)
    assert torch.allclose(result.p_a_lower, eager_result.p_a_lower)
    assert torch.equal(counts(compiled.model, x), counts(conv_model(torch.float64), x))


def test_batch_for_memory_fills_the_asked_fraction_in_multiples_and_within_the_cap():
    assert batch_for_memory(80 * 2**30, 2**20, fraction=0.5, cap=100_000) == 40_960
    assert batch_for_memory(10_000, 100, fraction=0.5, cap=1000) == 50  # below one multiple: as is
    assert batch_for_memory(10 * 2**30, 1, fraction=0.5, cap=100_000) == 100_000
    assert batch_for_memory(10, 2**20, fraction=0.5, cap=100) == 1
    with pytest.raises(ValueError, match="bytes_per_draw must be positive"):
        batch_for_memory(10, 0, fraction=0.5, cap=10)


def test_an_auto_batch_certifies_like_the_default_on_the_cpu(tmp_path):
    dataset = [(image, i % 4) for i, image in enumerate(images(4))]

    def run(name, **options):
        settings = CertifySettings(n0=20, n=150, alpha=0.01, seed=3)
        with kept_partials():  # the settings stay beside the kept partial log until the block ends
            classifier = prepare_certification(
                BaseClassifier(conv_model(), 4, CPU, DeviceSettings(**options)), settings, sample_shape=(3, 8, 8)
            )
            out = certify_dataset(classifier, LogInputs(dataset, range(4), 0.25), settings, LogFile(tmp_path / name))
            recorded = json.loads(partial_path(out).with_name(partial_path(out).name + ".json").read_text())
        return read_log(out).drop(columns="time"), recorded

    default, default_settings = run("default.tsv")
    auto, _ = run("auto.tsv", batch_size=None)
    assert auto.equals(default)
    # the log's settings record the base classifier that was used
    assert default_settings["precision"] == "fp32"
    assert default_settings["memory_format"] == "contiguous" and default_settings["compile"] is False
    _, asked = run("cl.tsv", memory_format="channels_last")
    assert asked["memory_format"] == "channels_last"


def test_unknown_memory_format_names_the_choices():
    with pytest.raises(ValueError, match="unknown memory format 'nhwc'.*channels_last"):
        DeviceSettings(memory_format="nhwc")


def test_device_settings_are_resolved_once_and_the_layers_below_refuse_unresolved_ones():
    """A job's entry makes the batch and memory format concrete; CERTIFY itself resolves nothing."""
    settings = CertifySettings(n0=5, n=100)
    prepared = prepare_certification(
        BaseClassifier(conv_model(), 4, CPU, DeviceSettings(batch_size=None)), settings, sample_shape=(3, 8, 8)
    )
    resolved = prepared.device_settings
    assert prepared.model is not None and resolved.resolved
    assert (resolved.batch_size, resolved.memory_format) == (DEFAULT_CERTIFY_BATCH, "contiguous")
    assert prepare_certification(prepared, settings, sample_shape=(3, 8, 8)).device_settings == resolved
    unresolved = BaseClassifier(conv_model(), 4, CPU, DeviceSettings())
    with pytest.raises(ValueError, match="not resolved for a device.*prepare_certification"):
        certify_batch(unresolved, images(1), 0.25, CertifySettings(n0=5, n=5), generator=None)


def test_a_job_resolves_its_device_settings_once_for_all_its_logs(tmp_path, monkeypatch):
    """Two logs of one job, automatic batch: one probe, and the logs record the same resolved settings."""
    probes = []

    def probe(*args, **options):
        probes.append(options)
        return 96

    monkeypatch.setattr(device_module, "auto_batch_size", probe)
    dataset = [(image, i % 4) for i, image in enumerate(images(4))]
    inputs = LoadedTestSet(conv_model(), dataset, [0, 1, 2, 3], 4, CPU, {"checkpoint": "test"})
    settings = CertifySettings(n0=20, n=150, alpha=0.01, seed=3)
    jobs = [(f"sigma {sigma}", sigma, tmp_path / f"{sigma}.tsv") for sigma in (0.25, 0.5)]
    certify_logs(settings, DeviceSettings(batch_size=None), jobs, inputs)
    assert probes == [dict(precision="fp32", memory_format="contiguous", cap=150)]
    assert all(len(read_log(out)) == 4 for _, _, out in jobs)


def test_the_probe_is_only_used_on_cuda(monkeypatch):
    monkeypatch.setattr(device_module.torch.cuda, "mem_get_info", lambda *a: pytest.fail("probed off CUDA"))
    assert auto_batch_size(conv_model(), (3, 8, 8), CPU, cap=50) == DEFAULT_CERTIFY_BATCH
