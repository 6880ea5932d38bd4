"""benchmarks/training_loader_cost.py runs on the CPU in its quick mode and writes every figure."""

import pytest
import torch
import torch.multiprocessing as mp
from benchmark_helpers import BENCHMARKS, quick_cpu_record

from ddrs.data import TensorImages
from ddrs.training import TrainConfig

FEEDS = (
    "loader",
    "loader_file_system",
    "training_thread_pin",
    "training_thread_pin_file_system",
    "preloaded",
    "device_feed",
    "device_feed_augmented",
)


@pytest.mark.bench
def test_quick_cpu_run_writes_every_figure(tmp_path):
    record = quick_cpu_record("training_loader_cost.py", tmp_path / "figures.json")
    figures = record["figures"]
    assert record["benchmark"] == "training_loader_cost" and figures["device"] == "cpu" and figures["quick"]
    assert (figures["precision"], figures["memory_format"], figures["rounds"]) == ("bf16", "channels_last", 1)
    assert figures["plain_on_device_img_per_s"] > 0
    for name in FEEDS:
        values = figures[name]
        assert values["img_per_s"] > 0, name
        # one round: its ratio is the two loops' img/s ratio, and the lowest and highest
        assert values["ratio"] == pytest.approx(values["img_per_s"] / figures["plain_on_device_img_per_s"]), name
        assert values["ratio_min"] == values["ratio"] == values["ratio_max"], name


def test_a_started_loader_restores_the_processs_sharing_strategy(monkeypatch):
    """The file-name strategy is set only while a loader's workers start (they keep it)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import training_loader_cost

    config = TrainConfig(
        dataset="cifar10", arch="resnet18", method="cohen", sigma=0.25, batch_size=2, device="cpu", num_workers=1
    )
    before = mp.get_sharing_strategy()
    mp.set_sharing_strategy("file_descriptor")
    try:
        images = TensorImages(torch.rand(4, 3, 32, 32), [0, 1, 2, 3])
        loader = training_loader_cost.started_loader(images, config, "file_system")
        assert mp.get_sharing_strategy() == "file_descriptor"
        assert [len(y) for _, y, _ in loader] == [2, 2]
    finally:
        mp.set_sharing_strategy(before)
