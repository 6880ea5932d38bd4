"""The training augmentations of the registry's datasets: one definition each, as torchvision's
per-image transforms (what a DataLoader applies) and, for crop-and-flip, as one batched tensor op
(what the device feed, :mod:`ddrs.training.device_feed`, applies on the training device).

Both forms draw the same distribution: Cohen et al.'s CIFAR-10 training crops a 32×32 window,
offsets uniform on {0, …, 8}, out of the image zero-padded by 4, then flips it horizontally with
probability 1/2 (``RandomCrop(32, padding=4)``, ``RandomHorizontalFlip()``); ImageNet's random
resized crop has no batched form here. torch and torchvision are imported when a form is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import Tensor


@dataclass(frozen=True)
class CropFlip:
    """A random ``size``×``size`` crop (the image's own size) of the image zero-padded by ``padding``
    on every side, then a horizontal flip with probability 1/2."""

    size: int
    padding: int
    #: uniforms on (0, 1) one image's augmentation takes: row offset, column offset, flip
    draws = 3

    def transforms(self) -> list:
        from torchvision import transforms

        return [transforms.RandomCrop(self.size, padding=self.padding), transforms.RandomHorizontalFlip()]

    def apply(self, images: Tensor, uniforms: Tensor) -> Tensor:
        """``images`` (B, C, H, W) augmented by the uniforms ``uniforms[:, :3]`` of each: offsets
        ⌊u·(2·padding + 1)⌋ into the padded image, flipped where u < 1/2. Two gathers over expanded
        indices, so no index tensor of the images' size is built."""
        import torch
        import torch.nn.functional as F

        batch, channels, height, width = images.shape
        span = 2 * self.padding + 1
        top, left = ((uniforms[:, i] * span).long().clamp_max(span - 1) for i in (0, 1))
        flip = uniforms[:, 2] < 0.5
        padded = F.pad(images, (self.padding,) * 4)
        rows = top[:, None] + torch.arange(height, device=images.device)
        columns = left[:, None] + torch.arange(width, device=images.device)
        columns = torch.where(flip[:, None], columns.flip(1), columns)
        cropped = padded.gather(2, rows[:, None, :, None].expand(batch, channels, height, padded.shape[3]))
        return cropped.gather(3, columns[:, None, None, :].expand(batch, channels, height, width))


@dataclass(frozen=True)
class ResizedCropFlip:
    """A random resized crop to ``size`` (torchvision's scale and ratio ranges), then a horizontal
    flip with probability 1/2; per image only."""

    size: int

    def transforms(self) -> list:
        from torchvision import transforms

        return [transforms.RandomResizedCrop(self.size), transforms.RandomHorizontalFlip()]


#: Cohen et al.'s code (locuslab/smoothing ``code/datasets.py``)
CIFAR10 = CropFlip(size=32, padding=4)
