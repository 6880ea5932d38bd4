"""Device and precision selection: the GPU code paths' logic, exercised on the CPU."""

import pytest
import torch
from torch import nn

from ddrs.core.device import BaseClassifier, autocast, make_generator, select_device
from ddrs.core.settings import CertifySettings, DeviceSettings
from ddrs.core.smoothing import certify_batch


def test_auto_picks_cuda_only_when_present():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert select_device("auto").type == expected
    assert select_device("cpu") == torch.device("cpu")


def test_an_unknown_device_is_a_clear_error(tmp_path, capsys):
    from ddrs.cli import main

    with pytest.raises(ValueError, match=r"unknown device 'gpu'; choose auto, cpu, cuda or cuda:<index>"):
        select_device("gpu")
    flags = ["--dataset", "digits", "--arch", "mlp", "--method", "cohen", "--sigma", "0.25", "--device", "gpu"]
    assert main(["train", *flags, "--out", str(tmp_path / "never.pt")]) == 2
    assert "ddrs train: error: unknown device 'gpu'" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_asking_for_cuda_without_it_is_a_clear_error():
    with pytest.raises(ValueError, match="device 'cuda:1' requested but CUDA is not available"):
        select_device("cuda:1")


def test_bf16_autocast_runs_the_base_classifier_in_bf16():
    layer = nn.Linear(4, 2)
    with autocast(torch.device("cpu"), "bf16"):
        assert layer(torch.ones(1, 4)).dtype == torch.bfloat16
    with autocast(torch.device("cpu"), "fp32"):
        assert layer(torch.ones(1, 4)).dtype == torch.float32


def test_unknown_precision_names_the_choices():
    with pytest.raises(ValueError, match="unknown precision 'fp8'.*bf16.*fp16.*fp32"):
        autocast(torch.device("cpu"), "fp8")


def test_generators_are_reproducible():
    first = torch.randn(3, generator=make_generator(7, torch.device("cpu")))
    assert torch.equal(first, torch.randn(3, generator=make_generator(7, torch.device("cpu"))))


def test_a_bf16_base_classifier_certifies_like_fp32_far_from_the_boundary():
    """A reduced-precision base classifier is a fixed function too: same predictions where the margin is wide."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(2, 2))
    with torch.no_grad():
        model[1].weight.copy_(torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))
        model[1].bias.zero_()
    x = torch.tensor([[3.0, 0.0], [-3.0, 0.0]])
    on_cpu = BaseClassifier(model, 2, torch.device("cpu"), DeviceSettings(batch_size=500, memory_format="contiguous"))
    results = {
        precision: certify_batch(
            on_cpu, x, 0.5, CertifySettings(n0=50, n=2000, alpha=0.001, precision=precision),
            generator=make_generator(0, torch.device("cpu")),
        )
        for precision in ("fp32", "bf16")
    }  # fmt: skip
    assert results["fp32"].predict.tolist() == results["bf16"].predict.tolist() == [0, 1]
    assert torch.allclose(results["fp32"].radius, results["bf16"].radius, atol=0.05)


# --- one GPU per job: the slot-picking logic, with a fake GPU count ---

_CLAIM_AND_HOLD = """
import sys, time
from pathlib import Path
from ddrs.core.gpu_slots import claim_gpu
index = claim_gpu(int(sys.argv[2]), Path(sys.argv[1]), poll_seconds=0.05)
print(index, flush=True)
while not (Path(sys.argv[1]) / "stop").exists():
    time.sleep(0.05)
"""


def _claimers(tmp_path, count, processes):
    import subprocess
    import sys

    return [
        subprocess.Popen(
            [sys.executable, "-c", _CLAIM_AND_HOLD, str(tmp_path), str(count)],
            stdout=subprocess.PIPE, text=True,
        )
        for _ in range(processes)
    ]  # fmt: skip


def test_concurrent_jobs_claim_distinct_gpus_and_a_surplus_job_waits(tmp_path):
    count = 3
    first = _claimers(tmp_path, count, count)
    slots = sorted(int(p.stdout.readline()) for p in first)
    assert slots == [0, 1, 2]
    late = _claimers(tmp_path, count, 1)[0]
    import time

    time.sleep(0.5)
    assert late.poll() is None  # every GPU is held: the fourth job waits instead of sharing one
    (tmp_path / "stop").touch()
    for p in first:
        p.wait(timeout=20)
    assert int(late.stdout.readline()) in range(count)  # it takes a GPU once one is freed
    late.wait(timeout=20)


def test_a_process_keeps_its_gpu_and_frees_it_on_release(tmp_path):
    from ddrs.core.gpu_slots import claim_gpu, release_all

    try:
        assert claim_gpu(2, tmp_path) == 0
        assert claim_gpu(2, tmp_path) == 0  # the same process asks again: the same GPU
    finally:
        release_all()
    assert claim_gpu(2, tmp_path) == 0
    release_all()


def test_lock_dir_follows_the_environment(tmp_path, monkeypatch):
    from ddrs.core.gpu_slots import LOCK_DIR_ENV, lock_dir

    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "locks"))
    assert lock_dir() == tmp_path / "locks"
    monkeypatch.delenv(LOCK_DIR_ENV)
    assert lock_dir().name.startswith("ddrs-gpu-locks-")


def test_a_gpu_count_below_one_is_refused(tmp_path):
    from ddrs.core.gpu_slots import claim_gpu

    with pytest.raises(ValueError, match="GPU count must be >= 1, got 0"):
        claim_gpu(0, tmp_path)


def test_auto_on_a_multi_gpu_machine_claims_a_gpu_and_makes_it_current(tmp_path, monkeypatch):
    from ddrs.core import gpu_slots

    current = []
    monkeypatch.setenv(gpu_slots.LOCK_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setattr(torch.cuda, "set_device", current.append)
    held = open(tmp_path / "gpu0.lock", "a+")  # another job holds GPU 0
    import fcntl

    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        assert select_device("auto") == torch.device("cuda", 1)
        assert select_device("cuda") == torch.device("cuda", 1)  # asked again: the same GPU
        assert select_device("cuda:3") == torch.device("cuda", 3)  # an explicit index is kept
        assert current == [1, 1]
    finally:
        gpu_slots.release_all()
        held.close()
