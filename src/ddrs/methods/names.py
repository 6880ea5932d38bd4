"""How a variant of a method is named: ``easy_focus.discard+reweigh`` (an ablation) and
``smoothadv@smoothadv_consistency`` (a matched baseline); :mod:`ddrs.methods.variants` resolves them."""

from __future__ import annotations

from collections.abc import Sequence

#: Between a method's name and its ablation components in a variant's name (:func:`variant_name`).
VARIANT_SEPARATOR = "."
#: Between a method's name and the method it is matched to in a matched variant's name (:func:`matched_name`).
MATCH_SEPARATOR = "@"


def variant_name(method: str, enabled: Sequence[str]) -> str:
    """``easy_focus.discard+reweigh``: a method with only the ``enabled`` ablation components on."""
    return f"{method}{VARIANT_SEPARATOR}{'+'.join(enabled) or 'none'}"


def matched_name(method: str, other: str) -> str:
    """``smoothadv@smoothadv_consistency``: ``method`` with the hyper-parameters it shares with ``other``."""
    return f"{method}{MATCH_SEPARATOR}{other}"


def base_name(name: str) -> str:
    """The method a plain, ablation or matched variant name trains."""
    return name.partition(MATCH_SEPARATOR)[0].partition(VARIANT_SEPARATOR)[0]
