"""The sizes of the certificate audit (issue 69; :mod:`ddrs.core.attack`, :mod:`ddrs.jobs.audit`), as plain
values: torch-free, so the workflow builds and checks them with the DAG."""

from __future__ import annotations

from dataclasses import asdict, dataclass

#: the audit's two attacks, in the order each certificate runs them; an audit log's columns are named after them
ATTACKS = ("pgd", "line")


@dataclass(frozen=True, kw_only=True)
class AuditSettings:
    """How hard the audit attacks each certificate and how it confirms what it finds.

    The first ``inputs`` certified rows of a log (``idx`` order, radius > 0) are audited. The PGD attack
    takes ``steps`` steps, each on the soft smoothed classifier estimated from ``draws`` noise draws; the
    line search tries ``line_points`` points toward the nearest training input of another class, each
    screened with ``draws`` draws. Every candidate, and the certified input itself, is then put to
    Cohen et al.'s PREDICT with ``n`` fresh draws.
    """

    inputs: int = 50
    steps: int = 10
    draws: int = 8
    line_points: int = 8
    n: int = 1000

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
                raise ValueError(f"audit {name} must be an integer >= 1, got {value!r}")
