# Training (fixed σ "fs" and Algorithm 2 "ds"), and import of published checkpoints.


ruleorder: import_checkpoint > train


rule train:
    """Train one base classifier: fixed σ (fs) or data-dependent σ (ds, Algorithm 2)."""
    input:
        unpack(train_inputs),
    output:
        model=f"{RESULTS}/{{dataset}}/{{method}}/{{mode}}/sigma{{sigma}}/model.pt",
        log=f"{RESULTS}/{{dataset}}/{{method}}/{{mode}}/sigma{{sigma}}/train.csv",
        sigmas=f"{RESULTS}/{{dataset}}/{{method}}/{{mode}}/sigma{{sigma}}/train_sigmas.tsv",
    log:
        f"{RESULTS}/logs/train/{{dataset}}_{{method}}_{{mode}}_sigma{{sigma}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train/{{dataset}}_{{method}}_{{mode}}_sigma{{sigma}}.tsv"
    conda:
        "../envs/ddrs.yaml"
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=lambda wc: 60 * 24 if wc.dataset in ("cifar10", "imagenet") else 30,
        gpu=GPUS,
    params:
        args=train_args,
    shell:
        "ddrs --threads {threads} train {params.args} --out {output.model} --log {output.log} "
        "--sigma-table {output.sigmas} 2> {log}"


rule import_checkpoint:
    """Bring a published Cohen / SmoothAdv / MACER checkpoint into our format (ImageNet rows)."""
    input:
        lambda wc: DATASETS[wc.dataset]["checkpoints"][wc.method][wc.sigma],
    output:
        model=f"{RESULTS}/{{dataset}}/{{method}}/fs/sigma{{sigma}}/model.pt",
    log:
        f"{RESULTS}/logs/import/{{dataset}}_{{method}}_sigma{{sigma}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/import/{{dataset}}_{{method}}_sigma{{sigma}}.tsv"
    wildcard_constraints:
        dataset="|".join(d for d in DATASETS if published(d)) or "(?!)",
    conda:
        "../envs/ddrs.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    params:
        arch=lambda wc: DATASETS[wc.dataset]["arch"],
    shell:
        "ddrs import-checkpoint --published {input} --arch {params.arch} "
        "--dataset {wildcards.dataset} --method {wildcards.method} --sigma {wildcards.sigma} "
        "--out {output.model} 2> {log}"
