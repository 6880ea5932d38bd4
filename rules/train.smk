# Training (fixed σ "fs" and Algorithm 2 "ds"), and import of published checkpoints.

TRAIN = config["train"]


def train_flags(wildcards):
    """The paper's hyper-parameters for `ddrs train`, from the config's `train` section."""
    ds, adv, macer = TRAIN["ds"], TRAIN["smoothadv"], TRAIN["macer"]
    flags = [
        f"--lr {TRAIN['lr']} --momentum {TRAIN['momentum']}",
        f"--weight-decay {TRAIN['weight_decay']}",
        f"--lr-step {TRAIN['lr_step']} --lr-gamma {TRAIN['lr_gamma']}",
        f"--batch-size {TRAIN['batch_size']}",
        f"--smoothadv-steps {adv['steps']} --smoothadv-epsilon {adv['epsilon']}",
        f"--smoothadv-m {adv['m']} --smoothadv-warmup {adv['warmup_epochs']}",
        f"--macer-m {macer['m']} --macer-lambda {macer['lambda']}",
        f"--macer-gamma {macer['gamma']} --macer-beta {macer['beta']}",
    ]
    if wildcards.mode == "ds":
        flags.append(
            f"--warmup-epochs {0 if published(wildcards.dataset) else ds['warmup_epochs']} "
            f"--k {ds['k']} --n {ds['n']} --sigma-lr {ds['lr']} --min-sigma {ds['min_sigma']}"
        )
    return " ".join(flags)


def train_init(wildcards):
    """DS² on a published-checkpoint dataset fine-tunes the imported fixed-σ model."""
    if published(wildcards.dataset):
        return {"init": f"{model_dir(wildcards.dataset, wildcards.method, 'fs', wildcards.sigma)}/model.pt"}
    return {}


def train_epochs(wildcards):
    spec = DATASETS[wildcards.dataset]
    return spec["finetune_epochs"] if published(wildcards.dataset) else TRAIN["epochs"]


ruleorder: import_checkpoint > train


rule train:
    """Train one base classifier: fixed σ (fs) or data-dependent σ (ds, Algorithm 2)."""
    input:
        unpack(train_init),
    output:
        model=f"{RESULTS}/{{dataset}}/{{method}}/{{mode}}/sigma{{sigma}}/model.pt",
        log=f"{RESULTS}/{{dataset}}/{{method}}/{{mode}}/sigma{{sigma}}/train.csv",
        sigmas=f"{RESULTS}/{{dataset}}/{{method}}/{{mode}}/sigma{{sigma}}/train_sigmas.tsv",
    log:
        f"{RESULTS}/logs/train/{{dataset}}_{{method}}_{{mode}}_sigma{{sigma}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train/{{dataset}}_{{method}}_{{mode}}_sigma{{sigma}}.tsv"
    params:
        arch=lambda wc: DATASETS[wc.dataset]["arch"],
        scale=lambda wc: smoothing_scale(wc.method, wc.sigma),
        epochs=train_epochs,
        flags=train_flags,
        init=lambda wc, input: f"--init {input.init}" if "init" in input.keys() else "",
    threads: 2
    resources:
        mem_mb=4000,
        runtime=lambda wc: 60 * 24 if wc.dataset in ("cifar10", "imagenet") else 30,
        gpu=GPUS,
    conda:
        "../envs/ddrs.yaml"
    shell:
        "ddrs train --dataset {wildcards.dataset} --data-root {config[data_root]} "
        "--arch {params.arch} --method {wildcards.method} --train-mode {wildcards.mode} "
        "--sigma {params.scale} --epochs {params.epochs} {params.flags} {params.init} "
        "--seed {config[seed]} --device {config[device]} "
        "--out {output.model} --log {output.log} --sigma-table {output.sigmas} 2> {log}"


rule import_checkpoint:
    """Bring a published Cohen / SmoothAdv / MACER checkpoint into our format (ImageNet rows)."""
    input:
        lambda wc: DATASETS[wc.dataset]["checkpoints"][wc.method][wc.sigma],
    output:
        model=f"{RESULTS}/{{dataset}}/{{method}}/fs/sigma{{sigma}}/model.pt",
    wildcard_constraints:
        dataset="|".join(d for d in DATASETS if published(d)) or "(?!)",
    log:
        f"{RESULTS}/logs/import/{{dataset}}_{{method}}_sigma{{sigma}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/import/{{dataset}}_{{method}}_sigma{{sigma}}.tsv"
    params:
        arch=lambda wc: DATASETS[wc.dataset]["arch"],
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    conda:
        "../envs/ddrs.yaml"
    shell:
        "ddrs import-checkpoint --published {input} --arch {params.arch} "
        "--dataset {wildcards.dataset} --method {wildcards.method} --sigma {wildcards.sigma} "
        "--out {output.model} 2> {log}"
