# The paper's tables and figures: one rule per entry of the target catalogue (ddrs.pipeline.catalogue), which
# names each one's outputs, inputs, builder, caption and parameters. The adapter runs any of them.
from ddrs.pipeline.catalogue import CATALOGUE
from ddrs.pipeline.target import REPORTED


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
        script:
            "../workflow/scripts/target.py"
