# Published certification logs (config key published_logs; ddrs.pipeline.published_logs): one fetch
# job per repository, not one per log, brings its registry logs into the cache (HTTPS at the pinned
# commit, or a local mirror; each checked against its sha256 and written atomically) and writes the
# manifest the tables read (ddrs.published.manifest); each leaderboard dataset's logs are then read
# once into one file. The audit, seed tables and leaderboards are catalogue entries
# (rules/tables.smk). A config without the section has no instance of any of them.
PUBLISHED_SLUGS = [] if EXP.published is None else list(EXP.published.slugs())
PUBLISHED_DATASETS = [] if EXP.published is None else list(EXP.published.leaderboards())


rule fetch_published_logs:
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
        fetch=lambda wc: EXP.published.fetch_arguments(wc.repository),
    script:
        "../workflow/scripts/fetch_published.py"


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
        dataset=lambda wc: wc.leaderboard,
        registry=None if EXP.published is None else EXP.published.registry_path,
        families=None if EXP.published is None else EXP.published.families,
        own=lambda wc: EXP.published.own_logs(wc.leaderboard),
    script:
        "../workflow/scripts/published_entries.py"
