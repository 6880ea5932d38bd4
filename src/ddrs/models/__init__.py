"""Models: architecture registry, our checkpoint format, and import of published checkpoints.

Every model is ``nn.Sequential(Normalize(mean, std), net)``: noise is added in pixel space.
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
