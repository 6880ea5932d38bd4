"""The catalogue's vocabulary (no torch): each function takes ``(exp, target, **wildcards)`` and
answers one question an entry of :mod:`ddrs.pipeline.catalogue` asks of the experiment: on which
wildcard values the entry is built (instances), which logs it reads (records), which other files
(files), with which builder parameters (params) and caption."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ddrs.analysis.log_record import LogRecord, display_name
from ddrs.analysis.reference import BEST_TABLES, PAPER_TABLES, paper_comparison_caption
from ddrs.analysis.render import (
    best_table_caption,
    comparisons_caption,
    runtime_caption,
    selection_caption,
    selection_optimism_caption,
    semi_elastic_caption,
)
from ddrs.core.distance_sigma import DistanceSigmaSettings
from ddrs.core.settings import settings_from
from ddrs.data import get_info
from ddrs.methods import METHODS, get_method
from ddrs.pipeline.layout import Run, run_file, scale_label
from ddrs.pipeline.target import Experiment, Target, Wildcards

Query = Callable[..., Any]


# --- which tables and methods exist ---------------------------------------------------------------


def best_tables(exp: Experiment) -> list[str]:
    """The DDRS-style tables (Tables 1–4, …) of the configured methods that have at least one log."""
    return list(dict.fromkeys(get_method(m).table for m in exp.grid.methods if exp.records.method_records(m)))


def appendix_h_methods(exp: Experiment) -> list[str]:
    """The full methods (Method, -DS, -DS²) with logs: one Appendix H table each."""
    return [m for m in exp.grid.full_methods() if exp.records.method_records(m)]


def comparison_tables(exp: Experiment) -> dict[str, str]:
    """Our tables the DDRS paper also prints (:mod:`ddrs.analysis.reference`), by name."""
    names = best_tables(exp) + [f"appendix_h_{m}" for m in appendix_h_methods(exp)]
    return {name: exp.layout.table(name) for name in names if name in PAPER_TABLES}


# --- instances: the wildcard values an entry is built for ------------------------------------------


def once_if(condition: Callable[[Experiment], Any]) -> Callable[[Experiment, Target], list[Wildcards]]:
    """Once, where ``condition(exp)`` holds."""
    return lambda exp, target: [{}] if condition(exp) else []


def wanted(exp: Experiment, target: Target) -> bool:
    """The config trains one of the entry's ``requires`` methods (or it requires none)."""
    return not target.requires or bool(set(target.requires) & set(exp.grid.methods))


def studied_datasets(exp: Experiment, target: Target) -> list[Wildcards]:
    """Every dataset, when the config trains any of the study's ``requires`` methods."""
    return [{"dataset": d} for d in exp.grid.datasets] if wanted(exp, target) else []


def computed_datasets(has: Callable[[Experiment, Target, str], Any]) -> Callable[[Experiment, Target], list[Wildcards]]:
    """The datasets of computed models (not given logs) where ``has(exp, target, dataset)``."""
    return lambda exp, target: [
        {"dataset": d} for d in exp.grid.datasets if not exp.grid.is_logs(d) and has(exp, target, d)
    ]


def figure_datasets(exp: Experiment, target: Target) -> list[Wildcards]:
    """The datasets of the figures (:meth:`~ddrs.pipeline.figure_records.FigureRecords.datasets`)."""
    return [{"dataset": d} for d in exp.figure_records.datasets()] if wanted(exp, target) else []


def method_figures(exp: Experiment, target: Target) -> list[Wildcards]:
    """Every full method on every figure dataset where it has a σ grid."""
    return [
        {"method": m, "dataset": d}
        for d in exp.figure_records.datasets()
        for m in exp.grid.full_methods()
        if exp.grid.sigmas(d, m)
    ]


def appendix_h_instances(exp: Experiment, target: Target) -> list[Wildcards]:
    return [{"method": m} for m in appendix_h_methods(exp)]


def selected(selection: str) -> Callable[[Experiment, Target], list[Wildcards]]:
    """Every best table, when the config builds the tables chosen under ``selection``."""
    return lambda exp, t: [{"table": name} for name in best_tables(exp)] if exp.statistics.builds(selection) else []


def replicated(exp: Experiment, dataset: str, methods) -> bool:
    """Whether every one of ``methods`` has more than one training run on ``dataset``."""
    return bool(methods) and all(exp.grid.replicates(dataset, m) > 1 for m in methods)


def replicated_tables(selection: str) -> Callable[[Experiment, Target], list[Wildcards]]:
    """Every one of the DDRS paper's Tables 1–4 whose methods are all replicated on each of their
    datasets, when the config builds the tables chosen under ``selection`` (the other methods'
    DDRS-style tables stay single runs: their studies replicate only the fixed-σ rows)."""

    def instances(exp: Experiment, target: Target) -> list[Wildcards]:
        if not exp.statistics.builds(selection):
            return []
        names = []
        for name in [t for t in best_tables(exp) if t in BEST_TABLES]:
            methods = exp.records.table_methods(name)
            datasets = {d for m in methods for d in exp.grid.datasets_of(m) if not exp.grid.is_logs(d)}
            if datasets and all(replicated(exp, d, methods) for d in datasets):
                names.append({"table": name})
        return names

    return instances


def replicated_studies(exp: Experiment, target: Target) -> list[Wildcards]:
    """The datasets where a study's baseline (its first method) and another of its methods are replicated."""
    return [
        {"dataset": d}
        for d in exp.grid.datasets
        if wanted(exp, target)
        and not exp.grid.is_logs(d)
        and replicated(exp, d, target.methods[:1])
        and any(replicated(exp, d, [m]) for m in target.methods[1:] if get_method(m).name in exp.grid.methods)
    ]


def replicated_datasets(exp: Experiment, target: Target) -> list[Wildcards]:
    """The datasets with a replicated method."""
    return [
        {"dataset": d}
        for d in exp.grid.datasets
        if not exp.grid.is_logs(d) and any(exp.grid.replicates(d, m) > 1 for m in exp.grid.methods)
    ]


def paper_comparison_instances(exp: Experiment, target: Target) -> list[Wildcards]:
    """The comparison, where the config asks for it; a config that builds none of the paper's
    Tables 1–4 (whose overlay the comparison draws) is refused, naming the methods that do."""
    if not exp.config.get("compare_with_paper"):
        return []
    if not set(comparison_tables(exp)) & set(BEST_TABLES):
        raise ValueError(
            "compare_with_paper: none of this config's tables is one of the DDRS paper's Tables 1–4 "
            "(methods cohen, smoothadv, macer, uniform); add one of those methods or set compare_with_paper: false"
        )
    return [{}]


# --- records: the logs an entry reads ---------------------------------------------------------------


def table_records(exp: Experiment, target: Target, table: str) -> list[LogRecord]:
    """A best table's logs (every table derived from a best table reads the same)."""
    return exp.records.table_records(table)


def replicated_table_records(exp: Experiment, target: Target, table: str) -> list[LogRecord]:
    """A best table's logs over every training run of its models."""
    return exp.records.replicated_table_records(table)


def replicated_study_records(exp: Experiment, target: Target, dataset: str) -> list[LogRecord]:
    """A seed paper's study of the entry's ``methods`` over every training run of each row's models."""
    return exp.records.replicated_study_records(target.methods, dataset)


def method_records(exp: Experiment, target: Target, method: str) -> list[LogRecord]:
    return exp.records.method_records(method)


def appendix_b_records(exp: Experiment, target: Target) -> list[LogRecord]:
    return exp.records.appendix_b_records()


def runtime_records(exp: Experiment, target: Target) -> list[LogRecord]:
    """Appendix F: the computed logs of fixed and data-dependent certification (not the grid search)."""
    return [r for r in exp.records.computed_records() if r.certify_mode != "gds"]


def memory_records(exp: Experiment, target: Target) -> list[LogRecord]:
    """The computed logs Algorithm 3 made sound."""
    return [r for r in exp.records.computed_records() if r.certify_mode != "fs"]


def study_records(exp: Experiment, target: Target, dataset: str) -> list[LogRecord]:
    """A seed paper's per-σ study of the entry's ``methods``."""
    return exp.records.study_records(target.methods, dataset)


def ablation_records(exp: Experiment, target: Target, dataset: str) -> list[LogRecord]:
    return exp.records.ablation_records(dataset)


def method_dataset_records(exp: Experiment, target: Target, method: str, dataset: str) -> list[LogRecord]:
    return exp.figure_records.method_dataset_records(method, dataset)


def k_sweep_records(exp: Experiment, target: Target, method: str, dataset: str) -> list[LogRecord]:
    return exp.figure_records.k_sweep_records(method, dataset)


def showcase_records(exp: Experiment, target: Target, dataset: str) -> list[LogRecord]:
    return exp.figure_records.showcase_records(dataset)


# --- files and params: the builder's other keywords ------------------------------------------------


def showcase_file(exp: Experiment, dataset: str, name: str) -> str:
    """A run file (:data:`~ddrs.pipeline.layout.RUN_FILES`) of the showcase model, at its largest K."""
    return run_file(
        exp.grid.run_dir(exp.figure_records.showcase(dataset)), name, k=exp.figure_records.showcase_k(dataset)
    )


def gradient_norm_runs(exp: Experiment, target: Target, dataset: str) -> list[Run]:
    return exp.records.gradient_norm_runs(target.methods, dataset)


def gradient_norm_files(exp: Experiment, target: Target, dataset: str) -> dict[str, Any]:
    runs = gradient_norm_runs(exp, target, dataset)
    return {"paths": [run_file(exp.grid.run_dir(r), "gradient_norms") for r in runs]}


#: the method whose fixed-σ models the sequential-certification comparison certifies both ways
SEQUENTIAL_METHOD = "cohen"


def sequential_datasets(exp: Experiment, target: Target) -> list[Wildcards]:
    """The datasets of trained Gaussian models, where the config asks for the comparison
    (``certify.sequential.compare``)."""
    if not exp.grid.config.get("certify", {}).get("sequential", {}).get("compare"):
        return []
    return [
        {"dataset": d}
        for d in exp.grid.datasets_of(SEQUENTIAL_METHOD)
        if not exp.grid.is_logs(d) and not exp.grid.is_published(d) and SEQUENTIAL_METHOD in exp.grid.methods
    ]


def sequential_files(exp: Experiment, target: Target, dataset: str) -> dict[str, Any]:
    """Each σ's fixed-n and sequential log of the method's fixed-σ model."""
    sigmas = exp.grid.sigmas(dataset, SEQUENTIAL_METHOD)
    runs = {s: exp.grid.run_dir(Run(dataset, SEQUENTIAL_METHOD, "fs", s)) for s in sigmas}
    return {
        "fixed": {scale_label(s): run_file(run, "certify_fixed") for s, run in runs.items()},
        "sequential": {scale_label(s): run_file(run, "certify_sequential") for s, run in runs.items()},
    }


def sequential_params(exp: Experiment, target: Target, dataset: str) -> dict[str, Any]:
    """The dataset's ℓ2 radius grid and the certification's sample sizes."""
    certify = exp.grid.config["certify"]
    return {"radii": exp.grid.radii(2)[dataset], "n0": certify["n0"], "n": certify["n"]}


def sigma_examples_files(exp: Experiment, target: Target, dataset: str) -> dict[str, Any]:
    return {"sigma_log": showcase_file(exp, dataset, "sigma_log")}


def sigma_histogram_files(exp: Experiment, target: Target, dataset: str) -> dict[str, Any]:
    return {
        "fixed_log": showcase_file(exp, dataset, "certify_fixed"),
        "ds_log": showcase_file(exp, dataset, "memory_k"),
    }


def paper_comparison_files(exp: Experiment, target: Target) -> dict[str, Any]:
    return {"tables": comparison_tables(exp)}


def l2_radii(exp: Experiment, target: Target, **wildcards: str) -> dict[str, Any]:
    """The ℓ2 radius grid, and the tables' inference (level, bootstrap resamples, seed)."""
    return {"radii": exp.grid.radii(2), "inference": exp.statistics.inference}


def alpha(exp: Experiment, target: Target, **wildcards: str) -> dict[str, Any]:
    """The level of a figure's interval bands."""
    return {"alpha": exp.statistics.alpha}


def table_radii(exp: Experiment, table: str) -> dict[str, Any]:
    """The radius grid of a best table's norm, and the tables' statistics."""
    norm = METHODS[exp.records.table_methods(table)[0]].norm
    return {"radii": exp.grid.radii(norm), "inference": exp.statistics.inference}


def best_table_params(selection: str) -> Query:
    return lambda exp, t, table: {**table_radii(exp, table), "selection": selection}


def selection_optimism_params(exp: Experiment, target: Target, table: str) -> dict[str, Any]:
    return table_radii(exp, table)


def method_radii(exp: Experiment, target: Target, method: str) -> dict[str, Any]:
    """Appendix H: the radius grid of the method's norm."""
    return {"radii": exp.grid.radii(METHODS[method].norm), "inference": exp.statistics.inference}


def sigma_examples_params(exp: Experiment, target: Target, dataset: str) -> dict[str, Any]:
    """Figure: σ*ₓ of four test inputs of the showcase model."""
    return {
        "dataset": dataset,
        "sigma0": exp.figure_records.showcase(dataset).sigma,
        "k": exp.figure_records.showcase_k(dataset),
        "examples": 4,
        "data_root": exp.config["data_root"],
        "seed": exp.config["seed"],
    }


def sigma_histogram_params(exp: Experiment, target: Target, dataset: str) -> dict[str, Any]:
    return {"sigma0": exp.figure_records.showcase(dataset).sigma}


# --- replication: the variance budget and the seed claims --------------------------------------------


def replicated_methods(exp: Experiment, dataset: str) -> list[str]:
    """The configured methods with more than one training run on ``dataset``."""
    return [m for m in exp.grid.methods if exp.grid.replicates(dataset, m) > 1]


def budget_records(exp: Experiment, target: Target, dataset: str) -> list[LogRecord]:
    """Every training run's fixed-σ logs of each replicated method."""
    methods = replicated_methods(exp, dataset)
    return exp.records.replicated(lambda r: [rec for m in methods for rec in exp.records.fixed_records(dataset, m, r)])


def budget_files(exp: Experiment, target: Target, dataset: str) -> dict[str, Any]:
    """Run 0's re-certifications with other noise (``replication.monte_carlo`` of them per model)."""
    draws = exp.config.get("replication", {}).get("monte_carlo", 0)
    return {
        "monte_carlo": [
            run_file(exp.grid.run_dir(Run(dataset, m, "fs", s)), "certify_monte_carlo", draw=d)
            for m in replicated_methods(exp, dataset)
            for s in exp.grid.sigmas(dataset, m)
            for d in range(1, draws + 1)
        ]
    }


def budget_params(exp: Experiment, target: Target, dataset: str) -> dict[str, Any]:
    return {"radii": exp.grid.radii(2)}


def _claim(paper: str, claim: str, kind: str, variant: str, baseline: str | None, metric: str, direction: str):
    """One row of :func:`seed_claims`: a paper's claim as the variant's ``metric`` against the baseline's."""
    return {"paper": paper, "claim": claim, "kind": kind, "variant": variant, "baseline": baseline,
            "metric": metric, "direction": direction}  # fmt: skip


def seed_claims(exp: Experiment, target: Target) -> list[dict[str, Any]]:
    """The seed papers' claims this config can test (:mod:`ddrs.analysis.claims`), for the methods it trains."""
    name, methods = display_name, set(exp.grid.methods)
    cohen = name("cohen")
    claims = []
    if "cohen" in methods:
        claims += [
            _claim("DDRS", "σ per input (DS) beats fixed σ (FS) in ACR", "best",
                   f"{cohen}-DS", cohen, "ACR_per_log", "greater"),
            _claim("DDRS", "training with Algorithm 2 (DS²) beats DS in ACR", "best",
                   f"{cohen}-DS²", f"{cohen}-DS", "ACR_per_log", "greater"),
        ]  # fmt: skip
    if {"cohen", "consistency"} <= methods:
        claims.append(
            _claim("Jeong & Shin 2020", "consistency regularization beats Gaussian training in ACR", "per_sigma",
                   name("consistency"), cohen, "ACR", "greater")
        )  # fmt: skip
    if {"cohen", "easy_focus"} <= methods:
        gaussian = name("cohen@easy_focus")
        claims += [
            _claim("Sun et al. 2024", "ACR-focused training beats Gaussian training in ACR", "per_sigma",
                   name("easy_focus"), gaussian, "ACR", "greater"),
            _claim("Sun et al. 2024", "… with clean accuracy not above Gaussian training's", "per_sigma",
                   name("easy_focus"), gaussian, "0.00", "not_greater"),
        ]  # fmt: skip
    if "macer" in methods:
        claims.append(
            _claim("MACER (Zhai et al. 2020)", "MACER trains: clean accuracy above chance", "above_chance",
                   name("macer"), None, "0.00", "greater")
        )  # fmt: skip
    return claims


def claims_records(exp: Experiment, target: Target, dataset: str) -> list[LogRecord]:
    """The logs of every training run of the rows the seed claims compare."""
    methods = set(exp.grid.methods)
    records = []
    if "cohen" in methods:
        table = get_method("cohen").table
        records += [
            r for r in exp.records.replicated_table_records(table) if r.dataset == dataset and r.method == "cohen"
        ]
    pairs = {"consistency": ("cohen", "consistency"), "easy_focus": ("cohen@easy_focus", "easy_focus")}
    for method, studied in pairs.items():
        if {"cohen", method} <= methods:
            records += exp.records.replicated_study_records(studied, dataset)
    if "macer" in methods:
        records += exp.records.replicated(
            lambda r: (
                exp.records.fixed_records(dataset, "macer", r) if r < exp.grid.replicates(dataset, "macer") else []
            )
        )
    return list({str(r.log): r for r in records}.values())


def claims_params(exp: Experiment, target: Target, dataset: str) -> dict[str, Any]:
    """The claims, the dataset's classes, and the effects their runs are planned for."""
    replication = exp.config.get("replication", {})
    return {
        **l2_radii(exp, target),
        "claims": seed_claims(exp, target),
        "classes": {dataset: get_info(dataset).num_classes},
        **{key: replication[key] for key in ("effect_acr", "effect_accuracy") if key in replication},
    }


# --- captions --------------------------------------------------------------------------------------


def best_caption(selection: str) -> Callable[[Experiment, list[LogRecord]], str]:
    def caption(exp: Experiment, records: list[LogRecord]) -> str:
        conventions = {r.dataset: exp.grid.uniform_convention(r.dataset) for r in records if r.norm == 1}
        method, norm, level = display_name(records[0].method), records[0].norm, exp.statistics.alpha
        text = best_table_caption(method, norm=norm, uniform_conventions=conventions, selection=selection, alpha=level)
        if any(r.certify_mode == "idrs" for r in records):
            options = settings_from(DistanceSigmaSettings, exp.config.get("semi_elastic", {}))
            text += " " + semi_elastic_caption(method, options.rate, options.k)
        table = get_method(records[0].method).table
        if {"table": table} in replicated_tables(selection)(exp, None):
            suffix = "" if selection == "test" else f"_{selection}"
            text += (
                f" One training run per model (run 0): a comparison of methods across training runs is in "
                f"replicated_{table}{suffix} and replicated_comparisons_{table}_held_out."
            )
        return text

    return caption


def comparisons_caption_of(selection: str) -> Callable[[Experiment, list[LogRecord]], str]:
    return lambda exp, records: f"{comparisons_caption(exp.statistics.alpha)} {selection_caption(selection)}"


def replicated_caption_of(selection: str) -> Callable[[Experiment, list[LogRecord]], str]:
    """A replicated table's caption: how many runs its rows rest on, and how it is chosen."""

    def caption(exp: Experiment, records: list[LogRecord]) -> str:
        runs = {(r.dataset, display_name(r.method)): 0 for r in records}
        for r in records:
            key = (r.dataset, display_name(r.method))
            runs[key] = max(runs[key], r.replicate + 1)
        counts = "; ".join(f"{method} on {dataset}: {n} run{'s' * (n > 1)}" for (dataset, method), n in runs.items())
        return (
            f"Mean over training runs, {100 * (1 - exp.statistics.alpha):g}% pigeonhole-bootstrap intervals over runs "
            f"and test inputs; run-level paired t-tests, Holm-adjusted over the table (exploratory: a comparison "
            f"that is also a pre-stated claim is decided in claims_<dataset>). Runs per method: {counts}. "
            f"{selection_caption(selection)}"
        )

    return caption


def runtime_caption_of(exp: Experiment, records: list[LogRecord]) -> str:
    return runtime_caption()


def paper_comparison_caption_of(exp: Experiment, records: list[LogRecord]) -> str:
    return paper_comparison_caption(exp.statistics.alpha)


def selection_optimism_caption_of(exp: Experiment, records: list[LogRecord]) -> str:
    return selection_optimism_caption(exp.statistics.alpha)


# --- a study's paired comparisons -----------------------------------------------------------------


def first_method(exp: Experiment, study: Target, dataset: str) -> str:
    """The row a seed paper's study compares every method with: its first method (Gaussian)."""
    return display_name(study.methods[0])


def ablation_baseline(exp: Experiment, study: Target, dataset: str) -> str:
    """The ablation's all-on variant (Sun et al. 2024, Table 3: the full ACR-focused training)."""
    full = {display_name(get_method(r.method).variants()[-1]) for r in exp.records.ablation_records(dataset)}
    if len(full) != 1:
        raise ValueError(f"{dataset}: the ablation comparisons need one ablated method, got {sorted(full)}")
    return full.pop()


def study_comparisons_caption(exp: Experiment, baseline: str) -> str:
    return f"{comparisons_caption(exp.statistics.alpha)} Baseline: {baseline}, at each σ₀."


# --- published logs (issue 35): the authors' certification logs, fetched per repository --------------


def published_audit(exp: Experiment, target: Target) -> list[Wildcards]:
    """Once, where the config has a ``published_logs`` section that builds the audit."""
    return [{}] if exp.published is not None and exp.published.builds_audit() else []


def published_seed_tables(exp: Experiment, target: Target) -> list[Wildcards]:
    """Every seed table whose authors' logs the selected repositories hold."""
    return [] if exp.published is None else [{"seed_table": slug} for slug in exp.published.seed_tables()]


def published_seed_summary(exp: Experiment, target: Target) -> list[Wildcards]:
    return [{}] if exp.published is not None and exp.published.seed_tables() else []


def published_leaderboards(exp: Experiment, target: Target) -> list[Wildcards]:
    """Every configured leaderboard dataset the selected repositories hold logs of."""
    return [] if exp.published is None else [{"leaderboard": d} for d in exp.published.leaderboards()]


def _published_overrides(exp: Experiment, *keys: str) -> dict[str, Any]:
    """The section's files that stand for a shipped one (registry, transcription, mapping), where given."""
    return {key: exp.published.section[key] for key in keys if exp.published.section.get(key)}


def _published(exp: Experiment, target: Target):
    """The config's ``published_logs`` section; asked for without one, an error saying what builds it."""
    if exp.published is None:
        raise ValueError(
            f"{target.name} tabulates published logs: it needs a published_logs section "
            "(snakemake --configfile config/published.yaml)"
        )
    return exp.published


def published_audit_files(exp: Experiment, target: Target) -> dict[str, Any]:
    return {"manifests": _published(exp, target).manifests(), **_published_overrides(exp, "registry")}


def published_seed_files(exp: Experiment, target: Target, seed_table: str) -> dict[str, Any]:
    return {
        "manifests": exp.published.seed_table_manifests(seed_table),
        **_published_overrides(exp, "transcription", "mapping", "registry"),
    }


def published_seed_params(exp: Experiment, target: Target, seed_table: str) -> dict[str, Any]:
    paper, table = exp.published.seed_tables()[seed_table]
    return {"paper": paper, "table": table}


def published_seed_diffs(exp: Experiment, target: Target) -> dict[str, Any]:
    """The verdict summary reads every seed table's diff (the tables the seed-table entry writes)."""
    return {"diffs": [exp.layout.table(f"published_{slug}") for slug in _published(exp, target).seed_tables()]}


def published_leaderboard_files(exp: Experiment, target: Target, leaderboard: str) -> dict[str, Any]:
    """The dataset's logs, read once by ``published_dataset_logs`` (``rules/published.smk``)."""
    return {"entries": exp.layout.published_entries(leaderboard)}


def published_leaderboard_params(exp: Experiment, target: Target, leaderboard: str) -> dict[str, Any]:
    """A leaderboard's dataset, radius grid and the tables' inference."""
    radii = exp.published.leaderboard_radii(leaderboard)
    return {"dataset": leaderboard, "radii": radii, "inference": exp.statistics.inference}


def published_figure_params(exp: Experiment, target: Target, leaderboard: str) -> dict[str, Any]:
    """A leaderboard figure's dataset (and the curves' band level: the p_A figure draws no band)."""
    params = {"dataset": leaderboard}
    return params | ({"alpha": exp.statistics.alpha} if target.name == "published_curves_figure" else {})


def published_replication_params(exp: Experiment, target: Target, leaderboard: str) -> dict[str, Any]:
    """A replication table's dataset and the level of its run-level margin."""
    return {"dataset": leaderboard, "alpha": exp.statistics.alpha}


def published_headline_files(exp: Experiment, target: Target, leaderboard: str) -> dict[str, Any]:
    """The headline and the margin figure read the dataset's comparisons with Gaussian and its
    run-level margins (the tables ``published_vs_gaussian`` and ``published_replication`` write)."""
    return {
        "comparisons": exp.layout.table(f"published_vs_gaussian_{leaderboard}"),
        "replication": exp.layout.table(f"published_replication_{leaderboard}"),
    }


def published_headline_params(exp: Experiment, target: Target, leaderboard: str) -> dict[str, Any]:
    return {"alpha": exp.statistics.alpha}


def published_margin_params(exp: Experiment, target: Target, leaderboard: str) -> dict[str, Any]:
    """The margin figure's dataset and the level of the per-input test it counts."""
    return {"dataset": leaderboard, "alpha": exp.statistics.alpha}


def published_caption(caption: Callable[..., str], *, level: bool = False) -> Callable[[Experiment, list], str]:
    """A caption of :mod:`ddrs.published.captions`, with the tables' α where it states one."""
    return lambda exp, records: caption(exp.statistics.alpha) if level else caption()
