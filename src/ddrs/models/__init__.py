"""Models: architecture registry, our checkpoint format, and import of published checkpoints.

Every model is ``nn.Sequential(Normalize(mean, std), net)``: noise is added in pixel space. Its
output is read as logits; a network released with a softmax head (``resnet18_ddrs``) is followed by
the module that turns its probabilities into the log its authors' loss takes (:mod:`~ddrs.models.ddrs_resnet`).
"""

from ddrs.models.checkpoint import load_checkpoint, save_checkpoint, unwrap
from ddrs.models.normalize import Normalize
from ddrs.models.published import SOURCES, import_published
from ddrs.models.registry import ARCHS, ArchInfo, build_model

__all__ = [
    "ARCHS",
    "SOURCES",
    "ArchInfo",
    "Normalize",
    "build_model",
    "import_published",
    "load_checkpoint",
    "save_checkpoint",
    "unwrap",
]
