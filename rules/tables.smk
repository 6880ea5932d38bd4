# The paper's tables and figures: one rule per entry of the target catalogue (ddrs.pipeline.catalogue), which
# names each one's outputs, inputs, builder, caption and parameters; `ddrs build` runs any of them.
from ddrs.pipeline.catalogue import CATALOGUE
from ddrs.pipeline.target import REPORTED

#: The shell of a step that certifies nothing (a table, a figure, a published-logs step): `ddrs build`
#: recomputes its files and arguments from the config (ddrs.pipeline.build.run_step). A shell rule's
#: code, to Snakemake, is this text; a script's was its file's time, which a checkout moves. A failure's
#: last line (the error) also reaches the terminal.
BUILD_SHELL = (
    "echo {params.config:q} | ddrs --threads {threads} build {params.step:q} --wildcards {params.wildcards:q} "
    "--config - 2> {log} || {{ tail -n 1 {log} >&2; exit 1; }}"
)


def build_step(name):
    """The step `ddrs build` runs: the rule's name (a function of threads, so not compared)."""
    return lambda wildcards, threads: name


def build_config(wildcards, threads):
    """The workflow's config for `ddrs build`: it reads threads, so Snakemake does not compare it
    (the rule's identity is its compared params)."""
    return json.dumps(config)


def build_wildcards(wildcards, threads):
    """The job's wildcards for `ddrs build` (not compared: its outputs name them)."""
    return json.dumps(dict(wildcards.items()))


def target_outputs(target):
    """An entry's output files by kind; the reported ones carry its caption and category."""
    paths = target.paths(LAYOUT, target.pattern)
    for kind in set(paths) & set(REPORTED):
        caption = f"../report/{target.caption}.rst"
        paths[kind] = report(
            paths[kind],
            caption,
            category=REPORTED[kind],
            subcategory=target.subcategory,
        )
    return paths


for target in CATALOGUE.values():

    rule:
        name:
            target.name
        input:
            lambda wc, target=target: target.inputs(EXP, dict(wc.items())),
        output:
            **target_outputs(target),
        log:
            LAYOUT.log(
                "tables" if "csv" in target.outputs else "figures", target.pattern
            ),
        benchmark:
            LAYOUT.benchmark(
                "tables" if "csv" in target.outputs else "figures", target.pattern
            )
        wildcard_constraints:
            **target.constraints(EXP),
        conda:
            "../envs/ddrs.yaml"
        threads: 1
        resources:
            mem_mb=2000,
            runtime=10,
        params:
            arguments=lambda wc, target=target: target.arguments(EXP, dict(wc.items())),
            step=build_step(target.name),
            config=build_config,
            wildcards=build_wildcards,
        shell:
            BUILD_SHELL
