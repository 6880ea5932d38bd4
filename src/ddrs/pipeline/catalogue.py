"""The catalogue of the paper's tables and figures (no torch): one :class:`~ddrs.pipeline.target.Target`
entry per family, as data.

An entry names everything about one table or figure family once: its output name pattern (whose
``{wildcards}`` are the rule's), its builder (``module:function``, imported only by the job, so the
catalogue stays torch-free), its caption and report category, and which questions of
:mod:`ddrs.pipeline.queries` pick its instances, records, files, parameters and caption. The
workflow generates one rule per entry (``rules/tables.smk``) and one command runs them all
(``ddrs build`` → :func:`ddrs.pipeline.build.run_step` → :func:`ddrs.pipeline.build.build`).

Adding a table: write its builder (records and keyword parameters in, a DataFrame or
:class:`~ddrs.analysis.tables.BestTable` out), add one entry here, and its caption under ``report/``;
a new way of picking logs is one more query in :mod:`ddrs.pipeline.queries` (and, when it is a new
selection of the run grid's logs, in :class:`~ddrs.pipeline.records.Records`).
"""

from __future__ import annotations

from ddrs.pipeline import audit_plan as audit
from ddrs.pipeline import queries as q
from ddrs.pipeline.target import FIGURE, TABLE, Target
from ddrs.published import captions

#: Sun et al. (2024), Tables 1 and 2, Figure 3: Gaussian, MACER, SmoothAdv, Consistency and ACR-focused
#: training; their Gaussian baseline draws m = 4 as their method (§6), the matched variant cohen@easy_focus
SUN2024_METHODS = ("cohen@easy_focus", "macer", "smoothadv", "consistency", "easy_focus")
#: Jeong & Shin (2020), Table 2: per σ, Gaussian, + Consistency, SmoothAdv, + Consistency, Stability
#: training and MACER; their SmoothAdv shares the attack of SmoothAdv+Consistency (supplement A.3, App. B)
JEONG2020_METHODS = (
    "cohen",
    "consistency",
    "smoothadv@smoothadv_consistency",
    "smoothadv_consistency",
    "stability",
    "macer",
)
#: the sequential comparison's columns of values (not radii or counts)
SEQUENTIAL_MEASURED = (
    *(f"{mode}{part}" for mode in ("fixed", "sequential") for part in ("", "_low", "_high")),
    "difference", "mcnemar_p", "mcnemar_p_holm", "acr_fixed", "acr_sequential", "acr_fixed_grid", "acr_sequential_grid",
    *(f"passes_{mode}_{stat}" for mode in ("fixed", "sequential") for stat in ("mean", "median", "p99")),
    "undecided_at_cap", "seconds_fixed", "seconds_sequential",
)  # fmt: skip
#: the soundness ledger's columns of values (not counts)
LEDGER_MEASURED = (
    "share", "share_low", "share_high", "bound", "found_min", "found_median", "radius_median",
    "elasticity_median", "elasticity_max", "allowed_median", "sound_share_median", "sigma_noise",
)  # fmt: skip
TABLES = "ddrs.analysis.tables"
REPLICATION = "ddrs.analysis.replication"
COMPARISONS = "ddrs.analysis.comparisons"
PLOTS = "ddrs.analysis.plots"
FIGURES = "ddrs.analysis.figure_builders"


def best_table(selection: str) -> Target:
    """DDRS Tables 1–4: the best certified accuracy per radius, its cells chosen as ``selection``."""
    suffix = "" if selection == "test" else f"_{selection}"
    return Target(
        f"best_table{suffix}",
        f"{{table}}{suffix}",
        f"{TABLES}:best_table",
        f"best_table{suffix}",
        "Best per radius",
        outputs=(*TABLE, "winners"),
        instances=q.selected(selection),
        records=q.table_records,
        params=q.best_table_params(selection),
        caption_of=q.best_caption(selection),
    )


def best_table_comparisons(selection: str) -> Target:
    """A best table's paired comparisons (DS vs FS, DS² vs DS and FS), its cells selected as ``selection``."""
    suffix = "" if selection == "test" else f"_{selection}"
    return Target(
        f"comparisons{suffix}_table",
        f"comparisons_{{table}}{suffix}",
        f"{COMPARISONS}:comparisons_table",
        "comparisons",
        "Paired comparisons",
        instances=q.selected(selection),
        records=q.table_records,
        params=q.best_table_params(selection),
        caption_of=q.comparisons_caption_of(selection),
    )


def study_table(name: str, pattern: str, methods: tuple[str, ...] = (), requires: tuple[str, ...] = ()) -> Target:
    """A seed paper's per-σ study: fixed-σ certification of each of ``methods`` side by side."""
    return Target(
        name,
        pattern,
        f"{TABLES}:per_sigma_table",
        "study_table",
        "Seed papers",
        methods=methods,
        requires=requires,
        instances=q.studied_datasets,
        records=q.study_records,
        params=q.l2_radii,
    )


def study_comparisons(name: str, study: Target, baseline: q.Query) -> Target:
    """Each row of ``study`` (a per-σ table) against ``baseline``'s row at the same σ₀, on the study's
    logs; built where the study has the baseline row and another one."""

    def has_pairs(exp, wildcards) -> bool:
        names = {record.name for record in study.query(exp, wildcards)}
        return baseline(exp, study, wildcards["dataset"]) in names and len(names) > 1

    return Target(
        name,
        f"comparisons_{study.pattern}",
        f"{COMPARISONS}:study_comparisons_table",
        "study_comparisons",
        "Paired comparisons",
        instances=lambda exp, t: [w for w in study.instances(exp, study) if has_pairs(exp, w)],
        records=lambda exp, t, dataset: study.query(exp, {"dataset": dataset}),
        params=lambda exp, t, dataset: {**q.l2_radii(exp, t), "baseline": baseline(exp, study, dataset)},
        caption_of=lambda exp, records: q.study_comparisons_caption(exp, baseline(exp, study, records[0].dataset)),
    )


def replicated_best_table(selection: str, comparisons: bool = False) -> Target:
    """A best table (or its comparisons) over every training run of its models (:mod:`ddrs.analysis.replication`)."""
    suffix = "" if selection == "test" else f"_{selection}"
    kind = "comparisons_" if comparisons else ""
    return Target(
        f"replicated_{kind}table{suffix}",
        f"replicated_{kind}{{table}}{suffix}",
        f"{REPLICATION}:replicated_{kind}{'best_' if not comparisons else ''}table",
        f"replicated_{kind}table",
        "Replication",
        instances=q.replicated_tables(selection),
        records=q.replicated_table_records,
        params=q.best_table_params(selection),
        caption_of=q.replicated_caption_of(selection),
    )


def replicated_study(study: Target, baseline: q.Query | None = None) -> Target:
    """A seed paper's per-σ study (or, given its ``baseline``, its comparisons) over every training run."""
    kind = "comparisons_" if baseline else ""
    params = (
        q.l2_radii
        if baseline is None
        else lambda exp, t, dataset: {**q.l2_radii(exp, t), "baseline": baseline(exp, study, dataset)}
    )
    return Target(
        f"replicated_{kind}{study.name}",
        f"replicated_{kind}{study.pattern}",
        f"{REPLICATION}:replicated_study_{kind}table",
        f"replicated_{kind}table",
        "Replication",
        methods=study.methods,
        requires=study.requires,
        instances=q.replicated_studies,
        records=q.replicated_study_records,
        params=params,
        caption_of=q.replicated_caption_of("test"),
    )


CONSISTENCY_STUDY = study_table(
    "consistency_table",
    "consistency_{dataset}",
    JEONG2020_METHODS,
    # built when the config trains one beyond the DDRS paper's
    requires=("consistency", "smoothadv_consistency", "stability"),
)
METHODS_STUDY = study_table("methods_table", "methods_{dataset}", SUN2024_METHODS, requires=("easy_focus",))
ABLATION_STUDY = Target(
    "easy_focus_ablation_table",
    "easy_focus_ablation_{dataset}",
    f"{TABLES}:per_sigma_table",
    "study_table",
    "Seed papers",
    instances=q.computed_datasets(lambda exp, t, d: exp.records.ablation_records(d)),
    records=q.ablation_records,
    params=q.l2_radii,
)

ENTRIES = (
    best_table("test"),
    Target(
        "appendix_h_table",
        "appendix_h_{method}",
        f"{TABLES}:per_setting_table",
        "appendix_h",
        "Appendix H",
        instances=q.appendix_h_instances,
        records=q.method_records,
        params=q.method_radii,
    ),
    Target(
        "appendix_b_table",
        "appendix_b",
        f"{TABLES}:grid_search_table",
        "appendix_b",
        "Appendix B",
        instances=q.once_if(lambda exp: exp.records.grid_datasets()),
        records=q.appendix_b_records,
        params=q.l2_radii,
    ),
    Target(
        "appendix_f_table",
        "appendix_f",
        f"{TABLES}:runtime_table",
        "appendix_f",
        "Appendix F",
        instances=q.once_if(lambda exp: exp.records.computed_records()),
        records=q.runtime_records,
        sigma_logs=True,
        caption_of=q.runtime_caption_of,
        # seconds per input to 0.1 ms: finer digits are timer noise
        decimals=4,
        bold=False,
        measured=("certify_s", "extra_s", "total_s"),
    ),
    Target(
        "memory_summary",
        "memory_summary",
        f"{TABLES}:memory_table",
        "memory_summary",
        "Memory",
        instances=q.once_if(lambda exp: exp.records.computed_records()),
        records=q.memory_records,
        bold=False,
    ),
    CONSISTENCY_STUDY,
    METHODS_STUDY,
    ABLATION_STUDY,
    Target(
        "gradient_norms_table",
        "gradient_norms_{dataset}",
        f"{TABLES}:gradient_norms_table",
        "gradient_norms",
        "Seed papers",
        methods=SUN2024_METHODS,
        instances=q.computed_datasets(q.gradient_norm_runs),
        models=q.gradient_norm_runs,
        files=q.gradient_norm_files,
        # mean gradient norms and their ratio to 4 decimals (estimates from a few thousand inputs)
        decimals=4,
        bold=False,
        measured=("easy_grad_norm", "hard_grad_norm", "easy_over_hard"),
    ),
    Target(
        "paper_comparison",
        "paper_comparison",
        f"{FIGURES}:paper_comparison",
        "paper_comparison",
        "Paper comparison",
        outputs=(*TABLE, *FIGURE),
        instances=q.paper_comparison_instances,
        files=q.paper_comparison_files,
        caption_of=q.paper_comparison_caption_of,
        # Appendix H and part of Table 3 print two decimals
        decimals=2,
        bold=False,
    ),
    Target(
        "sequential_comparison",
        "sequential_{dataset}",
        "ddrs.analysis.sequential_comparison:sequential_table",
        "sequential",
        "Sequential certification",
        outputs=(*TABLE, *FIGURE),
        instances=q.sequential_datasets,
        files=q.sequential_files,
        params=q.sequential_params,
        # percentages, p-values, ACR and seconds to 3 decimals (the CSV keeps full precision)
        decimals=3,
        bold=False,
        measured=SEQUENTIAL_MEASURED,
    ),
    Target(
        "certified_accuracy_figure",
        "certified_{method}_{dataset}",
        f"{PLOTS}:sigma_panels_figure",
        "certified_accuracy",
        "Certified accuracy",
        outputs=FIGURE,
        instances=q.method_figures,
        records=q.method_dataset_records,
        params=q.alpha,
    ),
    Target(
        "k_sweep_figure",
        "ksweep_{method}_{dataset}",
        f"{PLOTS}:k_sweep_figure",
        "k_sweep",
        "K sweep",
        outputs=FIGURE,
        instances=q.method_figures,
        records=q.k_sweep_records,
        params=q.alpha,
    ),
    Target(
        "sigma_examples_figure",
        "sigma_examples_{dataset}",
        f"{FIGURES}:sigma_examples",
        "sigma_examples",
        "σ*ₓ",
        outputs=FIGURE,
        instances=q.figure_datasets,
        files=q.sigma_examples_files,
        params=q.sigma_examples_params,
        needs_data=True,
    ),
    Target(
        "sigma_histogram_figure",
        "sigma_histogram_{dataset}",
        f"{PLOTS}:sigma_histogram_figure",
        "sigma_histogram",
        "σ*ₓ",
        outputs=FIGURE,
        instances=q.figure_datasets,
        files=q.sigma_histogram_files,
        params=q.sigma_histogram_params,
    ),
    Target(
        "pa_ecdf_figure",
        "pa_ecdf_{dataset}",
        f"{FIGURES}:p_a_cdf",
        "beyond_acr",
        "Beyond ACR",
        outputs=FIGURE,
        instances=q.figure_datasets,
        records=q.showcase_records,
    ),
    Target(
        "easy_hard_figure",
        "easy_hard_{dataset}",
        f"{FIGURES}:easy_hard",
        "beyond_acr",
        "Beyond ACR",
        outputs=FIGURE,
        instances=q.figure_datasets,
        records=q.showcase_records,
    ),
    Target(
        "pa_ecdf_methods_figure",
        "pa_ecdf_methods_{dataset}",
        f"{FIGURES}:p_a_cdf_per_sigma",
        "beyond_acr",
        "Beyond ACR",
        outputs=FIGURE,
        methods=SUN2024_METHODS,
        requires=("easy_focus",),
        instances=q.figure_datasets,
        records=q.study_records,
    ),
    # tables that carry a claim (issue 19): honest selection, paired comparisons, optimism
    best_table("held_out"),
    best_table_comparisons("test"),
    best_table_comparisons("held_out"),
    Target(
        "selection_optimism_table",
        "selection_optimism_{table}",
        f"{COMPARISONS}:selection_optimism_table",
        "selection_optimism",
        "Selection optimism",
        # the held-out split of the `{table}_held_out` tables (same seed)
        instances=q.selected("held_out"),
        records=q.table_records,
        params=q.selection_optimism_params,
        caption_of=q.selection_optimism_caption_of,
        bold=False,
    ),
    # claims about methods, tested across training runs (issue 55): replicated tables, variance budget, claims
    replicated_best_table("test"),
    replicated_best_table("held_out"),
    replicated_best_table("held_out", comparisons=True),
    replicated_study(CONSISTENCY_STUDY),
    replicated_study(CONSISTENCY_STUDY, q.first_method),
    replicated_study(METHODS_STUDY),
    replicated_study(METHODS_STUDY, q.first_method),
    Target(
        "variance_budget",
        "variance_budget_{dataset}",
        "ddrs.analysis.variance_budget:variance_budget",
        "variance_budget",
        "Replication",
        outputs=(*TABLE, *FIGURE),
        instances=q.replicated_datasets,
        records=q.budget_records,
        files=q.budget_files,
        params=q.budget_params,
        # shares to 4 decimals; the variances in scientific notation (the table's own attribute)
        decimals=4,
        bold=False,
        measured=("value", "share_run", "share_input", "share_residual", "share_monte_carlo"),
    ),
    Target(
        "claims_table",
        "claims_{dataset}",
        "ddrs.analysis.claims:claims_table",
        "claims",
        "Replication",
        instances=q.replicated_datasets,
        records=q.claims_records,
        params=q.claims_params,
        decimals=3,
        bold=False,
        measured=(
            "effect",
            "low",
            "high",
            "p_fixed_inputs",
            "df",
            "p",
            "p_fixed_inputs_holm",
            "p_holm",
            "share_run",
            "share_input",
            "share_residual",
            "planned_effect",
        ),
    ),
    # what table 1's certificates guarantee (issue 69): the certificate audit's ledger, the memory's order dependence
    Target(
        "soundness_ledger",
        "soundness_ledger_{dataset}",
        "ddrs.analysis.soundness_ledger:soundness_ledger",
        "soundness_ledger",
        "Certificate audit",
        outputs=(*TABLE, *FIGURE),
        instances=audit.audited_datasets,
        records=audit.audited_records,
        files=audit.ledger_files,
        params=audit.ledger_params,
        decimals=3,
        bold=False,
        measured=LEDGER_MEASURED,
    ),
    Target(
        "order_dependence",
        "order_dependence_{dataset}",
        "ddrs.analysis.order_dependence:order_dependence_table",
        "order_dependence",
        "Certificate audit",
        instances=audit.audited_datasets,
        records=audit.order_records,
        files=audit.order_files,
        params=audit.order_params,
        needs_data=True,
        decimals=4,
        bold=False,
        measured=("changed_mean", "radius_change_max", "radius_change_mean"),
    ),
    study_comparisons("consistency_comparisons", CONSISTENCY_STUDY, q.first_method),
    study_comparisons("methods_comparisons", METHODS_STUDY, q.first_method),
    study_comparisons("easy_focus_ablation_comparisons", ABLATION_STUDY, q.ablation_baseline),
)


#: the published-logs tables and figures (issue 35), built where a config has a ``published_logs`` section
PUBLISHED = "ddrs.published.builders"


def published(name: str, builder: str, *, pattern: str = "", caption: str = "", **fields) -> Target:
    """A published-logs table or figure: its builder in :mod:`ddrs.published.builders`, its pattern
    and caption the entry's name unless given, no bold unless it tests."""
    fields = {"bold": False, **fields}
    return Target(name, pattern or name, f"{PUBLISHED}:{builder}", caption or name, "Published logs", **fields)


def leaderboard(name: str, builder: str, caption: str, **fields) -> Target:
    """One table or figure per leaderboard dataset (``<caption>_<dataset>``), from that dataset's
    published logs."""
    dataset_logs = {"instances": q.published_leaderboards, "files": q.published_leaderboard_files}
    return published(name, builder, pattern=f"{caption}_{{leaderboard}}", caption=caption, **dataset_logs, **fields)


PUBLISHED_ENTRIES = (
    published(
        "published_logs_audit",
        "audit_table",
        instances=q.published_audit,
        files=q.published_audit_files,
        caption_of=q.published_caption(captions.audit_caption),
    ),
    published(
        "published_seed_table",
        "seed_table",
        pattern="published_{seed_table}",
        instances=q.published_seed_tables,
        files=q.published_seed_files,
        params=q.published_seed_params,
        caption_of=q.published_caption(captions.seed_table_caption),
    ),
    published(
        "published_seed_verdicts",
        "seed_table_verdicts",
        caption="published_seed_table",
        instances=q.published_seed_summary,
        files=q.published_seed_diffs,
        caption_of=q.published_caption(captions.seed_verdicts_caption),
    ),
    leaderboard(
        "published_leaderboard",
        "leaderboard",
        "published_leaderboard",
        params=q.published_leaderboard_params,
        caption_of=q.published_caption(captions.leaderboard_caption, level=True),
    ),
    leaderboard(
        "published_vs_gaussian",
        "leaderboard_vs_gaussian",
        "published_vs_gaussian",
        params=q.published_leaderboard_params,
        caption_of=q.published_caption(captions.vs_gaussian_caption, level=True),
        bold=True,
    ),
    leaderboard(
        "published_replication",
        "leaderboard_replication",
        "published_replication",
        params=q.published_replication_params,
        decimals=4,
        measured=("ACR_difference", "ACR_sd", "margin"),  # spreads of 10⁻⁴ ACR: 3 decimals hide them
        caption_of=q.published_caption(captions.replication_caption, level=True),
    ),
    published(
        "published_headline",
        "leaderboard_headline",
        pattern="published_headline_{leaderboard}",
        instances=q.published_leaderboards,
        files=q.published_headline_files,
        params=q.published_headline_params,
        caption_of=q.published_caption(captions.headline_caption, level=True),
    ),
    published(
        "published_margin_figure",
        "leaderboard_margin",
        pattern="published_margin_{leaderboard}",
        caption="published_margin",
        outputs=FIGURE,
        instances=q.published_leaderboards,
        files=q.published_headline_files,
        params=q.published_margin_params,
    ),
    *(
        leaderboard(f"{caption}_figure", builder, caption, outputs=FIGURE, params=q.published_figure_params)
        for builder, caption in (("leaderboard_curves", "published_curves"), ("leaderboard_p_a", "published_pa"))
    ),
)

CATALOGUE: dict[str, Target] = {target.name: target for target in (*ENTRIES, *PUBLISHED_ENTRIES)}
