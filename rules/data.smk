# Download and verify each dataset once, before the jobs that read it.


rule prepare_data:
    """torchvision downloads with checksums (MNIST, CIFAR-10); ImageNet and the embedded digits and mnist5k are checked."""
    output:
        LAYOUT.data_marker("{dataset}"),
    log:
        LAYOUT.log("data", "{dataset}"),
    benchmark:
        LAYOUT.benchmark("data", "{dataset}")
    conda:
        "../envs/ddrs.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        args=lambda wc: f"--data-root {config['data_root']} --seed {config['seed']}",
    # a failure's one line (what is missing, and the command that gets it) also on the terminal
    shell:
        "ddrs prepare-data --dataset {wildcards.dataset} {params.args} --out {output} 2> {log}"
        " || {{ tail -n 1 {log} >&2; exit 1; }}"
