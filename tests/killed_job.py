"""A model that crashes part-way through a run, as a killed job would: for resumption tests."""

from torch import nn


class FailsAfter(nn.Module):
    """The wrapped model, crashing on forward call number ``calls + 1``."""

    def __init__(self, model: nn.Module, calls: int):
        super().__init__()
        self.model, self.calls = model, calls

    def forward(self, x):
        if self.calls == 0:
            raise RuntimeError("simulated crash")
        self.calls -= 1
        return self.model(x)
