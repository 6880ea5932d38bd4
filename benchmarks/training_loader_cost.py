"""Where the trainer's time beyond a plain on-device loop goes (issue 18's training target).

ResNet-18 Gaussian augmentation epochs (one CIFAR-10 epoch of 196 batches of 256; bf16 and
channels_last by default, where the eager step is bound by kernel launches, so host work shows up
one for one) of ``Trainer.train_epoch`` fed seven ways, against the plain loop over batches already
on the device that ``gpu_throughput.py`` also times (``_train_loops.py``). All eight take turns for
five rounds after a warm-up:

  loader                       the trainer's DataLoader as a run builds it: persistent workers,
                               batches pinned by the DataLoader's pin thread, storages passed
                               between processes by file descriptor (torch's default)
  loader_file_system           the same, storages passed by file name (``torch.multiprocessing``'s
                               ``file_system`` sharing strategy, set while the workers start)
  training_thread_pin          the DataLoader without its pin thread, each batch pinned in the
                               training thread before its copy
  training_thread_pin_file_system   both
  preloaded                    the same batches loaded and pinned beforehand, no DataLoader: the
                               trainer's own host work per step
  device_feed                  the device feed (``feed: device``, the default for CIFAR-10): the
                               images held on the device, each epoch gathered in its order there,
                               batches sliced from it
  device_feed_augmented        the same with CIFAR-10's random crop and flip, drawn on the device
                               once per epoch (what a CIFAR-10 run does)

Each: its median img/s, and the median, lowest and highest of the per-round ratios to the plain
loop (the target is a ratio of 0.85). Without CUDA, or with ``--quick``, the sizes are tiny and
nothing is pinned, so CI exercises every path; those figures say nothing about a GPU.
Run:  python benchmarks/training_loader_cost.py [--quick] [--precision fp32 --memory-format auto] [--json PATH]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
from collections.abc import Iterable, Iterator

import torch
import torch.multiprocessing as mp
from _measure import interleaved_seconds, paired_ratios
from _report import add_json_option, write_report
from _train_loops import CIFAR10_EPOCH_STEPS, cifar_like, plain_epoch, resnet18_config, trainer_epoch
from torch.utils.data import DataLoader

from ddrs.core.device import select_device
from ddrs.core.settings import MEMORY_FORMATS, PRECISIONS
from ddrs.data import TensorImages
from ddrs.training import DeviceFeed, TrainConfig, training_loader


@dataclasses.dataclass
class Batches:
    """What the trainer iterates instead of its DataLoader: ``source``'s batches, pinned on the way
    if ``pin``; ``sampler`` takes the trainer's ``set_epoch``."""

    source: Iterable
    sampler: object
    pin: bool

    def __iter__(self) -> Iterator[tuple[torch.Tensor, ...]]:
        for batch in self.source:
            yield tuple(tensor.pin_memory() for tensor in batch) if self.pin else batch


def started_loader(dataset, config: TrainConfig, strategy: str) -> DataLoader:
    """The trainer's DataLoader, its persistent workers started under the sharing ``strategy``
    (a worker keeps the strategy of the moment it was forked); the process's is restored."""
    previous = mp.get_sharing_strategy()
    mp.set_sharing_strategy(strategy)
    try:
        loader = training_loader(dataset, config, select_device(config.device))
        loader.sampler.set_epoch(0)
        next(iter(loader))
    finally:
        mp.set_sharing_strategy(previous)
    return loader


def feeds(config: TrainConfig, images, labels) -> dict[str, Iterable]:
    """The seven ways of feeding the trainer, by figure name."""
    device = select_device(config.device)
    dataset, cuda = TensorImages(images, labels), device.type == "cuda"
    unpinned = dataclasses.replace(config, pin_memory=False)
    loader = started_loader(dataset, config, "file_descriptor")
    preloaded = [tuple(tensor.pin_memory() if cuda else tensor for tensor in batch) for batch in loader]
    by_file_name = started_loader(dataset, unpinned, "file_system")
    return {
        "loader": loader,
        "loader_file_system": started_loader(dataset, config, "file_system"),
        "training_thread_pin": Batches(started_loader(dataset, unpinned, "file_descriptor"), loader.sampler, cuda),
        "training_thread_pin_file_system": Batches(by_file_name, by_file_name.sampler, cuda),
        "preloaded": Batches(preloaded, loader.sampler, pin=False),
        "device_feed": DeviceFeed.for_config(dataset, dataclasses.replace(config, augment=False), device),
        "device_feed_augmented": DeviceFeed.for_config(dataset, dataclasses.replace(config, augment=True), device),
    }


def loader_cost(config: TrainConfig, steps: int, rounds: int) -> dict[str, object]:
    count = config.batch_size * steps
    images, labels = cifar_like(count)
    epochs = {
        name: trainer_epoch(config, images, labels, batches) for name, batches in feeds(config, images, labels).items()
    }
    epochs["plain"] = plain_epoch(config, images, labels)
    seconds = interleaved_seconds(epochs, select_device(config.device), rounds)
    figures: dict[str, object] = {
        "precision": config.precision,
        "memory_format": config.memory_format,
        "num_workers": config.num_workers,
        "steps_per_epoch": steps,
        "rounds": rounds,
        "plain_on_device_img_per_s": count / statistics.median(seconds["plain"]),
    }
    for name, taken in seconds.items():
        if name == "plain":
            continue
        figures[name] = {"img_per_s": count / statistics.median(taken), **paired_ratios(taken, seconds["plain"])}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, …")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (automatic without CUDA)")
    parser.add_argument("--precision", default="bf16", choices=tuple(PRECISIONS))
    parser.add_argument("--memory-format", default="channels_last", choices=MEMORY_FORMATS)
    parser.add_argument("--train-steps", type=int, help=f"batches per epoch (default: {CIFAR10_EPOCH_STEPS}; quick: 2)")
    parser.add_argument("--workers", type=int, help="DataLoader workers (default: 7; quick: 1)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default: 5; quick: 1)")
    add_json_option(parser)
    args = parser.parse_args()
    device = select_device(args.device)
    quick = args.quick or device.type != "cuda"
    workers = args.workers if args.workers is not None else (1 if quick else 7)
    config = resnet18_config(device, 4 if quick else 256, args.precision, args.memory_format, workers)
    steps = args.train_steps or (2 if quick else CIFAR10_EPOCH_STEPS)
    figures = {"device": str(device), "quick": quick, **loader_cost(config, steps, args.rounds or (1 if quick else 5))}
    for name, value in figures.items():
        print(name, value)
    write_report("training_loader_cost", figures, args.json, threads=torch.get_num_threads())


if __name__ == "__main__":
    main()
