"""Training randomized-smoothing classifiers with fixed or data-dependent σ (DDRS §3.6, §4).

- :mod:`losses`: one loss per method of the registry (:mod:`ddrs.methods`) taking a σ per example;
  :mod:`consistency` (Jeong & Shin 2020) and :mod:`easy_focus` (Sun et al. 2024) hold the larger ones;
- :mod:`epoch_plan`: the epoch-level hook a method may name (which inputs an epoch visits);
- :mod:`correctness`: p_A of a training input's label from noisy draws; :mod:`gradient_norms`:
  per-input loss-gradient norms of easy and hard inputs (Sun et al. 2024, Table 1);
- :mod:`data_dependent`: the per-example σ table and the Algorithm 2 batch update;
- :mod:`loader_feed`: the ``loader`` feed, the training DataLoader (augmentation keyed per input, persistent workers);
  :mod:`device_feed`: the training split held on the training device, augmented there per epoch;
- :mod:`trainer`: the resumable epoch loop; :mod:`config`: every hyper-parameter.

The names below load their module on first use (PEP 562), so ``ddrs.training.config`` — what
``ddrs train`` builds its parser from — imports without torch.
"""

from importlib import import_module

_MODULE_OF = {
    "TrainConfig": "config",
    "read_yaml": "config",
    "consistency_loss": "consistency",
    "consistency_objective": "consistency",
    "consistency_term": "consistency",
    "mean_prediction_entropy": "consistency",
    "smoothadv_consistency_loss": "consistency",
    "correct_counts": "correctness",
    "SigmaTable": "data_dependent",
    "optimize_batch_sigma": "data_dependent",
    "top_class": "data_dependent",
    "EasyFocusPlan": "easy_focus",
    "adaptive_attack": "easy_focus",
    "easy_focus_loss": "easy_focus",
    "first_focus_epoch": "easy_focus",
    "radius_weights": "easy_focus",
    "reference_lower_bound": "easy_focus",
    "DeviceFeed": "device_feed",
    "EpochPlan": "epoch_plan",
    "EpochSampler": "loader_feed",
    "IndexedDataset": "loader_feed",
    "training_loader": "loader_feed",
    "attacked_nll": "losses",
    "cohen_loss": "losses",
    "macer_deferred": "losses",
    "macer_loss": "losses",
    "macer_objective": "losses",
    "smoothadv_attack": "losses",
    "smoothadv_loss": "losses",
    "smoothadv_radius": "losses",
    "smoothed_nll": "losses",
    "stability_loss": "losses",
    "stability_objective": "losses",
    "uniform_loss": "losses",
    "LOG_COLUMNS": "trainer",
    "Trainer": "trainer",
    "evaluate": "trainer",
    "load_sigma_table": "trainer",
    "train": "trainer",
}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
