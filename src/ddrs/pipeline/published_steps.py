"""The published-logs workflow's own steps, from the experiment (no torch): one repository's fetch
and one leaderboard dataset's logs read once, each with its provenance record
(:mod:`ddrs.jobs.provenance_record`; DESIGN.md, "Provenance"), as ``ddrs build`` runs them for
``rules/published.smk``.

A manifest's record holds its fetch's identity (:meth:`~ddrs.pipeline.published_logs.PublishedLogs.fetch_identity`)
and, among the files its job read, every cached log it checked, by sha256: a cached log edited since
makes the manifest, and all made from it, stale. An entries file's record holds its identity (each own
log's σ, n, α, family: :meth:`~ddrs.pipeline.published_logs.PublishedLogs.entries_identity`) and the
manifests, tables and own logs it read, by sha256.
"""

from __future__ import annotations

from ddrs.jobs.provenance_record import record


def fetch_published_logs(exp, repository: str) -> None:
    """Fetch the logs of ``repository`` (its slug, ``owner+name``) into the cache and write its manifest."""
    from ddrs.published.log_registry import load_registry
    from ddrs.published.manifest import fetch_repository

    published = exp.published
    name = published.slugs()[repository]
    job, source = published.fetch_identity(name), published.fetch_source(name)
    manifest = published.manifest(name)
    fetched = fetch_repository(
        load_registry(job["registry"]),
        name,
        job["cache"],
        manifest,
        mirror=source["mirror"],
        base_url=source["base_url"],
    )
    record([manifest], "fetch_published_logs", job, [*published.registry_file(), *fetched["file"]])


def published_dataset_logs(exp, leaderboard: str) -> None:
    """Read the logs of the dataset ``leaderboard`` once, with the user's own, into its entries file
    (:func:`ddrs.published.builders.dataset_entries`)."""
    from ddrs.published.builders import dataset_entries

    published = exp.published
    job = published.entries_identity(leaderboard)
    out, manifests = exp.layout.published_entries(leaderboard), published.leaderboard_manifests(leaderboard)
    dataset_entries(manifests, leaderboard, out, registry=job["registry"], families=job["families"], own=job["own"])
    record([out], "published_dataset_logs", job, [*manifests, *published.leaderboard_inputs(leaderboard)])


#: each step's rule → its function, called with the experiment and the rule's wildcards
STEPS = {"fetch_published_logs": fetch_published_logs, "published_dataset_logs": published_dataset_logs}
