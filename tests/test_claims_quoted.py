"""One verdict per claim, wherever it is quoted: the README's and docs/protocol.md's verdicts of the
default's claims are what the claims table decides from the recorded run (the record of
``benchmarks/replication_checks.py`` that docs/protocol.md cites), decided again here by
:func:`ddrs.analysis.claims.decide` from the recorded tests."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
from workflow_helpers import REPO

from ddrs.analysis.claims import decide

PROTOCOL = (REPO / "docs" / "protocol.md").read_text()
README = (REPO / "README.md").read_text()
#: the README's short names of the seed claims (their names in ddrs.pipeline.queries.seed_claims)
README_NAMES = {
    "DS > FS in ACR per log": "σ per input (DS) beats fixed σ (FS) in ACR",
    "DS² > DS": "training with Algorithm 2 (DS²) beats DS in ACR",
    "consistency > Gaussian in ACR": "consistency regularization beats Gaussian training in ACR",
    "ACR-focused > Gaussian in ACR": "ACR-focused training beats Gaussian training in ACR",
    "its clean accuracy not above Gaussian's": "… with clean accuracy not above Gaussian training's",
}
#: docs/protocol.md's table of the default's claims follows this heading (the Cohen-IDRS section has another)
DEFAULT = "**On the default** (five runs"


def sigma_label(sigma0) -> str:
    """σ₀ as the docs print it: ``–`` for a best row (no σ₀)."""
    return "–" if sigma0 is None or pd.isna(sigma0) else f"{float(sigma0):g}"


def recorded_claims() -> pd.DataFrame:
    """The claims table of the one record docs/protocol.md cites, indexed by (claim, σ₀ label)."""
    cited = set(re.findall(r"benchmarks/measured/replication_checks-[\w.-]+\.json", PROTOCOL))
    assert len(cited) == 1, f"docs/protocol.md should cite one record of replication_checks, cites {cited}"
    frame = pd.DataFrame(json.loads((REPO / cited.pop()).read_text())["figures"]["claims"])
    for column in ("p", "p_fixed_inputs", "p_holm", "p_fixed_inputs_holm"):
        frame[column] = frame[column].astype(float)
    return frame.set_index(pd.MultiIndex.from_arrays([frame["claim"], frame["sigma0"].map(sigma_label)]))


def readme_verdicts() -> dict[tuple[str, str], str]:
    """The README's quoted verdicts: ``name (σ 0.25, 0.5): **verdict**``, then ``, (σ 1): **verdict**``
    for the same name, or ``name: **verdict**`` for a claim of no σ₀."""
    section = README.split("## Claims about methods: training runs", 1)[1].split("\n## ", 1)[0]
    text, quoted, name, start = " ".join(section.split()), {}, None, 0
    for verdict in re.finditer(r"\*\*(?P<verdict>[^*]+)\*\*", text):
        before = re.search(r"(?P<name>[^;:,(]*?)\s*(?:\(σ (?P<sigmas>[^)]*)\))?:\s*$", text[start : verdict.start()])
        name, start = before["name"].strip() or name, verdict.end()
        for sigma in before["sigmas"].split(", ") if before["sigmas"] else ["–"]:
            quoted[README_NAMES[name], sigma] = verdict["verdict"]
    return quoted


def protocol_rows() -> pd.DataFrame:
    """docs/protocol.md's table of the default's claims (after :data:`DEFAULT`), indexed like the record."""
    table = PROTOCOL.split(DEFAULT, 1)[1].split("\n\n")[1]
    rows = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in table.splitlines()[2:]]
    columns = ["claim", "sigma0", "effect", "p_fixed_inputs_holm", "p_holm", "verdict", "runs_needed"]
    return pd.DataFrame(rows, columns=columns).set_index(["claim", "sigma0"])


def test_the_recorded_verdicts_are_what_the_claims_table_decides_from_the_recorded_tests():
    recorded = recorded_claims()
    decided = decide(recorded.drop(columns=["p_holm", "p_fixed_inputs_holm", "verdict"]), alpha=0.05)
    assert decided["verdict"].tolist() == recorded["verdict"].tolist()
    np.testing.assert_allclose(decided["p_holm"], recorded["p_holm"], rtol=1e-12)


def test_the_readme_quotes_the_claims_table_s_verdicts_of_every_testable_claim():
    recorded = recorded_claims()
    quoted = readme_verdicts()
    assert set(quoted) == set(recorded.index[recorded["runs"] >= 2])
    assert quoted == recorded.loc[list(quoted), "verdict"].to_dict()


def test_docs_protocol_tabulates_every_claim_with_the_claims_table_s_verdict_and_tests():
    recorded, rows = recorded_claims(), protocol_rows()
    assert rows.index.tolist() == recorded.index.tolist()
    assert rows["verdict"].tolist() == recorded["verdict"].tolist()
    for column in ("p_fixed_inputs_holm", "p_holm"):
        assert rows[column].tolist() == ["–" if np.isnan(p) else f"{p:.2g}" for p in recorded[column]]
    places = recorded["metric"].map(lambda metric: 3 if metric.startswith("ACR") else 1)
    assert rows["effect"].str.split(" ").str[0].tolist() == [
        f"{effect:+.{k}f}" for effect, k in zip(recorded["effect"], places, strict=True)
    ]
