# Training (fixed σ "fs" and Algorithm 2 "ds"), and import of published checkpoints.


ruleorder: import_checkpoint > train


rule train:
    """Train one base classifier: fixed σ (fs) or data-dependent σ (ds, Algorithm 2)."""
    input:
        unpack(train_inputs),
    output:
        model=MODEL,
        log=run_file(RUN, "train_log"),
        sigmas=run_file(RUN, "train_sigmas"),
    log:
        LAYOUT.log("train", JOB),
    benchmark:
        LAYOUT.benchmark("train", JOB)
    conda:
        "../envs/ddrs.yaml"
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=train_runtime,
        gpu=GPUS,
    params:
        options=train_options,
        speed=train_speed,
        # compared: CPU float sums, so the weights, follow the thread count (tests/test_speed_keys.py)
        threads=THREADS,
    shell:
        "echo {params.options:q} | ddrs --threads {params.threads} train --config - --speed {params.speed:q} "
        "--out {output.model} --log {output.log} --sigma-table {output.sigmas} 2> {log}"


rule import_checkpoint:
    """Bring a published Cohen / SmoothAdv / MACER / rs4a checkpoint into our format (ImageNet rows)."""
    input:
        lambda wc: EXP.grid.published_checkpoint(
            EXP.run_at(wc.dataset, wc.method, "fs", wc.sigma)
        ),
    output:
        model=LAYOUT.model("{dataset}", "{method}", "fs", "{sigma}"),
    log:
        LAYOUT.log("import", "{dataset}_{method}_sigma{sigma}"),
    benchmark:
        LAYOUT.benchmark("import", "{dataset}_{method}_sigma{sigma}")
    wildcard_constraints:
        dataset="|".join(d for d in EXP.grid.datasets if EXP.grid.is_published(d))
        or "(?!)",
    conda:
        "../envs/ddrs.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    params:
        arch=lambda wc: EXP.grid.datasets[wc.dataset]["arch"],
    shell:
        "ddrs import-checkpoint --published {input} --arch {params.arch} "
        "--dataset {wildcards.dataset} --method {wildcards.method} --sigma {wildcards.sigma} "
        "--out {output.model} 2> {log}"


rule gradient_norms:
    """Sun et al. (2024) Table 1 for one model: gradient norms of its easy and hard training inputs."""
    input:
        model=MODEL,
        data=data_marker,
    output:
        run_file(RUN, "gradient_norms"),
    log:
        LAYOUT.log("gradient_norms", JOB),
    benchmark:
        LAYOUT.benchmark("gradient_norms", JOB)
    conda:
        "../envs/ddrs.yaml"
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=certify_runtime,
        gpu=GPUS,
    params:
        document=job_document("gradient_norms"),
    shell:
        "echo {params.document:q} | ddrs --threads {threads} job --config - --checkpoint {input.model} "
        "--out {output} 2> {log}"
