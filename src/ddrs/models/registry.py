"""Architecture registry: which network fits which dataset, always behind a normalising first layer.

Every consumer of a built model (the training losses, Algorithm 1, CERTIFY, the attacks) reads its
output as logits. A network released with a softmax head (``resnet18_ddrs``, the DDRS authors'
CIFAR-10 ResNet-18) is followed by the module its :attr:`ArchInfo.to_logits` names, so that the
consumers compute what its authors' code computes from the probabilities.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from torch import Tensor, nn

from ddrs.data import get_info
from ddrs.models import cifar_resnet, ddrs_resnet, small
from ddrs.models.normalize import Normalize
from ddrs.models.pieces import Piece

Shape = tuple[int, int, int]


def _torchvision_resnet50(input_shape: Shape, num_classes: int) -> nn.Module:
    from torchvision.models import resnet50

    return resnet50(weights=None, num_classes=num_classes)


def _torchvision_resnet_pieces(net: nn.Module) -> list[Piece]:
    """torchvision's ``ResNet._forward_impl`` as consecutive steps: stem, every bottleneck, head."""

    def stem(x: Tensor) -> Tensor:
        return net.maxpool(net.relu(net.bn1(net.conv1(x))))

    def head(x: Tensor) -> Tensor:
        return net.fc(net.avgpool(x).flatten(1))

    return [stem, *net.layer1, *net.layer2, *net.layer3, *net.layer4, head]


@dataclass(frozen=True)
class ArchInfo:
    """An architecture, the input shape it is sized for, how to build it for ``num_classes``, and
    its forward pass as consecutive pieces (``pieces(net)``, composed in order, is ``net(x)``): where
    activation recomputation (:mod:`ddrs.training.recompute`) may cut it. ``to_logits`` builds the
    module that follows a network whose output is not logits (``None``: it outputs logits)."""

    name: str
    input_shape: Shape
    build: Callable[[Shape, int], nn.Module]
    pieces: Callable[[nn.Module], list[Piece]]
    to_logits: Callable[[], nn.Module] | None = None


ARCHS: dict[str, ArchInfo] = {
    arch.name: arch
    for arch in (
        ArchInfo("mlp", (1, 8, 8), small.mlp, list),
        ArchInfo("mlp256", (1, 28, 28), partial(small.mlp, hidden=256), list),
        ArchInfo("cnn", (1, 8, 8), small.cnn, list),
        ArchInfo("lenet", (1, 28, 28), small.LeNet, small.LeNet.pieces),
        ArchInfo("resnet18", (3, 32, 32), cifar_resnet.resnet18, cifar_resnet.CifarResNet.pieces),
        ArchInfo("resnet110", (3, 32, 32), cifar_resnet.resnet110, cifar_resnet.CifarResNet.pieces),
        # the DDRS authors' CIFAR-10 network (softmax head): its output p is read as log(p + 1e-10)
        ArchInfo(
            "resnet18_ddrs",
            (3, 32, 32),
            ddrs_resnet.resnet18_ddrs,
            ddrs_resnet.DDRSResNet.pieces,
            ddrs_resnet.ReleasedLogProbabilities,
        ),
        # ImageNet's network, sized for ImageNet's input (ddrs.data.torchvision_sets.IMAGENET_SIZE)
        ArchInfo("resnet50", get_info("imagenet").input_shape, _torchvision_resnet50, _torchvision_resnet_pieces),
    )
}


def build_model(arch: str, dataset: str) -> nn.Sequential:
    """``nn.Sequential(Normalize(mean, std), net)`` with freshly initialised weights.

    Module 0 normalises with the dataset's channel statistics, so noise is added in pixel space and
    published checkpoints of Cohen et al.'s ``Sequential(NormalizeLayer, net)`` map over. A network
    whose output is not logits is followed by its :attr:`ArchInfo.to_logits` module (module 2).
    """
    info = get_info(dataset)
    if arch not in ARCHS:
        raise ValueError(f"unknown architecture {arch!r} (dataset {dataset!r}); choose one of {sorted(ARCHS)}")
    spec = ARCHS[arch]
    if spec.input_shape != info.input_shape:
        fitting = sorted(a.name for a in ARCHS.values() if a.input_shape == info.input_shape)
        raise ValueError(
            f"architecture {arch!r} is sized for inputs {spec.input_shape}, but dataset {dataset!r} has "
            f"inputs {info.input_shape}; architectures for {dataset!r}: {fitting}"
        )
    net = spec.build(info.input_shape, info.num_classes)
    after = [] if spec.to_logits is None else [spec.to_logits()]
    return nn.Sequential(Normalize(info.mean, info.std), net, *after)


def classifier_pieces(model: nn.Sequential, arch: str) -> list[Piece]:
    """The forward pass of ``build_model(arch, …)``'s classifier as consecutive pieces: the
    normalising layer, the network's own (:attr:`ArchInfo.pieces`), then its ``to_logits`` module."""
    normalize, net, *after = model
    return [normalize, *ARCHS[arch].pieces(net), *after]
