"""The catalogue of the paper's tables and figures (no torch): one :class:`Target` per family.

An entry names everything about one table or figure family once: its output name pattern (whose
``{wildcards}`` are the rule's), the query that picks its records from the experiment
(:class:`ddrs.pipeline.Experiment`), its builder (``module:function``, imported only by the job,
so the catalogue stays torch-free), its outputs, caption and report category, and the builder's
parameters (radii, number of examples, the methods a seed paper's study compares: plain methods,
or matched variants such as ``smoothadv@smoothadv_consistency`` where the study's baseline shares
hyper-parameters with another method, :func:`ddrs.methods.variant_options`). The workflow
generates one rule per entry (``rules/tables.smk``) and one adapter runs them all
(``workflow/scripts/target.py`` → :func:`ddrs.pipeline.build.build`).

Adding a table: write its builder (records and keyword parameters in, a DataFrame or
:class:`~ddrs.analysis.tables.BestTable` out) and append one :class:`Target` here.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ddrs.analysis.records import LogRecord, display_name
from ddrs.analysis.reference import BEST_TABLES, PAPER_TABLES, paper_comparison_caption
from ddrs.analysis.render import (
    best_table_caption,
    comparisons_caption,
    runtime_caption,
    selection_caption,
    selection_optimism_caption,
)
from ddrs.methods import METHODS, get_method

if TYPE_CHECKING:
    from ddrs.pipeline import Experiment

Wildcards = dict[str, str]
#: output kinds: a table (CSV with Markdown and LaTeX beside it), its winners, a figure (PNG + PDF)
TABLE = ("csv", "md", "tex")
FIGURE = ("png", "pdf")
#: the output of each kind that the Snakemake report shows, and its category
REPORTED = {"csv": "Tables", "png": "Figures"}


def _flat(files: str | Mapping[str, str] | list[str]) -> list[str]:
    """A path, a mapping of paths or a list of them, as a list."""
    if isinstance(files, str):
        return [files]
    return list(files.values() if isinstance(files, Mapping) else files)


def _once(exp: Experiment, target: Target) -> list[Wildcards]:
    return [{}]


def _nothing(exp: Experiment, target: Target, **wildcards: str) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Target:
    """One paper table or figure family; its fields are the callables ``(exp, target, **wildcards)``."""

    #: the rule's name
    name: str
    #: the output's name under ``tables/`` or ``figures/``, with ``{wildcards}``
    pattern: str
    #: ``module:function`` called with ``records=`` (when the entry has a query), the named files
    #: and the parameters; returns a DataFrame, a BestTable, a Figure or a tuple of them
    builder: str
    #: ``report/<caption>.rst``, and the report's subcategory
    caption: str
    subcategory: str
    outputs: tuple[str, ...] = TABLE
    #: the wildcard values it is built for on this experiment (``[{}]``: once; ``[]``: not at all)
    instances: Callable[[Experiment, Target], list[Wildcards]] = _once
    #: the query that picks its certification logs (their files become the rule's inputs)
    records: Callable[..., list[LogRecord]] | None = None
    #: further input files, by the builder's keyword (a path, a list or a mapping of paths)
    files: Callable[..., dict[str, Any]] = _nothing
    #: the builder's other keywords
    params: Callable[..., dict[str, Any]] = _nothing
    #: the Markdown/LaTeX caption, from the experiment and the records
    caption_of: Callable[[Experiment, list[LogRecord]], str] | None = None
    #: the records' σ logs are inputs too (Appendix F's cost of choosing σ)
    sigma_logs: bool = False
    #: the job reads the dataset itself (waits for ``prepare_data``)
    needs_data: bool = False
    #: the methods a study compares, in its table's order; ``requires``: any of them makes the study
    methods: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    #: Markdown/LaTeX rendering: decimals of percentages and of the ``measured`` columns (the CSV
    #: keeps full precision), best per column in bold
    decimals: int = 1
    bold: bool = True
    measured: tuple[str, ...] = ()

    @property
    def wildcard_names(self) -> list[str]:
        return [field for _, field, _, _ in string.Formatter().parse(self.pattern) if field]

    def paths(self, layout, name: str) -> dict[str, str]:
        """The output files of one instance named ``name`` (or of the pattern), by kind."""
        where = {
            "csv": layout.table(name),
            "md": layout.table(name, "md"),
            "tex": layout.table(name, "tex"),
            "winners": layout.table(f"{name}_winners"),
            "png": layout.figure(name),
            "pdf": layout.figure(name, "pdf"),
        }
        return {kind: where[kind] for kind in self.outputs}

    def query(self, exp: Experiment, wildcards: Mapping[str, str]) -> list[LogRecord]:
        return [] if self.records is None else self.records(exp, self, **wildcards)

    def inputs(self, exp: Experiment, wildcards: Mapping[str, str]) -> list[str]:
        """Every file the job reads: its records' logs (and σ logs), its files, the data marker."""
        records = self.query(exp, wildcards)
        paths = [record.log for record in records]
        if self.sigma_logs:
            paths += sorted({record.sigma_log for record in records if record.sigma_log is not None})
        for value in self.files(exp, self, **wildcards).values():
            paths += _flat(value)
        if self.needs_data:
            paths.append(exp.layout.data_marker(wildcards["dataset"]))
        return paths

    def arguments(self, exp: Experiment, wildcards: Mapping[str, str]) -> dict[str, dict[str, Any]]:
        """What the job's builder is called with, and how its tables are rendered."""
        builder = {**self.files(exp, self, **wildcards), **self.params(exp, self, **wildcards)}
        render: dict[str, Any] = {"decimals": self.decimals, "bold": self.bold}
        if self.measured:
            render["measured"] = self.measured
        if self.records is not None:
            builder["records"] = self.query(exp, wildcards)
            if self.caption_of is not None:
                render["caption"] = self.caption_of(exp, builder["records"])
        elif self.caption_of is not None:
            render["caption"] = self.caption_of(exp, [])
        return {"builder": builder, "render": render}

    def constraints(self, exp: Experiment) -> dict[str, str]:
        """Each wildcard matches the values it takes on this experiment, and nothing else."""
        instances = self.instances(exp, self)
        return {
            name: "|".join(dict.fromkeys(re.escape(i[name]) for i in instances)) or "(?!)"
            for name in self.wildcard_names
        }


# --- the queries' vocabulary ---------------------------------------------------------------------


def best_tables(exp: Experiment) -> list[str]:
    """The DDRS-style tables (Tables 1–4, …) of the configured methods that have at least one log."""
    return list(dict.fromkeys(get_method(m).table for m in exp.methods if exp.method_records(m)))


def appendix_h_methods(exp: Experiment) -> list[str]:
    return [m for m in exp.full_methods() if exp.method_records(m)]


def _if(condition: Callable[[Experiment], Any]) -> Callable[[Experiment, Target], list[Wildcards]]:
    return lambda exp, target: [{}] if condition(exp) else []


def _wanted(exp: Experiment, target: Target) -> bool:
    """The config trains one of the entry's ``requires`` methods (or it requires none)."""
    return not target.requires or bool(set(target.requires) & set(exp.methods))


def _studied(exp: Experiment, target: Target) -> list[Wildcards]:
    """Every dataset, when the config trains any of the study's ``requires`` methods."""
    return [{"dataset": d} for d in exp.datasets] if _wanted(exp, target) else []


def _computed(has: Callable[[Experiment, Target, str], Any]) -> Callable[[Experiment, Target], list[Wildcards]]:
    """The datasets of computed models (not given logs) where ``has(exp, target, dataset)``."""
    return lambda exp, target: [{"dataset": d} for d in exp.datasets if not exp.is_logs(d) and has(exp, target, d)]


def _figure_datasets(exp: Experiment, target: Target) -> list[Wildcards]:
    """The datasets of the figures (:meth:`~ddrs.pipeline.Records.figure_datasets`)."""
    return [{"dataset": d} for d in exp.figure_datasets()] if _wanted(exp, target) else []


def _method_figures(exp: Experiment, target: Target) -> list[Wildcards]:
    return [{"method": m, "dataset": d} for d in exp.figure_datasets() for m in exp.full_methods() if exp.sigmas(d, m)]


def _l2_radii(exp: Experiment, target: Target, **wildcards: str) -> dict[str, Any]:
    """The ℓ2 radius grid, and the tables' inference (level, bootstrap resamples, seed)."""
    return {"radii": exp.radii(2), "inference": exp.statistics.inference}


def _alpha(exp: Experiment, target: Target, **wildcards: str) -> dict[str, Any]:
    """The level of a figure's interval bands."""
    return {"alpha": exp.statistics.alpha}


def _table_radii(exp: Experiment, table: str) -> dict[str, Any]:
    """The radius grid of a best table's norm, and the tables' statistics."""
    return {"radii": exp.radii(METHODS[exp.table_methods(table)[0]].norm), "inference": exp.statistics.inference}


def _selected(selection: str) -> Callable[[Experiment, Target], list[Wildcards]]:
    """Every best table, when the config builds the tables chosen under ``selection``."""
    return lambda exp, t: [{"table": name} for name in best_tables(exp)] if exp.statistics.builds(selection) else []


def _best_caption(selection: str) -> Callable[[Experiment, list[LogRecord]], str]:
    def caption(exp: Experiment, records: list[LogRecord]) -> str:
        conventions = {r.dataset: exp.uniform_convention(r.dataset) for r in records if r.norm == 1}
        method, norm, alpha = display_name(records[0].method), records[0].norm, exp.statistics.alpha
        return best_table_caption(method, norm=norm, uniform_conventions=conventions, selection=selection, alpha=alpha)

    return caption


def _comparisons_caption(selection: str) -> Callable[[Experiment, list[LogRecord]], str]:
    return lambda exp, records: f"{comparisons_caption(exp.statistics.alpha)} {selection_caption(selection)}"


def _showcase_log(file: str) -> Callable[[Experiment, str], str]:
    return lambda exp, dataset: f"{exp.run_dir(exp.showcase(dataset))}/{file.format(k=exp.showcase_k(dataset))}"


def _comparison_tables(exp: Experiment) -> dict[str, str]:
    """Our tables the DDRS paper also prints (:mod:`ddrs.analysis.reference`), by name."""
    names = best_tables(exp) + [f"appendix_h_{m}" for m in appendix_h_methods(exp)]
    return {name: exp.layout.table(name) for name in names if name in PAPER_TABLES}


def _paper_comparison(exp: Experiment, target: Target) -> list[Wildcards]:
    """The comparison, where the config asks for it; a config that builds none of the paper's
    Tables 1–4 (whose overlay the comparison draws) is refused, naming the methods that do."""
    if not exp.config.get("compare_with_paper"):
        return []
    if not set(_comparison_tables(exp)) & set(BEST_TABLES):
        raise ValueError(
            "compare_with_paper: none of this config's tables is one of the DDRS paper's Tables 1–4 "
            "(methods cohen, smoothadv, macer, uniform); add one of those methods or set compare_with_paper: false"
        )
    return [{}]


#: Sun et al. (2024), Tables 1 and 2, Figure 3: Gaussian, MACER, SmoothAdv, Consistency and ACR-focused
#: training; their Gaussian baseline draws m = 4 as their method (§6), the matched variant cohen@easy_focus
SUN2024_METHODS = ("cohen@easy_focus", "macer", "smoothadv", "consistency", "easy_focus")
TABLES = "ddrs.analysis.tables"
PLOTS = "ddrs.analysis.plots"
FIGURES = "ddrs.analysis.figure_builders"

CATALOGUE: dict[str, Target] = {
    target.name: target
    for target in (
        Target(
            "best_table",
            "{table}",
            f"{TABLES}:best_table",
            "best_table",
            "Best per radius",
            outputs=(*TABLE, "winners"),
            instances=_selected("test"),
            records=lambda exp, t, table: exp.table_records(table),
            params=lambda exp, t, table: {**_table_radii(exp, table), "selection": "test"},
            caption_of=_best_caption("test"),
        ),
        Target(
            "appendix_h_table",
            "appendix_h_{method}",
            f"{TABLES}:per_setting_table",
            "appendix_h",
            "Appendix H",
            instances=lambda exp, t: [{"method": m} for m in appendix_h_methods(exp)],
            records=lambda exp, t, method: exp.method_records(method),
            params=lambda exp, t, method: {
                "radii": exp.radii(METHODS[method].norm),
                "inference": exp.statistics.inference,
            },
        ),
        Target(
            "appendix_b_table",
            "appendix_b",
            f"{TABLES}:grid_search_table",
            "appendix_b",
            "Appendix B",
            instances=_if(lambda exp: exp.grid_datasets()),
            records=lambda exp, t: exp.appendix_b_records(),
            params=_l2_radii,
        ),
        Target(
            "appendix_f_table",
            "appendix_f",
            f"{TABLES}:runtime_table",
            "appendix_f",
            "Appendix F",
            instances=_if(lambda exp: exp.computed_records()),
            records=lambda exp, t: [r for r in exp.computed_records() if r.certify_mode != "gds"],
            sigma_logs=True,
            caption_of=lambda exp, records: runtime_caption(),
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
            instances=_if(lambda exp: exp.computed_records()),
            records=lambda exp, t: [r for r in exp.computed_records() if r.certify_mode != "fs"],
            bold=False,
        ),
        Target(
            "consistency_table",
            "consistency_{dataset}",
            f"{TABLES}:per_sigma_table",
            "study_table",
            "Seed papers",
            # Jeong & Shin (2020), Table 2: per σ, Gaussian, + Consistency, SmoothAdv, + Consistency,
            # Stability training and MACER; built when the config trains one beyond the DDRS paper's.
            # Their SmoothAdv shares the attack of SmoothAdv+Consistency (supplement A.3, App. B)
            methods=(
                "cohen",
                "consistency",
                "smoothadv@smoothadv_consistency",
                "smoothadv_consistency",
                "stability",
                "macer",
            ),
            requires=("consistency", "smoothadv_consistency", "stability"),
            instances=_studied,
            records=lambda exp, t, dataset: exp.study_records(t.methods, dataset),
            params=_l2_radii,
        ),
        Target(
            "methods_table",
            "methods_{dataset}",
            f"{TABLES}:per_sigma_table",
            "study_table",
            "Seed papers",
            methods=SUN2024_METHODS,
            requires=("easy_focus",),
            instances=_studied,
            records=lambda exp, t, dataset: exp.study_records(t.methods, dataset),
            params=_l2_radii,
        ),
        Target(
            "easy_focus_ablation_table",
            "easy_focus_ablation_{dataset}",
            f"{TABLES}:per_sigma_table",
            "study_table",
            "Seed papers",
            instances=_computed(lambda exp, t, d: exp.ablation_records(d)),
            records=lambda exp, t, dataset: exp.ablation_records(dataset),
            params=_l2_radii,
        ),
        Target(
            "gradient_norms_table",
            "gradient_norms_{dataset}",
            f"{TABLES}:gradient_norms_table",
            "gradient_norms",
            "Seed papers",
            methods=SUN2024_METHODS,
            instances=_computed(lambda exp, t, d: exp.gradient_norm_runs(t.methods, d)),
            files=lambda exp, t, dataset: {
                "paths": [f"{exp.run_dir(r)}/gradient_norms.tsv" for r in exp.gradient_norm_runs(t.methods, dataset)]
            },
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
            instances=_paper_comparison,
            files=lambda exp, t: {"tables": _comparison_tables(exp)},
            caption_of=lambda exp, records: paper_comparison_caption(exp.statistics.alpha),
            # Appendix H and part of Table 3 print two decimals
            decimals=2,
            bold=False,
        ),
        Target(
            "certified_accuracy_figure",
            "certified_{method}_{dataset}",
            f"{PLOTS}:sigma_panels_figure",
            "certified_accuracy",
            "Certified accuracy",
            outputs=FIGURE,
            instances=_method_figures,
            records=lambda exp, t, method, dataset: exp.method_dataset_records(method, dataset),
            params=_alpha,
        ),
        Target(
            "k_sweep_figure",
            "ksweep_{method}_{dataset}",
            f"{PLOTS}:k_sweep_figure",
            "k_sweep",
            "K sweep",
            outputs=FIGURE,
            instances=_method_figures,
            records=lambda exp, t, method, dataset: exp.k_sweep_records(method, dataset),
            params=_alpha,
        ),
        Target(
            "sigma_examples_figure",
            "sigma_examples_{dataset}",
            f"{FIGURES}:sigma_examples",
            "sigma_examples",
            "σ*ₓ",
            outputs=FIGURE,
            instances=_figure_datasets,
            files=lambda exp, t, dataset: {"sigma_log": _showcase_log("sigma_opt.tsv")(exp, dataset)},
            params=lambda exp, t, dataset: {
                "dataset": dataset,
                "sigma0": exp.showcase(dataset).sigma,
                "k": exp.showcase_k(dataset),
                "examples": 4,
                "data_root": exp.config["data_root"],
                "seed": exp.config["seed"],
            },
            needs_data=True,
        ),
        Target(
            "sigma_histogram_figure",
            "sigma_histogram_{dataset}",
            f"{PLOTS}:sigma_histogram_figure",
            "sigma_histogram",
            "σ*ₓ",
            outputs=FIGURE,
            instances=_figure_datasets,
            files=lambda exp, t, dataset: {
                "fixed_log": _showcase_log("certify_fixed.tsv")(exp, dataset),
                "ds_log": _showcase_log("memory_K{k}.tsv")(exp, dataset),
            },
            params=lambda exp, t, dataset: {"sigma0": exp.showcase(dataset).sigma},
        ),
        Target(
            "pa_ecdf_figure",
            "pa_ecdf_{dataset}",
            f"{FIGURES}:p_a_cdf",
            "beyond_acr",
            "Beyond ACR",
            outputs=FIGURE,
            instances=_figure_datasets,
            records=lambda exp, t, dataset: exp.showcase_records(dataset),
        ),
        Target(
            "easy_hard_figure",
            "easy_hard_{dataset}",
            f"{FIGURES}:easy_hard",
            "beyond_acr",
            "Beyond ACR",
            outputs=FIGURE,
            instances=_figure_datasets,
            records=lambda exp, t, dataset: exp.showcase_records(dataset),
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
            instances=_figure_datasets,
            records=lambda exp, t, dataset: exp.study_records(t.methods, dataset),
        ),
    )
}


# --- tables that carry a claim (issue 19): honest selection, paired comparisons, optimism --------

COMPARISONS = "ddrs.analysis.comparisons"


def _first_method(exp: Experiment, study: Target, dataset: str) -> str:
    """The row a seed paper's study compares every method with: its first method (Gaussian)."""
    return display_name(study.methods[0])


def _ablation_baseline(exp: Experiment, study: Target, dataset: str) -> str:
    """The ablation's all-on variant (Sun et al. 2024, Table 3: the full ACR-focused training)."""
    full = {display_name(get_method(r.method).variants()[-1]) for r in exp.ablation_records(dataset)}
    if len(full) != 1:
        raise ValueError(f"{dataset}: the ablation comparisons need one ablated method, got {sorted(full)}")
    return full.pop()


def _study_comparisons(name: str, study: Target, baseline: Callable[[Experiment, Target, str], str]) -> Target:
    """Each row of ``study`` (a per-σ table) against ``baseline``'s row at the same σ₀, on the study's
    logs; built where the study has the baseline row and another one."""

    def has_pairs(exp: Experiment, wildcards: Wildcards) -> bool:
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
        params=lambda exp, t, dataset: {
            **_l2_radii(exp, t),
            "baseline": baseline(exp, study, dataset),
        },
        caption_of=lambda exp, records: (
            f"{comparisons_caption(exp.statistics.alpha)} Baseline: "
            f"{baseline(exp, study, records[0].dataset)}, at each σ₀."
        ),
    )


def _table_records(exp: Experiment, target: Target, table: str) -> list[LogRecord]:
    """A best table's logs (the issue-19 tables of a best table read the same inputs)."""
    return exp.table_records(table)


def _best_table_comparisons(selection: str) -> Target:
    """A best table's paired comparisons (DS vs FS, DS² vs DS and FS), its cells selected as ``selection``."""
    suffix = "" if selection == "test" else f"_{selection}"
    return Target(
        f"comparisons{suffix}_table",
        f"comparisons_{{table}}{suffix}",
        f"{COMPARISONS}:comparisons_table",
        "comparisons",
        "Paired comparisons",
        instances=_selected(selection),
        records=_table_records,
        params=lambda exp, t, table: {**_table_radii(exp, table), "selection": selection},
        caption_of=_comparisons_caption(selection),
    )


CATALOGUE |= {
    target.name: target
    for target in (
        Target(
            "best_table_held_out",
            "{table}_held_out",
            f"{TABLES}:best_table",
            "best_table_held_out",
            "Best per radius",
            outputs=(*TABLE, "winners"),
            instances=_selected("held_out"),
            records=_table_records,
            params=lambda exp, t, table: {**_table_radii(exp, table), "selection": "held_out"},
            caption_of=_best_caption("held_out"),
        ),
        *(_best_table_comparisons(selection) for selection in ("test", "held_out")),
        Target(
            "selection_optimism_table",
            "selection_optimism_{table}",
            f"{COMPARISONS}:selection_optimism_table",
            "selection_optimism",
            "Selection optimism",
            # the held-out split of the `{table}_held_out` tables (same seed)
            instances=_selected("held_out"),
            records=_table_records,
            params=lambda exp, t, table: _table_radii(exp, table),
            caption_of=lambda exp, records: selection_optimism_caption(exp.statistics.alpha),
            bold=False,
        ),
        _study_comparisons("consistency_comparisons", CATALOGUE["consistency_table"], _first_method),
        _study_comparisons("methods_comparisons", CATALOGUE["methods_table"], _first_method),
        _study_comparisons(
            "easy_focus_ablation_comparisons", CATALOGUE["easy_focus_ablation_table"], _ablation_baseline
        ),
    )
}
