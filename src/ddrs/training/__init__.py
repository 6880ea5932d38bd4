"""Training randomized-smoothing classifiers with fixed or data-dependent σ (DDRS §3.6, §4).

- :mod:`methods`: one loss per method (COHEN, SMOOTHADV, MACER, uniform noise) taking a σ per example;
- :mod:`data_dependent`: the per-example σ table and the Algorithm 2 batch update;
- :mod:`trainer`: the resumable epoch loop; :mod:`config`: every hyper-parameter.
"""

from ddrs.training.config import METHOD_NAMES, TRAIN_MODES, TrainConfig, read_yaml
from ddrs.training.data_dependent import IndexedDataset, SigmaTable, optimize_batch_scale, top_class
from ddrs.training.methods import (
    METHODS,
    cohen_loss,
    get_method,
    macer_loss,
    macer_objective,
    smoothadv_attack,
    smoothadv_loss,
    smoothadv_radius,
    smoothed_nll,
    uniform_loss,
)
from ddrs.training.trainer import LOG_COLUMNS, Trainer, evaluate, load_sigma_table, train

__all__ = [
    "LOG_COLUMNS",
    "METHODS",
    "METHOD_NAMES",
    "TRAIN_MODES",
    "IndexedDataset",
    "SigmaTable",
    "TrainConfig",
    "Trainer",
    "cohen_loss",
    "evaluate",
    "get_method",
    "load_sigma_table",
    "macer_loss",
    "macer_objective",
    "optimize_batch_scale",
    "read_yaml",
    "smoothadv_attack",
    "smoothadv_loss",
    "smoothadv_radius",
    "smoothed_nll",
    "top_class",
    "train",
    "uniform_loss",
]
