# Published certification logs (config key published_logs; ddrs.pipeline.published_logs): one fetch
# job per repository, not one per log, brings its registry logs into the cache (HTTPS at the pinned
# commit, or a local mirror; each checked against its sha256 and written atomically) and writes the
# manifest the tables read (ddrs.published.manifest); each leaderboard dataset's logs are then read
# once into one file. The audit, seed tables and leaderboards are catalogue entries
# (rules/tables.smk). A config without the section has no instance of any of them. Each job's
# compared params are its identity, which its provenance record holds (ddrs.pipeline.provenance);
# `ddrs build` runs it (ddrs.pipeline.published_steps).
from ddrs.pipeline.missing_inputs import own_logs_checked

# The selection's repositories and leaderboards, and where each repository's bytes come from (a
# mirror, the network; part of no identity): a selection, an own log's dataset without a
# leaderboard or an offline config without a mirror is refused in its line, before any job.
try:
    PUBLISHED_SLUGS = {} if EXP.published is None else EXP.published.slugs()
    PUBLISHED_DATASETS = (
        [] if EXP.published is None else list(EXP.published.leaderboards())
    )
    for repository in PUBLISHED_SLUGS.values():
        EXP.published.fetch_source(repository)
except ValueError as error:
    stop(str(error))
# A user's own logs, checked before any job as far as they can be without the published ones:
# a refusal in a line naming the config key, the file and the defect; a log without n warned of.
REFUSED_OWN_LOG, OWN_LOG_WARNINGS = own_logs_checked(EXP)
if REFUSED_OWN_LOG:
    stop(REFUSED_OWN_LOG)
for line in OWN_LOG_WARNINGS:
    logger.warning(line)


rule fetch_published_logs:
    input:
        registry=[] if EXP.published is None else EXP.published.registry_file(),
    output:
        manifest=LAYOUT.published_manifest("{repository}"),
    log:
        LAYOUT.log("published", "fetch_{repository}"),
    benchmark:
        LAYOUT.benchmark("published", "fetch_{repository}")
    wildcard_constraints:
        repository="|".join(re.escape(slug) for slug in PUBLISHED_SLUGS) or "(?!)",
    conda:
        "../envs/ddrs.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=60,
    params:
        job=lambda wc: EXP.published.fetch_identity(PUBLISHED_SLUGS[wc.repository]),
        step=build_step("fetch_published_logs"),
        config=build_config,
        wildcards=build_wildcards,
    shell:
        BUILD_SHELL


# Each leaderboard dataset's logs read once (each validated), with the user's own logs of the
# dataset (published_logs.own), for its table, its comparisons with Gaussian, its replication table
# and its two figures: one read, not five.
rule published_dataset_logs:
    input:
        manifests=lambda wc: EXP.published.leaderboard_manifests(wc.leaderboard),
        others=lambda wc: EXP.published.leaderboard_inputs(wc.leaderboard),
    output:
        entries=LAYOUT.published_entries("{leaderboard}"),
    log:
        LAYOUT.log("published", "logs_{leaderboard}"),
    benchmark:
        LAYOUT.benchmark("published", "logs_{leaderboard}")
    wildcard_constraints:
        leaderboard="|".join(re.escape(d) for d in PUBLISHED_DATASETS) or "(?!)",
    conda:
        "../envs/ddrs.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        job=lambda wc: EXP.published.entries_identity(wc.leaderboard),
        step=build_step("published_dataset_logs"),
        config=build_config,
        wildcards=build_wildcards,
    shell:
        BUILD_SHELL
