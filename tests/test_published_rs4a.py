"""Import of Yang et al.'s published uniform-noise models (``tonyduan/rs4a``, DDRS Table 4)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torchvision.models import resnet50

from ddrs.cli import main
from ddrs.cli.import_checkpoint import FORMATS
from ddrs.errors import CheckpointError
from ddrs.methods import METHODS
from ddrs.models import SOURCES, import_published, load_checkpoint

# rs4a's ImageNet statistics (src/datasets.py), nudged so that the test sees them come from the file
RS4A_MU = [0.485 + 0.01, 0.456 - 0.02, 0.406 + 0.03]
RS4A_SIGMA = [0.229 * 1.1, 0.224 * 0.9, 0.225 * 1.2]


class Rs4aNormalizeLayer(nn.Module):
    """rs4a's ``src.models.NormalizeLayer``: ``(x − mu) / exp(log_sig)``, parameters of shape (C, 1, 1)."""

    def __init__(self, mu, sigma):
        super().__init__()
        self.mu = nn.Parameter(torch.tensor(mu).reshape(3, 1, 1), requires_grad=False)
        self.log_sig = nn.Parameter(torch.log(torch.tensor(sigma)).reshape(3, 1, 1), requires_grad=False)

    def forward(self, x):
        return (x - self.mu) / torch.exp(self.log_sig)


class Rs4aResNet(nn.Module):
    """rs4a's ``src.models.ResNet(dataset="imagenet")``: ``norm`` then ``model``, each in ``DataParallel``."""

    def __init__(self):
        super().__init__()
        self.norm = nn.DataParallel(Rs4aNormalizeLayer(RS4A_MU, RS4A_SIGMA))
        self.model = nn.DataParallel(resnet50(num_classes=1000))

    def forward(self, x):
        return self.model(self.norm(x))


@pytest.fixture(scope="module")
def rs4a_file(tmp_path_factory):
    """``imagenet_uniform_025.pt`` as rs4a's ``train.py`` writes it: ``torch.save(model.state_dict(), ...)``."""
    torch.manual_seed(0)
    published = Rs4aResNet().eval().cpu()  # DataParallel moves its module to the first GPU where there is one
    for module in published.modules():  # non-trivial batch-norm statistics, as after training
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    state = published.state_dict()
    assert list(state)[:3] == ["norm.module.mu", "norm.module.log_sig", "model.module.conv1.weight"]
    path = tmp_path_factory.mktemp("rs4a") / "imagenet_uniform_025.pt"
    torch.save(state, path, _use_new_zipfile_serialization=False)  # 2020 torch: the legacy format
    return path, state


def _rs4a_by_hand(state, x):
    """rs4a's forward pass from the file's tensors: ``(x − mu) / exp(log_sig)`` → torchvision ResNet-50.
    exp(log_sig) is taken in float32, as rs4a's model does it (and ddrs on import), the rest in float64
    (as ``x``), so that the two are compared to float64 rounding, not float32's."""
    net = resnet50(num_classes=1000)
    net.load_state_dict({k.removeprefix("model.module."): v for k, v in state.items() if k.startswith("model.")})
    mu, sigma = state["norm.module.mu"].double(), torch.exp(state["norm.module.log_sig"]).double()
    with torch.no_grad():
        return net.double().eval()((x - mu) / sigma)


# ResNet-50 pools adaptively, so a 64×64 image exercises every layer at a fraction of 224×224's cost
IMAGES = torch.rand(2, 3, 64, 64, generator=torch.Generator().manual_seed(1), dtype=torch.float64)


def test_imported_model_is_rs4a_wrapper(rs4a_file):
    path, state = rs4a_file
    model, meta = import_published(path, "resnet50", "imagenet", source="rs4a")
    assert torch.equal(model[0].mean, state["norm.module.mu"])
    assert torch.equal(model[0].std, torch.exp(state["norm.module.log_sig"]))
    assert model[0].std.flatten().tolist() == pytest.approx(RS4A_SIGMA)
    with torch.no_grad():
        ours = model.double()(IMAGES)
    assert torch.allclose(ours, _rs4a_by_hand(state, IMAGES), rtol=0, atol=1e-10)
    assert (meta["source"], meta["method"], meta["published_file"]) == ("rs4a", "rs4a", str(path))


def test_import_checkpoint_method_uniform_reads_rs4a(rs4a_file, tmp_path, capsys):
    """The workflow passes only ``--method uniform``: the file must be read as rs4a's layout."""
    path, state = rs4a_file
    out = tmp_path / "model.pt"
    argv = ["import-checkpoint", "--published", str(path), "--arch", "resnet50", "--dataset", "imagenet"]
    assert main([*argv, "--method", "uniform", "--sigma", "0.25", "--out", str(out)]) == 0
    assert "(rs4a, resnet50 on imagenet)" in capsys.readouterr().out
    model, meta = load_checkpoint(out, arch="resnet50", dataset="imagenet")
    assert (meta["source"], meta["method"], meta["sigma"], meta["train_mode"]) == ("rs4a", "uniform", 0.25, "fs")
    with torch.no_grad():
        assert torch.allclose(model.double()(IMAGES), _rs4a_by_hand(state, IMAGES), rtol=0, atol=1e-10)


def _rs4a_state_with(rs4a_file, change: str) -> dict:
    state = dict(rs4a_file[1])
    if change == "no log_sig":
        del state["norm.module.log_sig"]
    elif change == "extra key":
        state["head.module.weight"] = torch.zeros(1)
    elif change == "flat mu":
        state["norm.module.mu"] = state["norm.module.mu"].flatten()
    elif change == "cohen layout":
        state = {f"1.{k.removeprefix('model.module.')}": v for k, v in state.items() if k.startswith("model.")}
    return state


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("no log_sig", r"is not an rs4a checkpoint .*missing \['norm.module.log_sig'\]"),
        ("extra key", r"is not an rs4a checkpoint .*unexpected keys \['head.weight'\]"),
        ("flat mu", r"stores norm.module.mu of shape \(3,\), but rs4a's NormalizeLayer .* has shape \(3, 1, 1\)"),
        ("cohen layout", r"is not an rs4a checkpoint .*missing \['norm.module.mu', 'norm.module.log_sig'\]"),
    ],
)
def test_import_rs4a_refuses_foreign_layouts_naming_the_file(rs4a_file, tmp_path, change, message):
    path = tmp_path / f"{change.replace(' ', '_')}.pt"
    torch.save(_rs4a_state_with(rs4a_file, change), path)
    with pytest.raises(CheckpointError, match=rf"^{path} {message}"):
        import_published(path, "resnet50", "imagenet", source="rs4a")


def test_import_rs4a_names_a_corrupt_file(tmp_path):
    path = tmp_path / "imagenet_uniform_050.pt"
    path.write_bytes(b"\x80\x02 truncated download")
    with pytest.raises(CheckpointError, match=rf"cannot read checkpoint {path}"):
        import_published(path, "resnet50", "imagenet", source="rs4a")


def test_every_published_format_is_importable():
    """``--source`` offers exactly the layouts ``import_published`` reads; uniform's models are rs4a's."""
    assert FORMATS == sorted(SOURCES)
    formats = {name: method.published_format for name, method in METHODS.items()}
    assert formats.items() >= {"cohen": "cohen", "smoothadv": "smoothadv", "macer": "macer", "uniform": "rs4a"}.items()
