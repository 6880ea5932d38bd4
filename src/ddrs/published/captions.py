"""Captions of the published-logs tables (Markdown and LaTeX): where every number comes from."""

from __future__ import annotations

#: where every published log comes from, said once
SOURCE = (
    "Logs: the authors' Cohen-format certification logs in their public repositories, at the commit and "
    "sha256 the shipped registry (ddrs/published/logs.csv) pins, fetched by this run (or read from local "
    "mirrors) and checked against that sha256."
)


def audit_caption() -> str:
    return (
        "Audit of every fetched published log, one row per log (repository, path). "
        + SOURCE
        + " rows: rows read; expected_rows: what the stride (the registry's skip, else the idx step) implies over "
        "the dataset's test set; flags: header_only, cut_short, starts_late, missing_inside, idx_out_of_range, "
        "stride_mismatch, non_monotone_idx, duplicate_of (byte-identical logs under other names), mixed_time, "
        "label_conflicts (labels against the majority of the same dataset's logs at the same idx), "
        "impossible_radius (above σ·Φ⁻¹(α^(1/n)), the largest radius CERTIFY can give with the registry's n and α), "
        "correct_mismatch, abstain_with_radius, negative_radius; findings says each in words "
        "(ddrs.published.audit)."
    )


def seed_table_caption() -> str:
    return (
        "A seed paper's table, cell by cell: printed is the cell as printed (transcribed in "
        "ddrs/reference/seed_papers.csv; source names the page, row, column and line of the text copy), "
        "recomputed the same cell from the logs named in logs (ddrs/reference/seed_paper_logs.csv; " + SOURCE + ") "
        "as the paper defines it: certified accuracy the share of rows with correct = 1 and radius ≥ r, ACR the "
        "mean of radius · correct. convention: the table's one rounding convention, half-up unless its cells "
        "whose log was fixed in advance show one other (one that keeps every cell half-up makes exact, adds "
        "some, and covers every other such convention; convention_evidence counts the cells each convention "
        "makes exact). verdict: "
        "exact (the convention at the printed precision gives the printed value), mismatch (it does not; "
        "tried says what else was computed: other conventions, a strict radius > r, ddof 0, other runs, "
        "others' re-certification), trivial (a certified accuracy printed 0 beyond σ·Φ⁻¹(α^(1/n)), the largest "
        "radius the logs' n and α allow: no log could miss it), identified (the row's run was chosen among "
        "several published runs by matching, log_choice: identified_as is its verdict with that run, "
        "recomputed_fixed and fixed_verdict those with the run fixed in advance, the mapping's first, and "
        "candidates_exact one digit per candidate run, 1 where it gives the printed value), no_log (no "
        "published log backs the row). Nothing is tuned toward the printed number."
    )


def seed_verdicts_caption() -> str:
    return (
        "Cells per verdict of every seed table recomputed from its authors' published logs (the "
        "published_<paper>_<table> tables, which give every cell, its logs and what was tried). The first "
        "line is the total: exact and mismatch count only cells whose log was fixed in advance, under each "
        "table's one rounding convention (convention, with convention_evidence: the cells fixed in advance "
        "that each convention makes exact); trivial cells (0 beyond the radius cap) and identified cells "
        "(a run chosen among several by matching) are counted apart. For the identified cells: "
        "identified_fixed_exact, exact with the run fixed in advance (the mapping's first candidate); "
        "identified_best, _average and _worst, each row's exact count over its candidate runs, summed. "
        "mismatched: the mismatched cells by row, σ and radius: printed → recomputed, rounded by the "
        "table's convention at the printed precision."
    )


def leaderboard_caption(alpha: float) -> str:
    return (
        "Every published method × σ on this dataset's test inputs. "
        + SOURCE
        + " Byte-identical logs count once, under their first name in registry order (also_at names the copies). "
        "A method is its authors' name in one repository with one architecture on one set of test inputs; its "
        "envelope row (sigma = envelope) is the best certified accuracy per radius over its logs (σ, and runs "
        "where several), with ACR_per_log (the best ACR of one log) and ACR_per_input_best (each input's best "
        "radius: an oracle); its logs follow, one row each (ACR). Certified accuracy (%) is the share of inputs "
        "with correct = 1 and radius ≥ r (Cohen et al. 2019, §4). Cells: value [low, high], "
        f"{100 * (1 - alpha):g}% intervals: exact Clopper–Pearson over the row's inputs (an envelope cell: that "
        "of the log that won it), seeded percentile bootstrap for ACR. Methods are ranked by the envelope's "
        "ACR_per_log; nothing is bold: the claims are in published_vs_gaussian."
    )


def vs_gaussian_caption(alpha: float) -> str:
    return (
        "Every published log against Gaussian training (Cohen et al.) at the same σ, on the test inputs both "
        "certify (inputs). "
        + SOURCE
        + " Baseline: a Gaussian log certified at that σ from a model trained at it, with the same labels at every "
        "shared idx; first one the log's own repository publishes, then of the same architecture, then the one "
        "sharing the most inputs, then the first in registry order. Radius columns: difference of certified "
        "accuracy (percentage points) with the exact McNemar p-value; ACR: difference with its "
        f"{100 * (1 - alpha):g}% paired-bootstrap interval and the paired sign-flip permutation p-value. p: "
        "Holm-adjusted over one method at one σ (its logs × every radius and ACR), not across the leaderboard's "
        f"methods (the raw _p columns allow any other family). Bold, better_at, worse_at: Holm p < α = {alpha:g}."
    )
