"""Small networks for the low-dimensional datasets: an MLP and a CNN for digits, an MLP and LeNet for MNIST."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from ddrs.models.pieces import Piece, compose


def mlp(input_shape: tuple[int, int, int], num_classes: int, hidden: int = 128) -> nn.Module:
    """Two hidden ReLU layers on the flattened image: ``mlp`` 64-128-128-10 (digits), ``mlp256`` 784-256-256-10."""
    channels, height, width = input_shape
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(channels * height * width, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, num_classes),
    )


def cnn(input_shape: tuple[int, int, int], num_classes: int) -> nn.Module:
    """Two 3×3 convolutions and one 2×2 pooling, then two linear layers (sized for 8×8 digits)."""
    channels, height, width = input_shape
    return nn.Sequential(
        nn.Conv2d(channels, 32, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * (height // 2) * (width // 2), 128),
        nn.ReLU(),
        nn.Linear(128, num_classes),
    )


class LeNet(nn.Module):
    """The LeNet of MACER's MNIST experiments (conv 20 → conv 50 → 500 → classes), same parameter names."""

    def __init__(self, input_shape: tuple[int, int, int], num_classes: int):
        super().__init__()
        channels, height, width = input_shape
        self.conv1 = nn.Conv2d(channels, 20, 5)
        self.conv2 = nn.Conv2d(20, 50, 5)
        self.fc1 = nn.Linear(50 * _lenet_side(height) * _lenet_side(width), 500)
        self.fc2 = nn.Linear(500, num_classes)

    def first_stage(self, x: Tensor) -> Tensor:
        return F.max_pool2d(F.relu(self.conv1(x)), 2)

    def second_stage(self, x: Tensor) -> Tensor:
        return F.max_pool2d(F.relu(self.conv2(x)), 2)

    def head(self, x: Tensor) -> Tensor:
        return self.fc2(F.relu(self.fc1(x.flatten(1))))

    def pieces(self) -> list[Piece]:
        """The forward pass as consecutive steps: two convolution stages, then the classifier."""
        return [self.first_stage, self.second_stage, self.head]

    def forward(self, x: Tensor) -> Tensor:
        return compose(self.pieces(), x)


def _lenet_side(side: int) -> int:
    """Spatial size after LeNet's two (5×5 valid convolution, 2×2 pooling) stages: 28 → 4."""
    return ((side - 4) // 2 - 4) // 2
