"""Dataset registry, the digits split, Cohen's skip/max, and offline loads of the real archive formats."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from fixtures_archives import write_cifar10, write_image_folder, write_mnist
from torchvision.datasets import CIFAR10

from ddrs.data import DATASETS, load_dataset, subsample_indices


def test_unknown_dataset_lists_the_choices():
    with pytest.raises(ValueError, match=r"unknown dataset 'svhn'.*'cifar10'.*'digits'.*'imagenet'.*'mnist'"):
        load_dataset("svhn", "test")


def test_unknown_split_is_named():
    with pytest.raises(ValueError, match="unknown split 'validation'"):
        load_dataset("digits", "validation")


def test_registry_describes_each_dataset():
    assert {name: (info.num_classes, info.input_shape) for name, info in DATASETS.items()} == {
        "digits": (10, (1, 8, 8)),
        "mnist": (10, (1, 28, 28)),
        "cifar10": (10, (3, 32, 32)),
        "imagenet": (1000, (3, 224, 224)),
    }
    for info in DATASETS.values():
        assert len(info.mean) == len(info.std) == info.input_shape[0]


def test_digits_images_are_unit_range_with_int_labels(digits_data):
    train, test = digits_data["train"], digits_data["test"]
    assert (len(train), len(test)) == (1257, 540)
    x, y = test[0]
    assert x.shape == (1, 8, 8) and x.dtype == torch.float32 and isinstance(y, int)
    assert train.images.min() == 0.0 and train.images.max() == 1.0
    assert set(test.targets) == set(range(10))


def test_digits_split_is_stratified(digits_data):
    from sklearn.datasets import load_digits

    per_class = Counter(load_digits().target.tolist())
    in_test = Counter(digits_data["test"].targets)
    assert all(abs(in_test[label] - 0.3 * per_class[label]) <= 1 for label in range(10))


def test_digits_split_is_fixed_by_the_seed():
    first, again, other = (load_dataset("digits", "test", seed=s) for s in (0, 0, 1))
    assert torch.equal(first.images, again.images) and first.targets == again.targets
    assert not torch.equal(first.images, other.images)


def test_digits_split_keeps_every_image_once():
    train, test = load_dataset("digits", "train", seed=3), load_dataset("digits", "test", seed=3)
    from sklearn.datasets import load_digits

    every = torch.as_tensor(load_digits().images, dtype=torch.float32).div(16).flatten(1)
    together = torch.cat([train.images, test.images]).flatten(1)
    assert sorted(map(tuple, together.tolist())) == sorted(map(tuple, every.tolist()))


@pytest.mark.parametrize(
    ("length", "skip", "max_", "expected"),
    [
        (5, 1, None, [0, 1, 2, 3, 4]),
        (10, 3, None, [0, 3, 6, 9]),
        (100, 20, 50, [0, 20, 40]),  # Cohen: `if i == args.max: break` bounds the index, not the count
        (10, 4, 1000, [0, 4, 8]),
        (10, 1, 0, []),
    ],
)
def test_subsample_follows_cohens_skip_and_max(length, skip, max_, expected):
    assert subsample_indices(length, skip=skip, max=max_) == expected


@pytest.mark.parametrize(
    ("skip", "max_", "message"), [(0, None, "skip must be >= 1, got 0"), (1, -1, "max must be >= 0")]
)
def test_subsample_rejects_bad_arguments(skip, max_, message):
    with pytest.raises(ValueError, match=message):
        subsample_indices(10, skip=skip, max=max_)


@pytest.fixture
def cifar_root(tmp_path, monkeypatch):
    written = write_cifar10(tmp_path)
    for attribute in ("train_list", "test_list", "meta"):
        monkeypatch.setattr(CIFAR10, attribute, written[attribute])
    return tmp_path, written


def test_cifar10_reads_the_pickled_batches(cifar_root):
    root, written = cifar_root
    test = load_dataset("cifar10", "test", root=root)
    train = load_dataset("cifar10", "train", root=root, augment=False)
    assert (len(train), len(test)) == (15, 3)
    for dataset, split in ((train, "train"), (test, "test")):
        for i, (x, y) in enumerate(dataset):
            expected = torch.as_tensor(written[f"{split}_images"][i]).permute(2, 0, 1).float() / 255
            assert torch.allclose(x, expected) and y == written[f"{split}_labels"][i]


def test_cifar10_training_augmentation_crops_and_flips(cifar_root):
    root, written = cifar_root
    plain = load_dataset("cifar10", "train", root=root, augment=False)
    augmented = load_dataset("cifar10", "train", root=root)
    torch.manual_seed(0)
    views = [augmented[0][0] for _ in range(8)]
    assert all(view.shape == (3, 32, 32) and 0 <= view.min() and view.max() <= 1 for view in views)
    assert any(not torch.equal(view, plain[0][0]) for view in views)


def test_cifar10_refuses_files_with_wrong_checksums(tmp_path):
    """Unpatched, torchvision's md5 list rejects the tiny batches (and would try to download)."""
    write_cifar10(tmp_path)
    with pytest.raises(RuntimeError, match="not found or corrupted"):
        CIFAR10(str(tmp_path), train=False, download=False)


def test_mnist_reads_the_idx_files(tmp_path):
    written = write_mnist(tmp_path)
    for split in ("train", "test"):
        dataset = load_dataset("mnist", split, root=tmp_path)
        images, labels = written[split]
        assert len(dataset) == len(labels)
        for i, (x, y) in enumerate(dataset):
            assert x.shape == (1, 28, 28)
            assert torch.allclose(x[0], torch.as_tensor(images[i]).float() / 255) and y == labels[i]


def test_imagenet_reads_an_image_folder(tmp_path):
    write_image_folder(tmp_path / "imagenet")
    test = load_dataset("imagenet", "test", root=tmp_path)
    assert len(test) == 4 and [y for _, y in test] == [0, 0, 1, 1]
    x, _ = test[3]
    assert x.shape == (3, 224, 224)
    assert torch.allclose(x[:, 0, 0] * 255, torch.tensor([50.0, 100.0, 150.0]), atol=0.5)  # colour kept
    x_train, _ = load_dataset("imagenet", "train", root=tmp_path)[0]
    assert x_train.shape == (3, 224, 224)


def test_imagenet_missing_folder_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "imagenet" / "val")):
        load_dataset("imagenet", "test", root=tmp_path)
