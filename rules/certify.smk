# Cohen's CERTIFY with a fixed σ, Algorithm 1 (one run, snapshots at every K), CERTIFY with σ*ₓ,
# and the Appendix-B grid-search baseline.

CERT = config["certify"]
OPT = config["optimize_sigma"]
MODEL = f"{RESULTS}/{{dataset}}/{{method}}/{{mode}}/sigma{{sigma}}/model.pt"
RUN = f"{RESULTS}/{{dataset}}/{{method}}/{{mode}}/sigma{{sigma}}"
JOB = "{dataset}_{method}_{mode}_sigma{sigma}"


def certify_flags(wildcards):
    return (
        f"--dataset {wildcards.dataset} --data-root {config['data_root']} "
        f"--noise {noise_of(wildcards.method)} {test_subset(wildcards.dataset)} "
        f"--seed {config['seed']} --device {config['device']} --precision {config['precision']}"
    )


def sigma_log(wc):
    """Where σ*ₓ comes from: Algorithm 1's snapshots (K) or the grid search (grid_n)."""
    name = "sigma_opt.tsv" if wc.source == "K" else f"sigma_grid_n{wc.value}.tsv"
    return f"{model_dir(wc.dataset, wc.method, wc.mode, wc.sigma)}/{name}"


def certify_runtime(wildcards):
    return 60 * 12 if wildcards.dataset == "imagenet" else 60


rule certify_fixed:
    """Cohen et al.'s CERTIFY with the training σ for every input (the Method rows)."""
    input:
        MODEL,
    output:
        f"{RUN}/certify_fixed.tsv",
    log:
        f"{RESULTS}/logs/certify/{JOB}_fixed.log",
    benchmark:
        f"{RESULTS}/benchmarks/certify/{JOB}_fixed.tsv"
    params:
        flags=certify_flags,
        scale=lambda wc: smoothing_scale(wc.method, wc.sigma),
    threads: 2
    resources:
        mem_mb=4000,
        runtime=certify_runtime,
        gpu=GPUS,
    conda:
        "../envs/ddrs.yaml"
    shell:
        "ddrs certify --checkpoint {input} {params.flags} --scale {params.scale} "
        "--n0 {CERT[n0]} --n {CERT[n]} --alpha {CERT[alpha]} --batch {CERT[batch]} "
        "--out {output} 2> {log}"


rule optimize_sigma:
    """Algorithm 1 for every test input, one run to the largest K with a snapshot at each K."""
    input:
        MODEL,
    output:
        f"{RUN}/sigma_opt.tsv",
    log:
        f"{RESULTS}/logs/optimize_sigma/{JOB}.log",
    benchmark:
        f"{RESULTS}/benchmarks/optimize_sigma/{JOB}.tsv"
    params:
        flags=certify_flags,
        scale=lambda wc: smoothing_scale(wc.method, wc.sigma),
        k=lambda wc: " ".join(str(k) for k in k_grid(wc.dataset)),
    threads: 2
    resources:
        mem_mb=4000,
        runtime=certify_runtime,
        gpu=GPUS,
    conda:
        "../envs/ddrs.yaml"
    shell:
        "ddrs optimize-sigma --checkpoint {input} {params.flags} --sigma0 {params.scale} "
        "--k {params.k} --n {OPT[n]} --lr {OPT[lr]} --n0 {OPT[n0]} "
        "--min-sigma {OPT[min_sigma]} --batch {CERT[batch]} --out {output} 2> {log}"


rule grid_search_sigma:
    """Appendix B: σ per input from a grid, at Algorithm 1's budget of base-classifier evaluations."""
    input:
        MODEL,
    output:
        f"{RUN}/sigma_grid_n{{n}}.tsv",
    log:
        f"{RESULTS}/logs/grid_search/{JOB}_n{{n}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/grid_search/{JOB}_n{{n}}.tsv"
    params:
        flags=certify_flags,
        scale=lambda wc: smoothing_scale(wc.method, wc.sigma),
        budget=config["grid_search"]["budget"],
    threads: 2
    resources:
        mem_mb=4000,
        runtime=certify_runtime,
        gpu=GPUS,
    conda:
        "../envs/ddrs.yaml"
    shell:
        "ddrs optimize-sigma --checkpoint {input} {params.flags} --sigma0 {params.scale} "
        "--grid-search --grid-n {wildcards.n} --grid-budget {params.budget} "
        "--n0 {OPT[n0]} --batch {CERT[batch]} --out {output} 2> {log}"


rule certify_data_dependent:
    """CERTIFY each input with its own σ*ₓ (from Algorithm 1 at K, or from the grid search)."""
    input:
        model=MODEL,
        sigmas=sigma_log,
    output:
        f"{RUN}/certify_{{source}}{{value}}.tsv",
    wildcard_constraints:
        source="K|grid_n",
        value=r"[0-9]+",
    log:
        f"{RESULTS}/logs/certify/{JOB}_{{source}}{{value}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/certify/{JOB}_{{source}}{{value}}.tsv"
    params:
        flags=certify_flags,
        column=lambda wc: f"sigma_K{wc.value}" if wc.source == "K" else f"sigma_grid_n{wc.value}",
    threads: 2
    resources:
        mem_mb=4000,
        runtime=certify_runtime,
        gpu=GPUS,
    conda:
        "../envs/ddrs.yaml"
    shell:
        "ddrs certify --checkpoint {input.model} {params.flags} "
        "--sigma-log {input.sigmas} --sigma-column {params.column} "
        "--n0 {CERT[n0]} --n {CERT[n]} --alpha {CERT[alpha]} --batch {CERT[batch]} "
        "--out {output} 2> {log}"
