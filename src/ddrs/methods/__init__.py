"""Training methods: one registry entry per method (:mod:`~ddrs.methods.registry`), its
hyper-parameter class (:mod:`~ddrs.methods.hyperparameters`) and the names of its variants
(:mod:`~ddrs.methods.names`, resolved by :mod:`~ddrs.methods.variants`). Torch-free: the workflow,
the config schema and the tables read it without importing a loss."""

from ddrs.methods.hyperparameters import (
    DIVERGENCES,
    EASY_FOCUS_SCHEDULES,
    MACER_FORMS,
    SMOOTHADV_ATTACKS,
    STABILITY_DIVERGENCES,
    ConsistencyParams,
    EasyFocusParams,
    GaussianParams,
    MacerParams,
    NoParams,
    SmoothAdvConsistencyParams,
    SmoothAdvParams,
    StabilityParams,
)
from ddrs.methods.names import MATCH_SEPARATOR, VARIANT_SEPARATOR, base_name, matched_name, variant_name
from ddrs.methods.registry import METHODS, TRAIN_MODES, Method, get_method
from ddrs.methods.variants import variant_options, variant_params

__all__ = [
    "DIVERGENCES",
    "EASY_FOCUS_SCHEDULES",
    "MACER_FORMS",
    "MATCH_SEPARATOR",
    "METHODS",
    "SMOOTHADV_ATTACKS",
    "STABILITY_DIVERGENCES",
    "TRAIN_MODES",
    "VARIANT_SEPARATOR",
    "ConsistencyParams",
    "EasyFocusParams",
    "GaussianParams",
    "MacerParams",
    "Method",
    "NoParams",
    "SmoothAdvConsistencyParams",
    "SmoothAdvParams",
    "StabilityParams",
    "base_name",
    "get_method",
    "matched_name",
    "variant_name",
    "variant_options",
    "variant_params",
]
