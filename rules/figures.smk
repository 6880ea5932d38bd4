# The paper's figures (PNG + PDF), drawn from the certification and σ logs.


rule certified_accuracy_figure:
    """Figures 3–5: one panel per σ₀ with Method, -DS and -DS², the envelope last."""
    input:
        lambda wc: logs_of(method_dataset_records(wc)),
    output:
        png=report(
            f"{RESULTS}/figures/certified_{{method}}_{{dataset}}.png",
            caption="../report/certified_accuracy.rst",
            category="Figures",
            subcategory="Certified accuracy",
        ),
        pdf=f"{RESULTS}/figures/certified_{{method}}_{{dataset}}.pdf",
    log:
        f"{RESULTS}/logs/figures/certified_{{method}}_{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/figures/certified_{{method}}_{{dataset}}.tsv"
    conda:
        "../envs/ddrs.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        kind="sigma_panels",
        records=method_dataset_records,
    script:
        "../workflow/scripts/figure.py"


rule k_sweep_figure:
    """Figure 7: certified accuracy for each number K of Algorithm 1 steps."""
    input:
        lambda wc: logs_of(k_sweep_records(wc)),
    output:
        png=report(
            f"{RESULTS}/figures/ksweep_{{method}}_{{dataset}}.png",
            caption="../report/k_sweep.rst",
            category="Figures",
            subcategory="K sweep",
        ),
        pdf=f"{RESULTS}/figures/ksweep_{{method}}_{{dataset}}.pdf",
    log:
        f"{RESULTS}/logs/figures/ksweep_{{method}}_{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/figures/ksweep_{{method}}_{{dataset}}.tsv"
    conda:
        "../envs/ddrs.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        kind="k_sweep",
        records=k_sweep_records,
    script:
        "../workflow/scripts/figure.py"


rule sigma_examples_figure:
    """Figure 6 / Appendix D: inputs clean, noised at σ₀ and noised at their σ*ₓ."""
    input:
        sigmas=lambda wc: f"{showcase_run(wc.dataset)}/sigma_opt.tsv",
        data=data_marker,
    output:
        png=report(
            f"{RESULTS}/figures/sigma_examples_{{dataset}}.png",
            caption="../report/sigma_examples.rst",
            category="Figures",
            subcategory="σ*ₓ",
        ),
        pdf=f"{RESULTS}/figures/sigma_examples_{{dataset}}.pdf",
    log:
        f"{RESULTS}/logs/figures/sigma_examples_{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/figures/sigma_examples_{{dataset}}.tsv"
    conda:
        "../envs/ddrs.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        kind="sigma_examples",
        sigma0=lambda wc: showcase(wc.dataset)[1],
        k=lambda wc: showcase(wc.dataset)[2],
        data_root=config["data_root"],
        seed=config["seed"],
        examples=4,
    script:
        "../workflow/scripts/figure.py"


rule sigma_histogram_figure:
    """Appendix E: where the good σ*ₓ are — the histogram, improved inputs highlighted."""
    input:
        fixed=lambda wc: f"{showcase_run(wc.dataset)}/certify_fixed.tsv",
        ds=lambda wc: f"{showcase_run(wc.dataset)}/memory_K{showcase(wc.dataset)[2]}.tsv",
    output:
        png=report(
            f"{RESULTS}/figures/sigma_histogram_{{dataset}}.png",
            caption="../report/sigma_histogram.rst",
            category="Figures",
            subcategory="σ*ₓ",
        ),
        pdf=f"{RESULTS}/figures/sigma_histogram_{{dataset}}.pdf",
    log:
        f"{RESULTS}/logs/figures/sigma_histogram_{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/figures/sigma_histogram_{{dataset}}.tsv"
    conda:
        "../envs/ddrs.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        kind="sigma_histogram",
        sigma0=lambda wc: showcase(wc.dataset)[1],
    script:
        "../workflow/scripts/figure.py"


rule p_a_figure:
    """Beyond the paper: the p̲A ECDF, and easy vs hard inputs next to ACR ("ACR is a poor metric")."""
    input:
        lambda wc: logs_of(showcase_records(wc.dataset)),
    output:
        png=report(
            f"{RESULTS}/figures/{{kind}}_{{dataset}}.png",
            caption="../report/beyond_acr.rst",
            category="Figures",
            subcategory="Beyond ACR",
        ),
        pdf=f"{RESULTS}/figures/{{kind}}_{{dataset}}.pdf",
    log:
        f"{RESULTS}/logs/figures/{{kind}}_{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/figures/{{kind}}_{{dataset}}.tsv"
    wildcard_constraints:
        kind="pa_ecdf|easy_hard",
    conda:
        "../envs/ddrs.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        kind=lambda wc: wc.kind,
        records=lambda wc: showcase_records(wc.dataset),
    script:
        "../workflow/scripts/figure.py"
