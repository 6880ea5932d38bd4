"""The soundness ledger (issue 69): what the certificate audit (:mod:`ddrs.jobs.audit`) found in table 1's
certificates, per row and σ₀, and per classifier: fixed σ (Cohen et al.), DDRS without memory (Algorithm 1 at
every query, the attacker's query alone) and DDRS with Algorithm 3's memory after the test set.

Per (row, σ₀, classifier): the certificates audited, those with a confirmed violation (PREDICT at x returned c,
at a candidate x′ inside the radius another class at its level), their share with an exact Clopper–Pearson
interval (:func:`ddrs.core.binomial.clopper_pearson`), the bound a sound certificate keeps (2α: CERTIFY's α and
the confirmations' α), the violations by attack, the certificates not broken where PREDICT abstained at a
candidate (the attack reached where the smoothed classifier is undecided), the distance ‖x′ − x‖ at which
violations were found and the radius of the certificates they broke. For the data-dependent classifier, the
empirical semi-elasticity of σ along the attack paths, max over each path's points of |log σ*ₓ′ − log σ*ₓ| /
‖x′ − x‖ (Súkeník et al. 2022's semi-elasticity, log σ's Lipschitz constant, measured on the paths), beside
what their framework needs: the largest semi-elasticity under which their certificate, at the certificate's σ
and p̲ in the input's dimension, still reaches half the radius
(:func:`ddrs.core.semi_elastic.max_semi_elasticity`) and the share of the radius their certificate gives at the
measured semi-elasticity, and Algorithm 1's own noise at x: the median
|log σ̃ₓ − log σ*ₓ| of a rerun at x itself, which the ratio carries too. No torch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy.special import ndtr

from ddrs.analysis.log_record import LogRecord
from ddrs.core.audit_settings import ATTACKS
from ddrs.core.binomial import clopper_pearson
from ddrs.core.certificate import ABSTAIN
from ddrs.core.semi_elastic import max_semi_elasticity, semi_elastic_radius

CLASSIFIERS = {"fs": "fixed σ", "ds": "Algorithm 1", "memory": "Algorithm 1 + memory"}


def _found(audit: pd.DataFrame, memory: bool) -> pd.DataFrame:
    """Per certificate and attack: whether it broke the certificate, at which distance (one column pair each)."""
    found = pd.DataFrame(index=audit.index)
    for attack in ATTACKS:
        distance = audit[f"{attack}_distance"]
        if memory:
            answer = audit[f"{attack}_memory"]
            broke = (distance < audit["memory_radius"]) & (answer != audit["memory_predict"]) & (answer != ABSTAIN)
        else:
            broke = audit[f"{attack}_violation"].astype(bool)
        found[attack], found[f"{attack}_distance"] = broke, distance.where(broke)
    return found


def ledger_row(audit: pd.DataFrame, memory: bool, alpha: float) -> dict:
    """The counts, share and distances of one classifier's audit (``memory``: the memory classifier's
    certificates, those of a radius > 0)."""
    if memory:
        audit = audit[audit["memory_radius"] > 0]
    found = _found(audit, memory)
    broken = found[list(ATTACKS)].any(axis=1)
    count, violations = len(audit), int(broken.sum())
    low, high = clopper_pearson(violations, count, alpha) if count else (np.nan, np.nan)
    distances = found[[f"{attack}_distance" for attack in ATTACKS]].min(axis=1)[broken]
    radius = audit["memory_radius" if memory else "radius"][broken]
    answers = audit[[f"{attack}_{'memory' if memory else 'predict'}" for attack in ATTACKS]]
    return {
        "certificates": count, "violations": violations, "share": violations / count if count else np.nan,
        "share_low": float(low), "share_high": float(high),
        **{f"by_{attack}": int(found[attack].sum()) for attack in ATTACKS},
        "abstained": int(((answers == ABSTAIN).any(axis=1) & ~broken).sum()),
        "found_min": distances.min(), "found_median": distances.median(), "radius_median": radius.median(),
    }  # fmt: skip


#: the share of its radius at which a certificate asks what Súkeník et al.'s framework allows: at the radius
#: itself, Cohen's σΦ⁻¹(p̲), only a constant σ (r = 0) is allowed, and the inverse costs seconds near it
REACH = 0.5


def allowed_elasticity(audit: pd.DataFrame, dim: int) -> pd.Series:
    """Per certificate, the largest semi-elasticity r under which Súkeník et al.'s certificate (their
    Neyman–Pearson bound ξ < ½ between N(x, σ²I) and N(x′, σ′²I), as :mod:`ddrs.core.semi_elastic` writes
    it out) at the certificate's σ and p̲ = Φ(R/σ), in dimension ``dim``, still reaches :data:`REACH`·R
    (:func:`~ddrs.core.semi_elastic.max_semi_elasticity`). A path measured more elastic than that (the
    measured value is a lower bound on σ's semi-elasticity) leaves not even that part of R vouched for."""
    sigma = audit["scale"].astype(float)
    p_lower = ndtr(audit["radius"].astype(float) / sigma)
    triples = zip(REACH * audit["radius"].astype(float), p_lower, sigma, strict=True)
    allowed = [max_semi_elasticity(float(r), float(p), float(s), dim) for r, p, s in triples]
    return pd.Series(allowed, index=audit.index, dtype=float)


def sound_share(audit: pd.DataFrame, measured: pd.Series, dim: int) -> pd.Series:
    """Per certificate, the share of R that Súkeník et al.'s certificate gives at the ``measured``
    semi-elasticity (:func:`~ddrs.core.semi_elastic.semi_elastic_radius`): an upper bound on what their
    framework would certify of it, since σ's true semi-elasticity is at least the measured one."""
    sigma = audit["scale"].astype(float)
    p_lower = ndtr(audit["radius"].astype(float) / sigma)
    triples = zip(p_lower, sigma, measured, strict=True)
    radii = [semi_elastic_radius(float(p), float(s), float(r), dim) for p, s, r in triples]
    return pd.Series(radii, index=audit.index, dtype=float) / audit["radius"]


def elasticity(audit: pd.DataFrame, dim: int) -> dict:
    """The empirical semi-elasticity along the paths (median and max over certificates of each one's largest),
    what Súkeník et al.'s framework allows at :data:`REACH`·R (median) and the certificates measured beyond
    it, the share of R their certificate gives at the measured value (median), and Algorithm 1's noise at x
    (median |log σ̃ₓ − log σ*ₓ|)."""
    largest = audit[[f"{attack}_elasticity" for attack in ATTACKS]].max(axis=1)
    allowed = allowed_elasticity(audit, dim)
    noise = (np.log(audit["scale_rerun"]) - np.log(audit["scale"])).abs()
    return {
        "elasticity_median": largest.median(), "elasticity_max": largest.max(),
        "allowed_median": allowed.median(), "beyond_allowed": int((largest > allowed).sum()),
        "sound_share_median": sound_share(audit, largest, dim).median(), "sigma_noise": noise.median(),
    }  # fmt: skip


def soundness_ledger(
    records: Sequence[LogRecord], audits: Sequence[str | os.PathLike], alpha: float, certify_alpha: float, dim: int
) -> tuple[pd.DataFrame, Figure]:
    """The ledger table and figure of the audit logs ``audits``, one per record (the audited log's row,
    σ₀ and K); intervals at 1 − ``alpha``; a sound certificate's bound 2·``certify_alpha``; ``dim`` the
    input's dimension (Súkeník et al.'s allowed semi-elasticity depends on it)."""
    if len(records) != len(audits):
        raise ValueError(f"{len(records)} records but {len(audits)} audit logs")
    rows, loaded = [], []
    for record, path in zip(records, audits, strict=True):
        audit = pd.read_csv(path, sep="\t")
        keys = {"dataset": record.dataset, "variant": record.name, "sigma0": record.sigma0, "K": record.K}
        data_dependent = record.K is not None
        classifiers = ("ds", "memory") if data_dependent and "memory_violation" in audit.columns else ("ds",)
        for classifier in classifiers if data_dependent else ("fs",):
            row = {**keys, "classifier": CLASSIFIERS[classifier]}
            row |= ledger_row(audit, classifier == "memory", alpha) | {"bound": 2 * certify_alpha}
            row |= elasticity(audit, dim) if classifier == "ds" else {}
            rows.append(row)
        loaded.append((record, audit))
    table = pd.DataFrame(rows)
    table["K"] = table["K"].astype("Int64")
    return table, ledger_figure(table, loaded, dim)


def ledger_figure(table: pd.DataFrame, loaded: Sequence[tuple[LogRecord, pd.DataFrame]], dim: int) -> Figure:
    """Left: the share of certificates broken per σ₀ with its interval, one series per row and classifier,
    the bound dashed. Right: each audited data-dependent certificate's largest semi-elasticity along its
    paths against its radius, broken ones crossed, and in grey what Súkeník et al.'s certificate allows at half
    of it."""
    figure = Figure(figsize=(9.0, 3.4), layout="constrained")
    shares, slopes = figure.subplots(1, 2)
    series = table.groupby(["variant", "classifier"], sort=False)
    for offset, ((variant, classifier), rows) in enumerate(series):
        x = rows["sigma0"].to_numpy() * (1 + 0.04 * (offset - len(series) / 2))
        share, low, high = (rows[column].to_numpy(dtype=float) for column in ("share", "share_low", "share_high"))
        error = [share - low, high - share]
        label = variant if classifier in (CLASSIFIERS["fs"], CLASSIFIERS["ds"]) else f"{variant} + memory"
        shares.errorbar(x, share, yerr=error, marker="o", linestyle="none", capsize=3, label=label)
    shares.axhline(table["bound"].iloc[0], linestyle="--", color="grey", label="sound: 2α")
    sigmas = sorted(set(table["sigma0"]))
    shares.set(xscale="log", xlabel="σ₀", ylabel="share of certificates broken")
    shares.set_xticks(sigmas, labels=[f"{sigma:g}" for sigma in sigmas], minor=False)
    shares.set_xticks([], minor=True)
    shares.legend(fontsize="small")
    for record, audit in loaded:
        if record.K is None:
            continue
        largest = audit[[f"{attack}_elasticity" for attack in ATTACKS]].max(axis=1)
        broken = audit[[f"{attack}_violation" for attack in ATTACKS]].any(axis=1)
        dots = slopes.scatter(audit["radius"][~broken], largest[~broken], s=8, label=record.label)
        slopes.scatter(audit["radius"][broken], largest[broken], s=30, marker="x", color=dots.get_facecolor()[0])
        slopes.scatter(audit["radius"], allowed_elasticity(audit, dim), s=12, marker="_", color="grey")
    slopes.scatter([], [], s=12, marker="_", color="grey", label="allowed at R/2 (Súkeník et al.)")
    slopes.set(yscale="log", xlabel="certified radius R", ylabel="max |Δ log σ| / ‖x′ − x‖ on the paths")
    slopes.legend(fontsize="x-small")
    return figure
