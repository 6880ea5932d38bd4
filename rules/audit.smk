# The certificate audit (issue 69, ddrs.jobs.audit): table 1's certificates attacked inside their radius,
# fixed σ as the control, DDRS without and with its memory. Each job reads its document (ddrs.pipeline.audit_plan)
# and takes its files as flags; the soundness ledger and the order dependence are catalogue entries.


rule audit_fixed:
    """Cohen et al.'s fixed-σ certificates attacked: the control."""
    input:
        model=MODEL,
        log=run_file(RUN, "certify_fixed"),
        data=data_marker,
    output:
        LAYOUT.audit(
            "{dataset}", "{method}", "{mode}", "{sigma}", "{replicate}", "fixed"
        ),
    log:
        LAYOUT.log("audit", f"{JOB}_fixed"),
    benchmark:
        LAYOUT.benchmark("audit", f"{JOB}_fixed")
    conda:
        "../envs/ddrs.yaml"
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=certify_runtime,
        gpu=GPUS,
    params:
        document=audit_document,
    shell:
        "echo {params.document:q} | ddrs --threads {threads} audit --config - "
        "--checkpoint {input.model} --log {input.log} --out {output} 2> {log}"


rule audit_data_dependent:
    """DDRS's certificates at Algorithm 1's K attacked: at every query σ by Algorithm 1, and through the
    memory of Algorithm 3."""
    input:
        model=MODEL,
        log=run_file(RUN, "certify_k", k="{k}"),
        memory=run_file(RUN, "memory_k", k="{k}"),
        data=data_marker,
    output:
        LAYOUT.audit(
            "{dataset}", "{method}", "{mode}", "{sigma}", "{replicate}", "K{k}"
        ),
    log:
        LAYOUT.log("audit", f"{JOB}_K{{k}}"),
    benchmark:
        LAYOUT.benchmark("audit", f"{JOB}_K{{k}}")
    conda:
        "../envs/ddrs.yaml"
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=certify_runtime,
        gpu=GPUS,
    params:
        document=audit_document,
    shell:
        "echo {params.document:q} | ddrs --threads {threads} audit --config - --checkpoint {input.model} "
        "--log {input.log} --memory-log {input.memory} --out {output} 2> {log}"
