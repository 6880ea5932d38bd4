"""The DDRS authors' CIFAR-10 network: their ``CIFAR10/models/resnet.py`` ResNet-18.

Released in ``MotasemAlfarra/Data_Dependent_Randomized_Smoothing`` and built there as
``resnet.resnet18(num_classes=10)`` by every CIFAR-10 script (``train_smooth_adv.py``,
``train_macer.py``, ``certify_ds.py``), it is torchvision's ImageNet ResNet-18 with two changes
(lines 146–162, 206–228 of that file):

- the stem is the 7×7 stride-2 convolution (padding 3) and the 3×3 stride-2 max-pooling, with the
  first batch-norm removed ("Bibi: removed first batch norm"): a 32×32 image is 8×8 after it;
- ``forward`` ends in a softmax ("bibi: adding softmax layer"): the network outputs probabilities.

Its inputs are normalised inside ``forward`` with mean (0.4914, 0.4822, 0.4465) and std (0.2023,
0.1994, 0.2010), the CIFAR-10 statistics of the dataset registry, which :func:`ddrs.models.build_model`
puts in its first layer as for every network. Parameter names are the released ones
(torchvision's without ``bn1``), so the authors' ``state_dict`` loads strictly. Initialisation as
released: He-normal (fan-out) convolutions, batch-norm weight 1 and bias 0, PyTorch's default
linear layer, no zero-initialised residual branches.

The softmax head makes the output a probability vector p, where every other network here outputs
logits. :class:`ReleasedLogProbabilities` follows the network in the built model and gives
log(p + 10⁻¹⁰), the log the release's ``compute_loss`` takes before its NLL: every consumer of the
model's output then computes what the release computes (see :mod:`ddrs.models.registry`).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ddrs.core.device import at_least_float32
from ddrs.models.pieces import Piece, compose

#: what the DDRS scripts' ``compute_loss`` adds to the softmax output before the log ("avoid nan")
RELEASED_LOG_FLOOR = 1e-10


class DDRSResNet(nn.Module):
    """ResNet-18 as released by the DDRS authors: 7×7 stride-2 stem without batch-norm, max-pooling,
    four stages of two basic blocks (64, 128, 256, 512 channels), global average pooling, a linear
    layer and a softmax."""

    def __init__(self, num_classes: int, in_channels: int = 3, blocks: tuple[int, ...] = (2, 2, 2, 2)):
        # here, not at the top: importing torchvision loads torch._dynamo, seconds of CPU that every
        # job importing the model registry paid, whichever network it builds
        from torchvision.models.resnet import BasicBlock

        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        in_planes = 64
        for stage, (width, count) in enumerate(zip((64, 128, 256, 512), blocks, strict=True), start=1):
            stride = 1 if stage == 1 else 2
            downsample = None
            if stride != 1 or in_planes != width:
                downsample = nn.Sequential(
                    nn.Conv2d(in_planes, width, kernel_size=1, stride=stride, bias=False), nn.BatchNorm2d(width)
                )
            layers = [BasicBlock(in_planes, width, stride, downsample)]
            layers += [BasicBlock(width, width) for _ in range(1, count)]
            self.add_module(f"layer{stage}", nn.Sequential(*layers))
            in_planes = width
        self.fc = nn.Linear(512, num_classes)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.constant_(module.weight, 1)
                nn.init.constant_(module.bias, 0)

    def stem(self, x: Tensor) -> Tensor:
        """conv1, ReLU, max-pooling (no batch-norm): 32×32 → 8×8."""
        return self.maxpool(torch.relu(self.conv1(x)))

    def head(self, x: Tensor) -> Tensor:
        """Global average pooling, the linear layer, then the released softmax."""
        return torch.softmax(self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)), dim=1)

    def pieces(self) -> list[Piece]:
        """The forward pass as consecutive steps: the stem, every basic block, the head."""
        blocks = [block for stage in (self.layer1, self.layer2, self.layer3, self.layer4) for block in stage]
        return [self.stem, *blocks, self.head]

    def forward(self, x: Tensor) -> Tensor:
        return compose(self.pieces(), x)


class ReleasedLogProbabilities(nn.Module):
    """log(p + 10⁻¹⁰) of a probability output p: the DDRS scripts' ``compute_loss``
    (``torch.log(outputs_softmax + 1e-10)`` before ``NLLLoss``).

    Read as logits, these give back what the release computes from p: softmax of them is
    (p + 10⁻¹⁰)/(1 + C·10⁻¹⁰), p to 10⁻⁹ (Algorithm 1's ψ, the mean softmax of the losses);
    cross-entropy on them is the release's loss plus the constant log(1 + C·10⁻¹⁰), the same gradient;
    their argmax is p's (CERTIFY). Computed in float32 or wider whatever the autocast precision, so the
    floor survives.
    """

    def forward(self, p: Tensor) -> Tensor:
        return torch.log(at_least_float32(p) + RELEASED_LOG_FLOOR)


def resnet18_ddrs(input_shape: tuple[int, int, int], num_classes: int) -> DDRSResNet:
    """The DDRS release's ``resnet18(num_classes=...)`` for ``input_shape``'s channels."""
    return DDRSResNet(num_classes, in_channels=input_shape[0])
