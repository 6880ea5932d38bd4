# The paper's tables, each a file target built from certification logs (CSV + Markdown + LaTeX).


rule best_table:
    """Tables 1–4: best certified accuracy per radius and ACR, Method / -DS / -DS²."""
    input:
        lambda wc: logs_of(table_records(wc)),
    output:
        csv=report(
            f"{RESULTS}/tables/{{table}}.csv",
            caption="../report/best_table.rst",
            category="Tables",
            subcategory="Best per radius",
        ),
        md=f"{RESULTS}/tables/{{table}}.md",
        tex=f"{RESULTS}/tables/{{table}}.tex",
        winners=f"{RESULTS}/tables/{{table}}_winners.csv",
    log:
        f"{RESULTS}/logs/tables/{{table}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/tables/{{table}}.tsv"
    wildcard_constraints:
        table="table[1-4]",
    conda:
        "../envs/ddrs.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        kind="best",
        records=table_records,
        radii=lambda wc: radii_of("l1_radii" if wc.table == "table4" else "radii"),
        uniform_convention=config["uniform"]["convention"],
    script:
        "../workflow/scripts/table.py"


rule appendix_h_table:
    """Appendix H: certified accuracy per σ₀ and per K for every method and mode."""
    input:
        lambda wc: logs_of(method_records(wc.method)),
    output:
        csv=report(
            f"{RESULTS}/tables/appendix_h_{{method}}.csv",
            caption="../report/appendix_h.rst",
            category="Tables",
            subcategory="Appendix H",
        ),
        md=f"{RESULTS}/tables/appendix_h_{{method}}.md",
        tex=f"{RESULTS}/tables/appendix_h_{{method}}.tex",
    log:
        f"{RESULTS}/logs/tables/appendix_h_{{method}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/tables/appendix_h_{{method}}.tsv"
    conda:
        "../envs/ddrs.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        kind="per_setting",
        records=lambda wc: method_records(wc.method),
        radii=radii_of("radii"),
    script:
        "../workflow/scripts/table.py"


rule appendix_b_table:
    """Appendix B: grid search vs Algorithm 1 at the same budget of base-classifier evaluations."""
    input:
        logs_of(appendix_b_records()),
    output:
        csv=report(
            f"{RESULTS}/tables/appendix_b.csv",
            caption="../report/appendix_b.rst",
            category="Tables",
            subcategory="Appendix B",
        ),
        md=f"{RESULTS}/tables/appendix_b.md",
        tex=f"{RESULTS}/tables/appendix_b.tex",
    log:
        f"{RESULTS}/logs/tables/appendix_b.log",
    benchmark:
        f"{RESULTS}/benchmarks/tables/appendix_b.tsv"
    conda:
        "../envs/ddrs.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        kind="grid_search",
        records=appendix_b_records(),
        radii=radii_of("radii"),
    script:
        "../workflow/scripts/table.py"


rule appendix_f_table:
    """Appendix F: seconds per input, fixed vs data-dependent certification."""
    input:
        logs=logs_of(all_records()),
        benchmarks=benchmarks_of(all_records()),
    output:
        csv=report(
            f"{RESULTS}/tables/appendix_f.csv",
            caption="../report/appendix_f.rst",
            category="Tables",
            subcategory="Appendix F",
        ),
        md=f"{RESULTS}/tables/appendix_f.md",
        tex=f"{RESULTS}/tables/appendix_f.tex",
    log:
        f"{RESULTS}/logs/tables/appendix_f.log",
    benchmark:
        f"{RESULTS}/benchmarks/tables/appendix_f.tsv"
    conda:
        "../envs/ddrs.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        kind="runtime",
        records=[r for r in all_records() if r["certify_mode"] != "gds"],
    script:
        "../workflow/scripts/table.py"


rule memory_summary:
    """How many inputs Algorithm 3 kept, moved into a region, or shrank, per memory log."""
    input:
        logs_of(all_records()),
    output:
        csv=report(
            f"{RESULTS}/tables/memory_summary.csv",
            caption="../report/memory_summary.rst",
            category="Tables",
            subcategory="Memory",
        ),
        md=f"{RESULTS}/tables/memory_summary.md",
        tex=f"{RESULTS}/tables/memory_summary.tex",
    log:
        f"{RESULTS}/logs/tables/memory_summary.log",
    benchmark:
        f"{RESULTS}/benchmarks/tables/memory_summary.tsv"
    conda:
        "../envs/ddrs.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        kind="memory",
        records=[r for r in all_records() if r["certify_mode"] != "fs"],
    script:
        "../workflow/scripts/table.py"
