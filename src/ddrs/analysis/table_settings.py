"""The tables' statistics, from the config's ``statistics`` section (issue 19).

``alpha`` is the level of every interval (1 − α) and of every test behind bold cells and
comparisons; ``n_boot`` the bootstrap resamples of the ACR intervals; the seed is the config's
``seed``: together the builders' :class:`~ddrs.analysis.stats.Inference`. ``selection`` says which
selections of the best tables are built (:data:`~ddrs.analysis.evidence.SELECTIONS`: ``test``, the
paper's, and ``held_out``, a seeded half chooses and the other half reports). The defaults here are
the schema's (``config/schema/config.schema.yaml``; a test checks they agree).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ddrs.analysis.evidence import SELECTIONS
from ddrs.analysis.stats import DEFAULT_INFERENCE, Inference


@dataclass(frozen=True)
class TableStatistics:
    """The builders' inference and the selections of the best tables that are built; checked when built."""

    inference: Inference = DEFAULT_INFERENCE
    selection: tuple[str, ...] = SELECTIONS

    def __post_init__(self):
        unknown = sorted(set(self.selection) - set(SELECTIONS))
        if unknown or not self.selection or len(set(self.selection)) != len(self.selection):
            choices = list(SELECTIONS)
            raise ValueError(f"statistics.selection must list distinct ones of {choices}, got {list(self.selection)}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> TableStatistics:
        """The ``statistics`` section of a validated config (absent keys: the defaults) and its ``seed``."""
        section = dict(config.get("statistics") or {})
        selection = tuple(section.pop("selection", SELECTIONS))
        return cls(Inference(**section, seed=config["seed"]), selection)

    def builds(self, selection: str) -> bool:
        """Whether the best tables chosen under ``selection`` are built."""
        return selection in self.selection

    @property
    def alpha(self) -> float:
        """The level of the intervals and tests (captions state it)."""
        return self.inference.alpha
