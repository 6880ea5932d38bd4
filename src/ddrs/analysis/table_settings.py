"""The tables' statistics, from the config's ``statistics`` section (issue 19).

``alpha`` is the level of every interval (1 − α) and of every test behind bold cells and
comparisons; ``n_boot`` the bootstrap resamples of the ACR intervals; ``selection`` which selections
of the best tables are built (:data:`~ddrs.analysis.evidence.SELECTIONS`: ``test``, the paper's,
and ``held_out``, a seeded half chooses and the other half reports). The seed is the config's
``seed``. The defaults here are the schema's (``config/schema/config.schema.yaml``; a test checks
they agree).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ddrs.analysis.evidence import SELECTIONS


@dataclass(frozen=True)
class TableStatistics:
    """Interval level, bootstrap size, seed and selections of the tables; checked when built."""

    alpha: float = 0.05
    n_boot: int = 2000
    selection: tuple[str, ...] = SELECTIONS
    seed: int = 0

    def __post_init__(self):
        if not 0 < self.alpha < 1:
            raise ValueError(f"statistics.alpha must lie in (0, 1), got {self.alpha}")
        if int(self.n_boot) != self.n_boot or self.n_boot < 1:
            raise ValueError(f"statistics.n_boot must be a positive integer, got {self.n_boot}")
        unknown = sorted(set(self.selection) - set(SELECTIONS))
        if unknown or not self.selection or len(set(self.selection)) != len(self.selection):
            choices = list(SELECTIONS)
            raise ValueError(f"statistics.selection must list distinct ones of {choices}, got {list(self.selection)}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> TableStatistics:
        """The ``statistics`` section of a validated config (absent keys: the defaults) and its ``seed``."""
        section = dict(config.get("statistics") or {})
        if "selection" in section:
            section["selection"] = tuple(section["selection"])
        return cls(**section, seed=config["seed"])

    def builds(self, selection: str) -> bool:
        """Whether the best tables chosen under ``selection`` are built."""
        return selection in self.selection

    @property
    def arguments(self) -> dict[str, Any]:
        """The builders' keyword arguments: ``alpha``, ``seed``, ``n_boot``."""
        return {"alpha": self.alpha, "seed": self.seed, "n_boot": self.n_boot}
