"""Residual networks for 32×32 inputs (He et al. 2016, §4.2).

Parameter names follow the CIFAR ResNet of Cohen et al.'s ``archs/cifar_resnet.py`` (also used by
SmoothAdv and MACER): ``conv1``, ``bn1``, ``layer{1,2,3}.{i}.{conv,bn}{1,2}``,
``layer{k}.0.downsample.{0,1}`` (1×1 projection + batch norm) and ``fc``, so their published
ResNet-110 weights load strictly.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch.nn.functional as F
from torch import Tensor, nn

from ddrs.models.pieces import Piece, compose


class BasicBlock(nn.Module):
    """Two 3×3 convolutions with a residual connection (projected when the shape changes)."""

    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or in_planes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x: Tensor) -> Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        shortcut = x if self.downsample is None else self.downsample(x)
        return F.relu(out + shortcut)


class CifarResNet(nn.Module):
    """3×3 stem, one stage of ``blocks[k]`` basic blocks per width (stride 2 from the second stage),
    global average pooling and a linear classifier."""

    def __init__(self, widths: Sequence[int], blocks: Sequence[int], num_classes: int, in_channels: int = 3):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, widths[0], 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        in_planes = widths[0]
        for stage, (width, count) in enumerate(zip(widths, blocks, strict=True), start=1):
            stride = 1 if stage == 1 else 2
            layers = [BasicBlock(in_planes if i == 0 else width, width, stride if i == 0 else 1) for i in range(count)]
            self.add_module(f"layer{stage}", nn.Sequential(*layers))
            in_planes = width
        self.num_stages = len(widths)
        self.fc = nn.Linear(in_planes, num_classes)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    def stem(self, x: Tensor) -> Tensor:
        return F.relu(self.bn1(self.conv1(x)))

    def head(self, x: Tensor) -> Tensor:
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    def pieces(self) -> list[Piece]:
        """The forward pass as consecutive steps: the stem, every basic block, the head."""
        blocks = [block for stage in range(1, self.num_stages + 1) for block in getattr(self, f"layer{stage}")]
        return [self.stem, *blocks, self.head]

    def forward(self, x: Tensor) -> Tensor:
        return compose(self.pieces(), x)


def resnet110(input_shape: tuple[int, int, int], num_classes: int) -> CifarResNet:
    """Cohen et al.'s CIFAR ResNet-110: 18 basic blocks per stage, widths 16/32/64."""
    return CifarResNet((16, 32, 64), (18, 18, 18), num_classes, in_channels=input_shape[0])


def resnet18(input_shape: tuple[int, int, int], num_classes: int) -> CifarResNet:
    """ResNet-18 for 32×32 inputs: 2 basic blocks per stage, widths 64/128/256/512."""
    return CifarResNet((64, 128, 256, 512), (2, 2, 2, 2), num_classes, in_channels=input_shape[0])
