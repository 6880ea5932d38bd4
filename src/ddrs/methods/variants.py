"""Variant names: a method trained with other hyper-parameters (:func:`variant_options`).

- an ablation variant ``easy_focus.discard+reweigh`` switches the method's ablation components
  (Sun et al. 2024, Table 3);
- a matched variant ``smoothadv@smoothadv_consistency`` takes the hyper-parameters a study
  requires the method to share with another method (``Method.matches``) from that method's
  section of the config: Jeong & Shin's SmoothAdv baseline runs the attack (steps, ζ, m,
  warm-up) of their SmoothAdv+Consistency (supplement A.3, App. B), Sun et al.'s Gaussian
  baseline the m of their method (§6: "We set m = 4 for Gaussian training and our method").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddrs.methods.names import MATCH_SEPARATOR, VARIANT_SEPARATOR
from ddrs.methods.registry import get_method


def variant_params(name: str) -> dict[str, bool]:
    """The ablation switches a variant name sets (``{}`` for a plain method name or a matched variant)."""
    if MATCH_SEPARATOR in name:
        return {}
    method, _, enabled = name.partition(VARIANT_SEPARATOR)
    if not enabled:
        return {}
    components = get_method(method).ablation
    on = set() if enabled == "none" else set(enabled.split("+"))
    if not on <= set(components):
        raise ValueError(f"{name!r}: {method}'s ablation components are {list(components)}, got {sorted(on)}")
    return {component: component in on for component in components}


def variant_options(name: str, train: Mapping[str, Any]) -> dict[str, Any]:
    """The hyper-parameters (a ``train.<method>`` section) the method or variant ``name`` trains with.

    ``train`` is the run's resolved ``train`` section (per-dataset and per-σ overrides merged),
    whose method-named keys hold each method's options. A plain name gives its own section; an
    ablation variant adds its switches; a matched variant ``<method>@<other>`` takes the fields
    it shares with ``other`` (``Method.matches``) from ``other``'s options, its defaults filled
    in, so both methods train with the same values whatever the config says for ``other``.
    """
    method = get_method(name)
    options = dict(train.get(method.name) or {})
    base, _, other = name.partition(MATCH_SEPARATOR)
    if other:
        if base != method.name:
            raise ValueError(f"{name!r}: a matched variant combines a plain method name with another method's")
        fields = method.matched_fields(other)
        source = get_method(other).make_params(train.get(other), source=f"{name}: {other}")
        options.update({field_name: getattr(source, field_name) for field_name in fields})
    else:
        options.update(variant_params(name))
    return options
