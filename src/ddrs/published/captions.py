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
        "correct_mismatch, correct_not_binary, abstain_with_radius, negative_radius; findings says each in words "
        "(ddrs.published.audit)."
    )


def seed_table_caption() -> str:
    return (
        "A seed paper's table, cell by cell: printed is the cell as printed (transcribed in "
        "ddrs/reference/seed_papers.csv; source names the page, row, column and line of the text copy), "
        "recomputed the same cell from the logs named in logs (ddrs/reference/seed_paper_logs.csv; " + SOURCE + ") "
        "as the paper defines it: certified accuracy the share of rows with correct = 1 and radius ≥ r, ACR the "
        "mean of radius · correct. convention: the table's one rounding convention, fixed from the paper before "
        "any comparison (half-up: no seed paper states one; convention_evidence says so), never from the matches. "
        "Every verdict uses the run fixed in advance: the logs the mapping names, and for a row whose authors "
        "publish several runs without saying which is printed (combine one_of) the mapping's first candidate "
        "(logs names it). verdict: exact (the convention at the printed precision gives the printed value), "
        "mismatch (it does not; tried says what else was computed: other conventions, a strict radius > r, "
        "ddof 0, the other candidate runs, others' re-certification), trivial (a certified accuracy printed 0 "
        "beyond σ·Φ⁻¹(α^(1/n)), the largest radius the logs' n and α allow: no log could miss it), no_log (no "
        "published log backs the row). Chosen by matching, never a verdict, for a one_of row only: "
        "best_run_recomputed and best_run_verdict, the candidate run that reproduces most of the row's cells; "
        "candidates_exact, one digit per candidate run (1: exact); log_choice, the counts of each. What was "
        "chosen: the transcription, the mapping of rows to logs (from the repositories' own documentation), the "
        "run fixed in advance (the mapping's first: in the repository's path order but for four rows of Jeong "
        "& Shin's CIFAR-10 supplement, ddrs.published.paper_tables) and the convention; none of them was "
        "chosen by comparing with the printed numbers."
    )


def seed_verdicts_caption() -> str:
    return (
        "Cells per verdict of every seed table recomputed from its authors' published logs (the "
        "published_<paper>_<table> tables, which give every cell, its logs and what was tried). The first "
        "line is the total. exact and mismatch count every cell with a log under the run fixed in advance (a "
        "row's mapped logs; where the authors publish several runs of a row and do not say which is printed, "
        "the mapping's first candidate) and the table's rounding convention, fixed from the paper before any "
        "comparison (convention, convention_evidence); trivial cells (0 beyond the radius cap) are counted "
        "apart. several_runs: the non-trivial cells of rows with several candidate runs, several_runs_exact "
        "those exact under the run fixed in advance (counted in exact). Chosen by matching, not verdicts: "
        "candidates_best_exact, _average_exact and _worst_exact, each such row's exact count over its "
        "candidate runs (best, average, worst), summed. mismatched: the mismatched cells by row, σ and "
        "radius: printed → recomputed, rounded by the table's convention at the printed precision."
    )


def leaderboard_caption(alpha: float) -> str:
    return (
        "Every published method × σ on this dataset's test inputs, and the user's own logs (repository own). "
        + SOURCE
        + " Byte-identical logs count once, credited to the repository that produced them (the copy first "
        "committed, ddrs/published/origins.csv; log names it, also_at its copies). "
        "A method is its authors' name in one repository with one architecture on one set of test inputs; family "
        "and extra_data (training data beyond the dataset's training set) come from ddrs/published/families.csv. "
        "Its envelope row (sigma = envelope) is the best certified accuracy per radius over its logs (σ, and runs "
        "where several), with ACR_per_log (the best ACR of one log) and ACR_per_input_best (each input's best "
        "radius: an oracle); its logs follow, one row each (ACR). Certified accuracy (%) is the share of inputs "
        "with correct = 1 and radius ≥ r (Cohen et al. 2019, §4). Cells: value [low, high], "
        f"{100 * (1 - alpha):g}% intervals: exact Clopper–Pearson over the row's inputs (an envelope cell: that "
        "of the log that won it), seeded percentile bootstrap for ACR. Methods are ranked within their input set "
        "(input_set: the input order and the idx they certify; logs of other inputs, or of the same idx in another "
        "order, are not in one ranking) by the envelope's "
        "ACR_per_log; nothing is bold: the claims are in published_vs_gaussian."
    )


def vs_gaussian_caption(alpha: float) -> str:
    return (
        "Every published log against Gaussian training (Cohen et al.) at the same σ, on the test inputs both "
        "certify (inputs); a user's own log also against the best log of every family. Every test here compares "
        "two fixed models (one training run of each) on these inputs: it sees the noise of drawing inputs, not "
        "what another training run would change (published_replication gives that; published_headline "
        "counts wins beyond it). gaussian_pair: a Gaussian log against another Gaussian log of its σ; "
        "same_recipe: the two logs are two runs of one recipe (one method, repository, architecture, inputs and "
        "σ; Jeong & Shin's seeds), whose difference is run-to-run variation by construction. "
        + SOURCE
        + " Baseline rule (against = Gaussian), the same for every row: a Gaussian log certified at that σ from a "
        "model trained at it, in the same input order (input_orders.csv) with the same labels at every shared "
        "idx; first of the same input set, then of the "
        "same architecture, then of the log's own repository, then sharing the most inputs, then the first in "
        "registry order; baseline names it. against = Gaussian (Sun et al. 2024): the same rule over Sun et al.'s "
        "own Gaussian logs, where one applies. against = best <family>: the family's log sharing the most inputs, "
        "then of the highest ACR on them. Radius columns: difference of certified accuracy (percentage points) "
        "with the exact McNemar p-value; ACR: difference with its "
        f"{100 * (1 - alpha):g}% paired-bootstrap interval and the paired sign-flip p-value bounded by Hoeffding's "
        "inequality (valid at every n). p: Holm-adjusted over every test of the published logs (one family: "
        "every row, baseline, radius and ACR); a user's own logs' tests are a second family, so they move no "
        f"published p-value. Bold, better_at, worse_at: Holm p < α = {alpha:g}."
    )


def replication_caption(alpha: float) -> str:
    return (
        "How much two training runs of one recipe differ in ACR, from the authors' replicated recipes. "
        + SOURCE
        + " A recipe is a published method (its authors' name in one repository, one architecture, one input "
        "set) at one σ; its runs are its logs there of distinct registry run names (Jeong & Shin's --id seeds). "
        "kind = recipe: its runs (run, and their logs), their mean ACR and SD (ACR_sd, ddof 1; its own spread "
        "where it has ≥ 3 runs). kind = pooled, one row per σ of the dataset's logs: s_run (ACR_sd), the pooled "
        "within-recipe SD of ACR over runs (one-way ANOVA residual mean square, df = Σ (runs − 1) over the "
        "recipes with ≥ 2 runs); levene_p, Levene's test (median-centred) that the recipes with their own spread "
        f"share one run variance; and margin_rule: pooled where it does not reject at α = {alpha:g} (margin = "
        "t(1 − α/2, df) · √2 · s_run, two-sided: the |ΔACR| two single runs of one recipe exceed with "
        "probability α), per recipe where it does (no pooled margin: a comparison's margin is "
        "t(1 − α/2, ν) · √(s_a² + s_b²) from the spreads of its two recipes, Welch–Satterthwaite ν, and a "
        "comparison with a recipe of no own spread has none); note = no replication data where the σ has no "
        "replicated recipe (no margin is carried over from another dataset). kind = pair, every two runs of "
        "one recipe: ACR_difference (first − second) on their shared inputs, the paired sign-flip p bounded by "
        "Hoeffding's inequality (p) and Holm-adjusted over the table's pairs (p_holm; significant_per_input: "
        "p_holm < α): a comparison of two fixed models; margin, the σ's pooled margin estimated without the "
        "pair's own recipe, and beyond_runs, whether |ΔACR| exceeds it (empty where no other recipe is "
        "replicated at that σ)."
    )


def headline_caption(alpha: float) -> str:
    return (
        "The leaderboard's headline, from published_vs_gaussian and published_replication. Rows: per Gaussian "
        "baseline (against; the baseline rule's again on the logs Sun et al.'s Gaussian applies to) over every "
        "family (family = all), then one row per family and extra training data under the rule's baseline. "
        "compared: published logs other than Gaussian ones with a baseline (not_compared: none at their σ and "
        "inputs); methods: the methods among them (a repository's name with one architecture). better_ACR / "
        f"worse_ACR: logs significantly better / worse on ACR (Holm over the published logs, p < α = {alpha:g}), "
        "a comparison of two fixed models on the test inputs, blind to the variation between training runs. "
        "better_ACR_beyond_runs counts a log only where it is significantly better and its ΔACR also exceeds the "
        "run-level margin of its comparison (published_replication): at a σ whose replicated recipes share one "
        "run variance (Levene's test does not reject), t(1 − α/2, df) · √2 · s_run with s_run the pooled SD of "
        "ACR between runs; at one where they do not, t(1 − α/2, ν) · √(s_log² + s_baseline²) from the spreads "
        "of the two recipes compared (each with ≥ 3 runs; Welch–Satterthwaite ν), none otherwise. run_margin "
        "says which rule each σ's wins were tested against (with Levene's p), beyond_runs_by_margin how many "
        "wins each gave of the logs it could test; compared_with_margin, the compared logs with a margin, and "
        "beyond_runs_rate their share beyond it; "
        "methods_better_beyond_runs, the methods with such a log. Where the dataset has no replicated recipe, "
        "run_margin says no replication data and the counts beyond runs are empty: no margin is invented or "
        "carried over from another dataset. gaussian_vs_gaussian: the Gaussian logs compared with another "
        "Gaussian log of the same σ from another run or repository (architectures not known to differ, neither "
        "trained at another σ); gaussian_vs_gaussian_better, those significantly better by the per-input test, "
        "their rate, and gaussian_vs_gaussian_beyond_runs, those also beyond the run-level margin. Gaussian "
        "logs are not counted among the methods (gaussian_compared, gaussian_better_ACR: apart); a user's own "
        "logs are not counted."
    )
