"""Model registry, our checkpoint format, published-checkpoint import and `ddrs import-checkpoint`."""

from __future__ import annotations

import argparse

import pytest
import torch
from torch import nn

from ddrs.cli import main
from ddrs.data import DATASETS
from ddrs.errors import CheckpointError
from ddrs.models import ARCHS, Normalize, build_model, import_published, load_checkpoint, save_checkpoint

ARCH_DATASET = {
    "mlp": "digits",
    "mlp256": "mnist5k",
    "cnn": "digits",
    "lenet": "mnist",
    "resnet18": "cifar10",
    "resnet18_ddrs": "cifar10",
    "resnet110": "cifar10",
    "resnet50": "imagenet",
}


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_every_arch_classifies_its_dataset_behind_a_normaliser(arch):
    info = DATASETS[ARCH_DATASET[arch]]
    model = build_model(arch, info.name).eval()
    assert isinstance(model[0], Normalize)
    assert model[0].mean.flatten().tolist() == pytest.approx(info.mean)
    assert model[0].std.flatten().tolist() == pytest.approx(info.std)
    with torch.no_grad():
        assert model(torch.rand(1, *info.input_shape)).shape == (1, info.num_classes)


def test_normaliser_standardises_each_channel():
    normalize = Normalize((0.5, 0.25), (0.5, 2.0))
    x = torch.tensor([1.0, 0.25]).view(1, 2, 1, 1).expand(1, 2, 2, 2)
    assert torch.equal(normalize(x)[0, :, 0, 0], torch.tensor([1.0, 0.0]))


def test_resnet110_is_cohens_depth_and_width():
    net = build_model("resnet110", "cifar10")[1]
    assert [len(getattr(net, f"layer{k}")) for k in (1, 2, 3)] == [18, 18, 18]
    assert [getattr(net, f"layer{k}")[0].conv1.out_channels for k in (1, 2, 3)] == [16, 32, 64]
    convs = sum(isinstance(m, nn.Conv2d) and m.kernel_size == (3, 3) for m in net.modules())
    assert convs + 1 == 110  # 109 3x3 convolutions and the classifier


def test_unknown_arch_names_arch_and_dataset():
    with pytest.raises(ValueError, match=r"unknown architecture 'vgg16' \(dataset 'cifar10'\).*'resnet110'"):
        build_model("vgg16", "cifar10")


def test_arch_for_another_input_shape_names_both():
    with pytest.raises(ValueError, match=r"'resnet110' is sized for inputs \(3, 32, 32\).*'digits'.*\['cnn', 'mlp'\]"):
        build_model("resnet110", "digits")


def linear_widths(net: nn.Module) -> list[tuple[int, int]]:
    return [(m.in_features, m.out_features) for m in net.modules() if isinstance(m, nn.Linear)]


def test_mlps_are_sized_for_their_inputs():
    """digits keeps its 64-128-128-10 ``mlp`` (the default pipeline's models); mnist5k gets 784-256-256-10."""
    assert linear_widths(build_model("mlp", "digits")) == [(64, 128), (128, 128), (128, 10)]
    assert linear_widths(build_model("mlp256", "mnist5k")) == [(784, 256), (256, 256), (256, 10)]
    with pytest.raises(ValueError, match=r"'mlp' is sized for inputs \(1, 8, 8\).*'mnist5k'.*\['lenet', 'mlp256'\]"):
        build_model("mlp", "mnist5k")


def test_lenet_classifies_mnist5k():
    model = build_model("lenet", "mnist5k").eval()
    with torch.no_grad():
        assert model(torch.rand(3, 1, 28, 28)).shape == (3, 10)


@pytest.mark.parametrize(("dataset", "arch"), [("mnist", "lenet"), ("mnist5k", "mlp256"), ("mnist5k", "lenet")])
def test_mnist_networks_see_unnormalised_pixels_as_jeong_and_shin_set_them_up(dataset, arch):
    """Jeong & Shin's code/datasets.py: ``get_normalize_layer('mnist')`` returns ``torch.nn.Identity()``."""
    model = build_model(arch, dataset)
    x = torch.rand(2, 1, 28, 28)
    assert torch.equal(model[0](x), x)


def test_digits_keeps_its_own_normaliser():
    assert build_model("mlp", "digits")[0].mean.flatten().tolist() == pytest.approx([0.3053])


# --- the DDRS authors' CIFAR-10 network ----------------------------------------------------------

#: the release's CIFAR10/models/resnet.py normalises inside forward with these (lines 163-164)
RELEASED_MEAN, RELEASED_STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)


class ReleasedResNet18(nn.Module):
    """The DDRS release's ``CIFAR10/models/resnet.py`` as ``resnet18(num_classes=10)`` builds it: the
    file is torchvision's ``resnet.py`` with ``bn1`` removed from ``__init__`` and ``_forward_impl``
    ("Bibi: removed first batch norm"), the input normalised inside forward, and a softmax at the end
    ("bibi: adding softmax layer")."""

    def __init__(self):
        super().__init__()
        from torchvision.models import resnet18

        net = resnet18(num_classes=10)
        del net.bn1
        self.net = net
        self.mean = torch.tensor(RELEASED_MEAN).view(1, 3, 1, 1)
        self.std = torch.tensor(RELEASED_STD).view(1, 3, 1, 1)

    def forward(self, x):
        net = self.net
        x = net.maxpool(net.relu(net.conv1((x - self.mean) / self.std)))
        x = net.layer4(net.layer3(net.layer2(net.layer1(x))))
        return torch.softmax(net.fc(torch.flatten(net.avgpool(x), 1)), dim=1)


def test_ddrs_resnet18_has_the_released_parameters_and_computes_the_released_network():
    released = ReleasedResNet18().double().eval()  # in float64, as every comparison with released code
    model = build_model("resnet18_ddrs", "cifar10").double().eval()
    ours = model[1]
    count = sum(p.numel() for p in ours.parameters())
    assert count == sum(p.numel() for p in released.net.parameters()) == 11_181_514  # torchvision's, less bn1's 128
    assert list(ours.state_dict()) == list(released.net.state_dict())  # the authors' state_dict loads strictly
    ours.load_state_dict(released.net.state_dict())
    assert model[0].mean.flatten().tolist() == pytest.approx(RELEASED_MEAN)
    assert model[0].std.flatten().tolist() == pytest.approx(RELEASED_STD)
    x = torch.rand(4, 3, 32, 32, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    with torch.no_grad():
        probabilities = released(x)
        assert torch.allclose(ours(model[0](x)), probabilities, rtol=0, atol=1e-12)
        # the built model's output: the log the release's compute_loss takes of the probabilities
        assert torch.allclose(model(x), torch.log(probabilities + 1e-10), rtol=0, atol=1e-10)
        assert torch.equal(model(x).argmax(dim=1), probabilities.argmax(dim=1))


def test_ddrs_resnet18_shrinks_32_pixels_to_8_in_its_stem_and_ends_in_a_softmax():
    model = build_model("resnet18_ddrs", "cifar10").eval()
    net = model[1]
    assert net.conv1.kernel_size == (7, 7) and net.conv1.stride == (2, 2) and net.conv1.padding == (3, 3)
    assert not hasattr(net, "bn1")  # "removed first batch norm"
    x = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        features = net.stem(x)
        assert features.shape == (2, 64, 8, 8)
        sides = []
        for stage in (net.layer1, net.layer2, net.layer3, net.layer4):
            features = stage(features)
            sides.append(features.shape[-1])
        assert sides == [8, 4, 2, 1] and features.shape[1] == 512
        out = net(x)
    assert out.shape == (2, 10) and (out >= 0).all()
    assert torch.allclose(out.sum(dim=1), torch.ones(2))
    with torch.no_grad():  # read as logits, the model's output gives back the probabilities
        assert torch.allclose(torch.softmax(model(x), dim=1), net(model[0](x)), atol=1e-6)


def test_unknown_dataset_is_refused():
    with pytest.raises(ValueError, match="unknown dataset 'svhn'"):
        build_model("mlp", "svhn")


# --- our checkpoints ---------------------------------------------------------------------------


def test_digits_fixture_model_is_accurate_and_noise_robust(digits_model, digits_data):
    test = digits_data["test"]
    labels = torch.as_tensor(test.targets)
    noisy = test.images + 0.25 * torch.randn(test.images.shape, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        clean_acc = (digits_model(test.images).argmax(1) == labels).float().mean()
        noisy_acc = (digits_model(noisy).argmax(1) == labels).float().mean()
    assert clean_acc >= 0.9 and noisy_acc >= 0.8


def test_checkpoint_round_trip_keeps_function_and_metadata(digits_model, digits_checkpoint, digits_data):
    model, meta = load_checkpoint(digits_checkpoint, arch="mlp", dataset="digits")
    assert not model.training
    assert meta == {"arch": "mlp", "dataset": "digits", "method": "cohen", "train_mode": "fs", "sigma": 0.25}
    x = digits_data["test"].images[:16]
    with torch.no_grad():
        assert torch.equal(model(x), digits_model(x))


def test_checkpoint_keeps_resumption_state(tmp_path):
    model = build_model("mlp", "digits")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.rand(4, 1, 8, 8)).sum().backward()
    optimizer.step()
    path = tmp_path / "run" / "last.pt"
    save_checkpoint(
        path,
        model,
        arch="mlp",
        dataset="digits",
        epoch=3,
        optimizer=optimizer.state_dict(),
        sigma_table=torch.full((5,), 0.25),
        config={"lr": 0.1, "milestones": [30, 60]},
    )
    assert [p.name for p in path.parent.iterdir()] == ["last.pt"]  # no temporary left behind
    _, meta = load_checkpoint(path)
    restored = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    restored.load_state_dict(meta["optimizer"])
    first = next(iter(restored.state.values()))["momentum_buffer"]
    assert torch.equal(first, next(iter(optimizer.state.values()))["momentum_buffer"])
    assert meta["epoch"] == 3 and meta["config"]["milestones"] == [30, 60]
    assert torch.equal(meta["sigma_table"], torch.full((5,), 0.25))


def test_save_refuses_metadata_weights_only_cannot_read(tmp_path):
    model = build_model("mlp", "digits")
    with pytest.raises(ValueError, match=r"meta\['config'\] is a Namespace"):
        save_checkpoint(tmp_path / "m.pt", model, arch="mlp", dataset="digits", config=argparse.Namespace(lr=1))
    with pytest.raises(ValueError, match="needs meta dataset"):
        save_checkpoint(tmp_path / "m.pt", model, arch="mlp")
    assert not (tmp_path / "m.pt").exists()


@pytest.mark.parametrize(
    ("request_", "mismatch"), [({"arch": "cnn"}, "arch 'cnn'"), ({"dataset": "mnist"}, "dataset 'mnist'")]
)
def test_load_names_file_and_mismatch(digits_checkpoint, request_, mismatch):
    with pytest.raises(CheckpointError, match=rf"{digits_checkpoint}.*'mlp' model for dataset 'digits'.*{mismatch}"):
        load_checkpoint(digits_checkpoint, **request_)


def test_truncated_checkpoint_names_the_file(digits_checkpoint, tmp_path):
    broken = tmp_path / "truncated.pt"
    data = digits_checkpoint.read_bytes()
    broken.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=rf"cannot read checkpoint {broken}: it is truncated or corrupt"):
        load_checkpoint(broken)


def test_garbage_file_names_the_file_and_never_advises_unsafe_loading(tmp_path):
    garbage = tmp_path / "checkpoint.pth.tar"
    garbage.write_text("<!DOCTYPE html><html>Google Drive - virus scan warning</html>\n" * 20)
    with pytest.raises(
        CheckpointError, match=rf"{garbage}: it is corrupt or not a PyTorch.*download it again"
    ) as error:
        load_checkpoint(garbage)
    assert "weights_only" not in str(error.value) and "False" not in str(error.value)


def test_foreign_checkpoint_is_not_taken_for_ours(tmp_path):
    path = tmp_path / "plain_state.pt"
    torch.save(build_model("mlp", "digits").state_dict(), path)
    with pytest.raises(CheckpointError, match=rf"{path} is not a ddrs checkpoint.*import-checkpoint"):
        load_checkpoint(path)


def test_missing_checkpoint_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.pt"):
        load_checkpoint(tmp_path / "nowhere.pt")
    with pytest.raises(CheckpointError, match=rf"checkpoint {tmp_path} is a directory, not a file"):
        load_checkpoint(tmp_path)


# --- published checkpoints -----------------------------------------------------------------------


class CohenNormalizeLayer(nn.Module):
    """Like Cohen's / SmoothAdv's first layer: statistics as plain attributes, so no ``0.*`` keys."""

    def __init__(self, mean, std=None):
        super().__init__()
        self.means = torch.tensor(mean).view(-1, 1, 1)
        self.sds = None if std is None else torch.tensor(std).view(-1, 1, 1)

    def forward(self, x):
        return x - self.means if self.sds is None else (x - self.means) / self.sds


def _published_net(arch: str, dataset: str, seed: int = 1) -> nn.Module:
    torch.manual_seed(seed)
    net = build_model(arch, dataset)[1]
    for module in net.modules():  # non-trivial batch-norm statistics, as after training
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    return net.eval()


def _assert_same_function(imported: nn.Module, published: nn.Module, shape) -> None:
    """In float64, so that the comparison does not rest on two codes rounding alike in float32."""
    x = torch.rand(2, *shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(imported.double()(x), published.double()(x), rtol=0, atol=1e-10)


def test_resnet110_parameter_names_are_cohens():
    """Names as in locuslab/smoothing code/archs/cifar_resnet.py, so published weights load strictly."""
    names = set(build_model("resnet110", "cifar10")[1].state_dict())
    assert {
        "conv1.weight",
        "bn1.running_var",
        "layer1.0.conv1.weight",
        "layer2.0.downsample.0.weight",
        "layer2.0.downsample.1.running_mean",
        "layer3.17.bn2.weight",
        "fc.weight",
        "fc.bias",
    } <= names
    assert not any("shortcut" in name for name in names)


def test_import_cohen_resnet110_with_data_parallel_net(tmp_path):
    """Cohen's ImageNet layout: ``Sequential(NormalizeLayer, DataParallel(net))`` → keys ``1.module.*``."""
    info = DATASETS["cifar10"]
    net = _published_net("resnet110", "cifar10")
    published = nn.Sequential(CohenNormalizeLayer(info.mean, info.std), net)
    path = tmp_path / "checkpoint.pth.tar"
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    saved = nn.Sequential(published[0], nn.DataParallel(net)).state_dict()
    published.cpu()  # DataParallel moves its module to the first GPU where there is one
    assert "1.module.layer1.0.conv1.weight" in saved
    torch.save({"epoch": 90, "arch": "cifar_resnet110", "state_dict": saved, "optimizer": optimizer.state_dict()}, path)
    model, meta = import_published(path, "resnet110", "cifar10")
    _assert_same_function(model, published, info.input_shape)
    assert meta["method"] == "cohen" and meta["epoch"] == 90 and meta["published_arch"] == "cifar_resnet110"


@pytest.mark.parametrize("wrapping", ["plain", "model_in_data_parallel"])
def test_import_cohen_layout(tmp_path, wrapping):
    info = DATASETS["mnist"]
    published = nn.Sequential(CohenNormalizeLayer(info.mean, info.std), _published_net("lenet", "mnist"))
    saved = published if wrapping == "plain" else nn.DataParallel(published)
    path = tmp_path / "checkpoint.pth.tar"
    torch.save({"epoch": 90, "arch": "lenet", "state_dict": saved.state_dict()}, path)
    published.cpu()  # DataParallel moves its module to the first GPU where there is one
    model, _ = import_published(path, "lenet", "mnist")
    _assert_same_function(model, published, info.input_shape)


def test_import_smoothadv_keeps_its_centring_only_normaliser(tmp_path):
    info = DATASETS["mnist"]
    published = nn.Sequential(CohenNormalizeLayer(info.mean), _published_net("lenet", "mnist"))
    path = tmp_path / "smoothadv.pth.tar"
    torch.save({"epoch": 150, "arch": "lenet", "state_dict": published.state_dict()}, path)
    model, meta = import_published(path, "lenet", "mnist", source="smoothadv")
    _assert_same_function(model, published, info.input_shape)
    # the normaliser travels with our checkpoint, so the reloaded model is the same function
    save_checkpoint(tmp_path / "ours.pt", model, **meta)
    reloaded, _ = load_checkpoint(tmp_path / "ours.pt", arch="lenet", dataset="mnist")
    _assert_same_function(reloaded, published, info.input_shape)


def test_import_reads_normaliser_statistics_stored_in_the_file(tmp_path):
    state = {f"1.{k}": v for k, v in _published_net("lenet", "mnist").state_dict().items()}
    state["0.means"], state["0.sds"] = torch.tensor([0.5]), torch.tensor([0.2])
    path = tmp_path / "with_stats.pth.tar"
    torch.save({"state_dict": state}, path)
    model, _ = import_published(path, "lenet", "mnist")
    assert (model[0].mean.item(), model[0].std.item()) == pytest.approx((0.5, 0.2))


def test_import_macer_bare_network(tmp_path):
    net = _published_net("lenet", "mnist")
    path = tmp_path / "440.pth"
    torch.save({"net": net.state_dict(), "epoch": 440}, path)
    model, meta = import_published(path, "lenet", "mnist", source="macer")
    _assert_same_function(model, net, DATASETS["mnist"].input_shape)
    assert meta["epoch"] == 440 and meta["method"] == "macer"


def test_import_refuses_a_layout_of_another_source(tmp_path):
    # a MACER file imported as Cohen's would run behind Cohen's mean/std, and a Cohen file as MACER's
    # behind nothing: both load strictly, so only the layout tells
    net = _published_net("lenet", "mnist")
    macer, cohen = tmp_path / "440.pth", tmp_path / "cohen.pth.tar"
    torch.save({"net": net.state_dict(), "epoch": 440}, macer)
    torch.save({"state_dict": {f"1.{k}": v for k, v in net.state_dict().items()}}, cohen)
    with pytest.raises(CheckpointError, match=rf"{macer} holds a bare network, the layout of macer checkpoints"):
        import_published(macer, "lenet", "mnist", source="cohen")
    with pytest.raises(CheckpointError, match=rf"{cohen} holds a Sequential\(normaliser, net\), the layout of cohen"):
        import_published(cohen, "lenet", "mnist", source="macer")


def test_import_names_file_and_first_missing_and_unexpected_keys(tmp_path):
    state = {f"1.{k}": v for k, v in _published_net("lenet", "mnist").state_dict().items()}
    state["1.fc3.weight"] = state.pop("1.fc2.weight")
    path = tmp_path / "renamed.pth.tar"
    torch.save({"arch": "lenet", "state_dict": state}, path)
    with pytest.raises(
        CheckpointError, match=rf"{path} does not fit .*missing keys \['fc2.weight'\].*unexpected keys \['fc3.weight'\]"
    ):
        import_published(path, "lenet", "mnist")


def test_import_refuses_another_published_arch(tmp_path):
    path = tmp_path / "resnet20.pth.tar"
    torch.save({"arch": "cifar_resnet20", "state_dict": {}}, path)
    with pytest.raises(CheckpointError, match=rf"{path} was trained as architecture 'cifar_resnet20', not 'resnet110'"):
        import_published(path, "resnet110", "cifar10")


def test_import_never_unpickles_python_objects(tmp_path):
    """Old checkpoints that pickle e.g. the argparse Namespace are refused, not loaded unsafely."""
    path = tmp_path / "old.pth.tar"
    torch.save({"args": argparse.Namespace(lr=0.1), "net": _published_net("lenet", "mnist").state_dict()}, path)
    with pytest.raises(
        CheckpointError,
        match=(
            rf"{path} with torch.load\(weights_only=True\): it pickles the Python object "
            r"argparse.Namespace, which is never unpickled unsafely"
        ),
    ):
        import_published(path, "lenet", "mnist", source="macer")


def test_import_unknown_source_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown checkpoint source 'denoised'"):
        import_published(tmp_path / "x.pt", "lenet", "mnist", source="denoised")


# --- `ddrs import-checkpoint` ---------------------------------------------------------------------


def import_lenet_args(published, out, *flags: str) -> list[str]:
    """``ddrs import-checkpoint`` of a published MNIST LeNet file into ``out``."""
    return ["import-checkpoint", "--published", str(published), "--arch", "lenet", "--dataset", "mnist", *flags,
            "--out", str(out)]  # fmt: skip


def test_import_checkpoint_command_writes_our_format(tmp_path, capsys):
    net = _published_net("lenet", "mnist")
    published = tmp_path / "macer.pth"
    torch.save({"net": net.state_dict(), "epoch": 440}, published)
    out = tmp_path / "models" / "lenet.pt"
    assert main(import_lenet_args(published, out, "--source", "macer", "--sigma", "0.5")) == 0
    model, meta = load_checkpoint(out, arch="lenet", dataset="mnist")
    assert (meta["sigma"], meta["method"], meta["train_mode"]) == (0.5, "macer", "fs")
    _assert_same_function(model, net, DATASETS["mnist"].input_shape)
    assert str(out) in capsys.readouterr().out


def test_import_checkpoint_command_takes_the_source_from_the_method(tmp_path):
    """The workflow passes only --method: a SmoothAdv file must get SmoothAdv's centring normaliser."""
    info = DATASETS["mnist"]
    published = nn.Sequential(CohenNormalizeLayer(info.mean), _published_net("lenet", "mnist"))
    path = tmp_path / "smoothadv.pth.tar"
    # Salman et al. released files from 2019 torch: the legacy (non-zip) serialisation
    torch.save({"arch": "lenet", "state_dict": published.state_dict()}, path, _use_new_zipfile_serialization=False)
    out = tmp_path / "model.pt"
    assert main(import_lenet_args(path, out, "--method", "smoothadv", "--sigma", "0.25")) == 0
    model, meta = load_checkpoint(out)
    assert meta["source"] == meta["method"] == "smoothadv"
    _assert_same_function(model, published, info.input_shape)


def test_import_checkpoint_command_needs_a_source_for_other_methods(tmp_path, capsys):
    assert main(import_lenet_args(tmp_path / "f.pt", tmp_path / "out.pt", "--method", "consistency")) == 2
    assert "give --source" in capsys.readouterr().err


def test_import_checkpoint_command_reports_a_bad_file(tmp_path, capsys):
    published = tmp_path / "broken.pth"
    published.write_bytes(b"\x80\x02 not a checkpoint")
    assert main(import_lenet_args(published, tmp_path / "out.pt")) == 2
    assert f"ddrs import-checkpoint: error: cannot read checkpoint {published}" in capsys.readouterr().err
    assert not (tmp_path / "out.pt").exists()
