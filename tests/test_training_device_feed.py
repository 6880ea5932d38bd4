"""The device feed: the training split held on the training device, augmented there per epoch with
draws keyed by (seed, epoch, idx) from the distribution of Cohen et al.'s per-image crop and flip."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from fixtures_archives import install_cifar10
from scipy import stats
from torchvision import transforms

import ddrs.training.device_feed as device_feed
from ddrs.data import TensorImages, load_dataset
from ddrs.data.augmentation import CIFAR10, CropFlip
from ddrs.training import TrainConfig, training_loader
from ddrs.training.device_feed import DeviceFeed


def _coordinates(count: int) -> torch.Tensor:
    """``count`` CIFAR-shaped images whose pixel (c, i, j) holds 1 + 32·i + j (c: the image's number),
    so a crop's offsets and flip can be read off its corners."""
    grid = 1 + torch.arange(32.0)[:, None] * 32 + torch.arange(32.0)
    return torch.stack([torch.stack([grid, grid, torch.full((32, 32), float(n))]) for n in range(count)])


def _offsets_and_flips(crops: torch.Tensor, padding: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    """(top, left) padded-image offsets and flips of crops of :func:`_coordinates` images, read from
    the pixel at the crop's centre and its right neighbour (never in the zero border)."""
    centre, right = crops[:, 0, 16, 16].long() - 1, crops[:, 0, 16, 17].long() - 1
    flipped = right < centre
    row, column = centre // 32, centre % 32
    top = row - 16 + padding
    left = torch.where(flipped, column - (31 - 16), column - 16) + padding
    return torch.stack([top, left], dim=1), flipped


def test_crop_flip_is_the_window_of_the_zero_padded_image_flipped_where_drawn():
    images = torch.rand(5, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    uniforms = torch.tensor(
        [[0.01, 0.99, 0.7], [0.5, 0.5, 0.2], [0.2, 0.3, 0.9], [0.999, 0.001, 0.1], [0.45, 0.6, 0.6]]
    )
    padded = F.pad(images, (4, 4, 4, 4))
    for image, crop, (u_top, u_left, u_flip) in zip(padded, CIFAR10.apply(images, uniforms), uniforms, strict=True):
        top, left = int(u_top * 9), int(u_left * 9)
        window = image[:, top : top + 32, left : left + 32]
        assert torch.equal(crop, window.flip(-1) if u_flip < 0.5 else window)


def test_device_augmentation_draws_torchvisions_distribution():
    """Offsets uniform on {0, …, 8} each (torchvision's RandomCrop(32, padding=4) draws
    randint(0, 9)) and a flip with probability 1/2, independently, over 9,000 keyed inputs."""
    count = 9000
    feed = DeviceFeed(
        TensorImages(_coordinates(count), [0] * count), CIFAR10, seed=3, batch_size=512, device=torch.device("cpu")
    )
    offsets, flipped = _offsets_and_flips(feed.augmented(0, torch.arange(count)))
    assert int(offsets.min()) == 0 and int(offsets.max()) == 8
    for column in offsets.T:
        assert stats.chisquare(torch.bincount(column, minlength=9).numpy()).pvalue > 1e-3
    assert stats.binomtest(int(flipped.sum()), count).pvalue > 1e-3
    joint = torch.bincount(offsets[:, 0] * 9 + offsets[:, 1], minlength=81).reshape(9, 9)
    assert stats.chi2_contingency(joint.numpy()).pvalue > 1e-3  # the two offsets independent


def test_an_inputs_augmentation_depends_on_seed_epoch_and_index_alone(monkeypatch):
    images = TensorImages(torch.rand(10, 3, 32, 32, generator=torch.Generator().manual_seed(1)), list(range(10)))

    def feed(seed=0):
        return DeviceFeed(images, CIFAR10, seed=seed, batch_size=4, device=torch.device("cpu"))

    everyone = feed().augmented(2, torch.arange(10))
    monkeypatch.setattr(device_feed, "CHUNK", 3)  # another chunking of the pass
    order = torch.tensor([7, 2, 9, 2, 0])
    assert torch.equal(feed().augmented(2, order), everyone[order])
    assert not torch.equal(feed().augmented(3, torch.arange(10)), everyone)
    assert not torch.equal(feed(seed=1).augmented(2, torch.arange(10)), everyone)


def test_batches_follow_the_epoch_order_and_the_view_holds_the_same_crops():
    images = TensorImages(torch.rand(10, 3, 32, 32, generator=torch.Generator().manual_seed(1)), list(range(10)))
    feed = DeviceFeed(images, CIFAR10, seed=0, batch_size=4, device=torch.device("cpu"), channels_last=True)
    visits = torch.tensor([5, 5, 1, 8, 0, 3])
    feed.sampler.set_epoch(4, visits)
    batches = list(feed)
    view = feed.epoch_view(4)
    assert len(feed) == len(batches) == 2 and [len(y) for _, y, _ in batches] == [4, 2]
    assert torch.equal(torch.cat([idx for _, _, idx in batches]), visits)
    for x, y, idx in batches:
        assert x.is_contiguous(memory_format=torch.channels_last)
        assert torch.equal(y, idx)  # labels are the indices here
    rows = torch.cat([x for x, _, _ in batches])
    # every first visit is the crop the plan scored; input 5's second visit is a crop of its own
    # (Sun et al. sample with replacement, as a DataLoader re-augmenting every load would)
    assert all(torch.equal(rows[k], view[int(visits[k])][0]) for k in (0, 2, 3, 4, 5))
    assert not torch.equal(rows[1], rows[0])


class _Augmented(torch.utils.data.Dataset):
    """:func:`_coordinates` images through torchvision's CIFAR-10 crop and flip, as the DataLoader feed
    reads the split."""

    def __init__(self, count: int):
        self.images, self.transform = _coordinates(count), transforms.Compose(CIFAR10.transforms())

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int):
        return self.transform(self.images[index]), index


def test_each_visit_of_an_input_in_one_epoch_draws_its_own_crop_in_both_feeds():
    config = TrainConfig(dataset="cifar10", arch="resnet18", method="cohen", sigma=0.25, batch_size=8)
    visits = torch.tensor([4, 2, 4, 4, 4, 0, 4, 4])
    for feed in (
        DeviceFeed.for_config(TensorImages(_coordinates(6), list(range(6))), config, torch.device("cpu")),
        training_loader(_Augmented(6), config, torch.device("cpu")),
    ):
        feed.sampler.set_epoch(0, visits)
        ((x, _, idx),) = list(feed)
        offsets, flipped = _offsets_and_flips(x[idx == 4])
        crops = {(int(t), int(s), bool(f)) for (t, s), f in zip(offsets, flipped, strict=True)}
        assert len(crops) >= 4  # six visits of one input: 162 equally likely crops, not one


def test_without_augmentation_the_batches_are_the_loaders(tmp_path, monkeypatch):
    """The CIFAR-10 archive read through torchvision: the feed's batches equal, bit for bit, the
    DataLoader's over the unaugmented split, in the same shuffled order."""
    install_cifar10(tmp_path, monkeypatch, per_batch=4)
    config = TrainConfig(
        dataset="cifar10", arch="resnet18", method="cohen", sigma=0.25, batch_size=6, augment=False,
        data_root=str(tmp_path),
    )  # fmt: skip
    dataset = load_dataset("cifar10", "train", root=tmp_path, augment=False)
    feed, loader = (
        DeviceFeed.for_config(dataset, config, torch.device("cpu")),
        training_loader(dataset, config, torch.device("cpu")),
    )
    for source in (feed, loader):
        source.sampler.set_epoch(1)
    pairs = list(zip(feed, loader, strict=True))
    assert len(pairs) == 4
    for fed, loaded in pairs:
        assert all(torch.equal(a, b) for a, b in zip(fed, loaded, strict=True))


@pytest.mark.parametrize("padding", [1, 4])
def test_every_offset_and_flip_is_reachable(padding):
    augmentation = CropFlip(size=32, padding=padding)
    span = 2 * padding + 1
    cells = [(t, s, flip) for t in range(span) for s in range(span) for flip in (0.25, 0.75)]
    grid = torch.tensor([[(t + 0.5) / span, (s + 0.5) / span, flip] for t, s, flip in cells])
    offsets, flipped = _offsets_and_flips(augmentation.apply(_coordinates(len(grid)), grid), padding)
    assert len({(int(t), int(s), bool(f)) for (t, s), f in zip(offsets, flipped, strict=True)}) == len(grid)
