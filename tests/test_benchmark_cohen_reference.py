"""benchmarks/_cohen.py: the one Cohen et al. CERTIFY loop both throughput benchmarks time (Cohen et al. 2019, §3.2)."""

import numpy as np
import pytest
import torch
from benchmark_helpers import BENCHMARKS
from scipy.stats import norm
from torch import nn


@pytest.fixture
def cohen(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _cohen

    return _cohen


class Recorded(nn.Module):
    """Predicts ``label`` (or, if None, the sign of the first pixel: class 1 if positive) and records batch sizes."""

    def __init__(self, label: int | None):
        super().__init__()
        self.label, self.batches = label, []

    def forward(self, x):
        self.batches.append(len(x))
        if self.label is not None:
            return nn.functional.one_hot(torch.full((len(x),), self.label), 3).float()
        return nn.functional.one_hot((x.flatten(1)[:, 0] > 0).long(), 3).float()


def test_a_constant_classifier_certifies_sigma_times_the_bounds_quantile(cohen):
    model = Recorded(label=2)
    x = torch.zeros(2, 1, 4, 4)
    certified = cohen.cohen_certify(model, x, sigma=0.5, n0=10, n=250, alpha=0.001, batch=100, num_classes=3)
    # every draw is class 2: the one-sided Clopper-Pearson bound at level alpha is alpha ** (1 / n)
    assert [label for label, _ in certified] == [2, 2]
    assert [radius for _, radius in certified] == pytest.approx([0.5 * norm.ppf(0.001 ** (1 / 250))] * 2)
    # per input: n0 in one batch, then n in batches of at most 100 (the last one smaller)
    assert model.batches == [10, 100, 100, 50] * 2


def test_a_coin_flip_abstains(cohen):
    torch.manual_seed(0)
    certified = cohen.cohen_certify(
        Recorded(label=None), torch.zeros(1, 1, 2, 2), sigma=1.0, n0=20, n=400, alpha=0.001, batch=64, num_classes=3
    )
    assert certified == [(cohen.ABSTAIN, 0.0)]


def test_python_counting_and_bincount_agree(cohen):
    predictions = np.array([0, 2, 2, 1, 2, 0])
    for python_count in (True, False):
        counts = cohen.count_predictions(predictions, 4, python_count=python_count)
        assert counts.tolist() == [2, 1, 3, 0], python_count
    runs = []
    for python_count in (True, False):
        torch.manual_seed(3)
        runs.append(
            cohen.cohen_certify(
                Recorded(label=None), torch.full((2, 1, 2, 2), 0.3), 1.0, 20, 300, 0.01, 64, 3, python_count
            )
        )
    assert runs[0] == runs[1] and runs[0][0][0] == 1  # the first pixel is mostly positive: class 1
