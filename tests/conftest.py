"""Shared fixtures: the digits data and a small Gaussian-noise-trained digits model (Cohen et al. 2019 training).

The model is trained once per session, seeded, in a few seconds of CPU, so tests of smoothing,
σ optimisation, memory certification and the CLI can use a real (if tiny) base classifier.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from ddrs.core.noise import get_noise
from ddrs.data import load_dataset
from ddrs.models import build_model, save_checkpoint

DIGITS_SIGMA = 0.25
DIGITS_ARCH = "mlp"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the files with end-to-end runs first (marked ``e2e`` in ``make test``, ``slow`` in ``make
    test-slow``: minutes each), each file's tests in their order: under the test targets' workers
    (pytest-xdist, a file per worker at a time) the longest start at once, and the unit files fill
    the time left."""
    long = {item.path for item in items if item.get_closest_marker("e2e") or item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in long)


@pytest.fixture(scope="session", autouse=True)
def _single_intra_op_thread():
    """Run torch on one thread: the test models are tiny, and on a shared CPU the OpenMP workers
    of a multi-threaded op spin-wait for each other (measured: 1 s vs 29 s of CPU for the digits
    model on 2 busy cores)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _seeded_torch():
    """Fix the global torch seed before each test, so weight initialisation is reproducible."""
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def digits_data() -> dict[str, torch.utils.data.Dataset]:
    """``{"train": ..., "test": ...}`` of the stratified digits split with seed 0 (1257 / 540 images)."""
    return {split: load_dataset("digits", split, seed=0) for split in ("train", "test")}


def train_digits_model(train_set, sigma: float = DIGITS_SIGMA, epochs: int = 40, seed: int = 0) -> nn.Module:
    """Train ``mlp`` on digits with Gaussian noise augmentation at ``sigma`` (Cohen et al. 2019, §4)."""
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)  # weight initialisation
    model = build_model(DIGITS_ARCH, "digits")
    images = train_set.images
    labels = torch.as_tensor(train_set.targets)
    noise = get_noise("gaussian")
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(labels), generator=generator)
        for batch in order.split(64):
            x = noise.perturb(images[batch], sigma, generator)
            loss = nn.functional.cross_entropy(model(x), labels[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model.eval()


@pytest.fixture(scope="session")
def digits_model(digits_data) -> nn.Module:
    """An ``mlp`` trained on digits under N(0, 0.25²I) noise, in eval mode (≈95% clean test accuracy)."""
    model = train_digits_model(digits_data["train"])
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model


@pytest.fixture(scope="session")
def digits_checkpoint(digits_model, tmp_path_factory):
    """``digits_model`` saved with ``save_checkpoint`` (method cohen, fixed σ = 0.25)."""
    path = tmp_path_factory.mktemp("checkpoints") / "digits_mlp.pt"
    save_checkpoint(
        path, digits_model, arch=DIGITS_ARCH, dataset="digits", method="cohen", train_mode="fs", sigma=DIGITS_SIGMA
    )
    return path
