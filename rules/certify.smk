# Cohen's CERTIFY with a fixed σ; Algorithm 1 (one run, snapshots at every K) with CERTIFY at σ*ₓ;
# the Appendix-B grid-search baseline with CERTIFY at its σ; Súkeník et al.'s semi-elastic σ(x)
# with CERTIFY at it and their certificate. A σ and the certification that reads
# it form a strict chain, so one job runs both in one process (`ddrs job`): the model, the data
# and CUDA start once per chain, not once per step. Each job reads its arguments as one JSON
# document (ddrs.pipeline.job_plan) and takes its files as flags.

#: The shell of a job that writes a σ log (Algorithm 1's or the grid search's), certifies at it and
#: makes each certificate sound with Algorithm 3: the data-dependent and grid-search rules.
SIGMA_LOG_SHELL = (
    "echo {params.document:q} | ddrs --threads {threads} job --config - --speed {params.speed:q} "
    "--checkpoint {input.model} --sigma-log {output.sigmas} --out {output.certified} "
    "--memory-out {output.memory} 2> {log}"
)


rule certify_fixed:
    """Cohen et al.'s CERTIFY with the training σ for every input (the Method rows)."""
    input:
        model=MODEL,
        data=data_marker,
    output:
        run_file(RUN, "certify_fixed"),
    log:
        LAYOUT.log("certify", f"{JOB}_fixed"),
    benchmark:
        LAYOUT.benchmark("certify", f"{JOB}_fixed")
    conda:
        "../envs/ddrs.yaml"
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=certify_runtime,
        gpu=GPUS,
    params:
        document=job_document("fixed_certification"),
        speed=job_speed,
    shell:
        "echo {params.document:q} | ddrs --threads {threads} job --config - --speed {params.speed:q} "
        "--checkpoint {input.model} --out {output} 2> {log}"


# The same fixed-σ certification with CERTIFY's noise from another seed: the Monte Carlo part of the
# variance budget (replication.monte_carlo).
use rule certify_fixed as certify_monte_carlo with:
    output:
        run_file(RUN, "certify_monte_carlo", draw="{draw}"),
    log:
        LAYOUT.log("certify", f"{JOB}_mc{{draw}}"),
    benchmark:
        LAYOUT.benchmark("certify", f"{JOB}_mc{{draw}}")
    params:
        document=job_document("monte_carlo_certification", draw="draw"),
        speed=job_speed,


# The same fixed-σ certification, sequential (the sequential_comparison table's logs): draws until
# every radius of the grid is decided, at most n (docs/protocol.md, "Sequential certification").
use rule certify_fixed as certify_sequential with:
    output:
        run_file(RUN, "certify_sequential"),
    log:
        LAYOUT.log("certify", f"{JOB}_sequential"),
    benchmark:
        LAYOUT.benchmark("certify", f"{JOB}_sequential")
    params:
        document=job_document("sequential_certification"),
        speed=job_speed,


# One job per model runs Algorithm 1 to the largest K of its grid (the σ log, a snapshot at each K),
# then certifies every snapshot and makes each certificate sound with Algorithm 3. A rule's outputs
# are fixed, so each distinct K grid (Appendix H) gets a rule of its own.
for group in EXP.grid.k_grid_groups():

    rule:
        name:
            f"certify_data_dependent_{group.name}"
        input:
            model=MODEL,
            data=data_marker,
        output:
            sigmas=run_file(RUN, "sigma_log"),
            certified=[run_file(RUN, "certify_k", k=k) for k in group.ks],
            memory=[run_file(RUN, "memory_k", k=k) for k in group.ks],
        log:
            LAYOUT.log("certify", f"{JOB}_ds"),
        benchmark:
            LAYOUT.benchmark("certify", f"{JOB}_ds")
        wildcard_constraints:
            dataset=group.dataset,
            method=group.method or "|".join(METHODS),
            mode=group.mode,
        conda:
            "../envs/ddrs.yaml"
        threads: THREADS
        resources:
            mem_mb=8000,
            runtime=lambda wc, input, ks=group.ks: certify_runtime(
                wc, passes=1 + len(ks)
            ),
            gpu=GPUS,
        params:
            document=job_document("data_dependent_certification"),
            speed=job_speed,
        shell:
            SIGMA_LOG_SHELL


rule certify_grid_search:
    """Appendix B: σ per input from a grid at Algorithm 1's budget of base-classifier evaluations,
    then CERTIFY with it, made sound by Algorithm 3."""
    input:
        model=MODEL,
        data=data_marker,
    output:
        sigmas=run_file(RUN, "grid_sigma_log", n="{n}"),
        certified=run_file(RUN, "certify_grid", n="{n}"),
        memory=run_file(RUN, "memory_grid", n="{n}"),
    log:
        LAYOUT.log("certify", f"{JOB}_grid_n{{n}}"),
    benchmark:
        LAYOUT.benchmark("certify", f"{JOB}_grid_n{{n}}")
    conda:
        "../envs/ddrs.yaml"
    threads: THREADS
    resources:
        mem_mb=8000,
        runtime=lambda wc: certify_runtime(wc, passes=2),
        gpu=GPUS,
    params:
        document=job_document("grid_search_certification", n="n"),
        speed=job_speed,
    shell:
        SIGMA_LOG_SHELL


rule certify_semi_elastic:
    """Method-IDRS: Súkeník et al.'s semi-elastic σ(x) of every input (from the training σ and the
    training inputs), Cohen's fixed-n CERTIFY at it, then their certificate (docs/protocol.md,
    "A soundly certified data-dependent row")."""
    input:
        model=MODEL,
        data=data_marker,
    output:
        sigmas=run_file(RUN, "semi_elastic_sigma_log"),
        certified=run_file(RUN, "certify_semi_elastic"),
        sound=run_file(RUN, "semi_elastic"),
    log:
        LAYOUT.log("certify", f"{JOB}_semi_elastic"),
    benchmark:
        LAYOUT.benchmark("certify", f"{JOB}_semi_elastic")
    wildcard_constraints:
        mode="fs",
    conda:
        "../envs/ddrs.yaml"
    threads: THREADS
    resources:
        mem_mb=8000,
        runtime=certify_runtime,
        gpu=GPUS,
    params:
        document=job_document("semi_elastic_certification"),
        speed=job_speed,
    shell:
        "echo {params.document:q} | ddrs --threads {threads} job --config - --speed {params.speed:q} "
        "--checkpoint {input.model} --sigma-log {output.sigmas} --out {output.certified} {output.sound} "
        "2> {log}"
