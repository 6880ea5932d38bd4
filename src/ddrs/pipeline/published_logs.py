"""The ``published_logs`` section of a config (no torch): which published logs a run fetches, from
where, into which cache, and which tables and figures it builds from them (DESIGN.md, "Published logs").

The section selects repositories of the registry (all by default; another registry CSV may stand
for the shipped one, as the tests' does). Each selected repository is one fetch job that writes
its manifest (:mod:`ddrs.published.manifest`); the audit reads every manifest, each seed table
(:mod:`ddrs.published.paper_tables`) the manifests of the repositories its logs come from, each
leaderboard those of the repositories that hold logs of its dataset, with the user's own logs of
the dataset (``own``) and the families table (``families``, default the shipped one).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ddrs.pipeline.layout import Layout
from ddrs.published.log_registry import DEFAULT_BASE_URL


def table_slug(paper: str, table: str) -> str:
    """``cohen2019`` + ``Table 1`` → ``cohen2019_table_1``: a seed table as a file name."""
    return re.sub(r"[^a-z0-9]+", "_", f"{paper} {table}".lower()).strip("_")


class PublishedLogs:
    """The ``published_logs`` section of a validated config, with the registry it selects."""

    def __init__(self, section: Mapping[str, Any], layout: Layout):
        self.section = section
        self.layout = layout
        self.registry_path = section.get("registry")
        self.cache = str(section.get("cache") or f"{layout.results}/published/cache")
        self.mirrors = {str(repository): str(path) for repository, path in (section.get("mirrors") or {}).items()}
        self.offline = bool(section.get("offline", False))
        self.base_url = section.get("base_url") or DEFAULT_BASE_URL
        self.families = section.get("families")
        self.own = {str(name): dict(spec) for name, spec in (section.get("own") or {}).items()}

    @functools.cached_property
    def registry(self):
        """The registry's rows of the selected repositories (a DataFrame)."""
        from ddrs.published.log_registry import load_registry

        registry = load_registry(self.registry_path)
        wanted = self.section.get("repositories") or list(dict.fromkeys(registry["repository"]))
        unknown = sorted(set(wanted) - set(registry["repository"]))
        if unknown:
            raise ValueError(
                f"published_logs.repositories: {unknown} not in the registry "
                f"({self.registry_path or 'the shipped one'}); it holds {sorted(set(registry['repository']))}"
            )
        return registry[registry["repository"].isin(wanted)]

    def repositories(self) -> list[str]:
        """The selected repositories, in registry order."""
        return list(dict.fromkeys(self.registry["repository"]))

    def manifest(self, repository: str) -> str:
        """The manifest the fetch job of ``repository`` writes."""
        from ddrs.published.manifest import repository_slug

        return self.layout.published_manifest(repository_slug(repository))

    def manifests(self, repositories=None) -> list[str]:
        """The manifests of ``repositories`` (default: every selected one)."""
        return [self.manifest(repository) for repository in (repositories or self.repositories())]

    def slugs(self) -> dict[str, str]:
        """Each selected repository's wildcard value (``owner+name``) → the repository."""
        from ddrs.published.manifest import repository_slug

        return {repository_slug(repository): repository for repository in self.repositories()}

    def fetch_identity(self, repository: str) -> dict[str, Any]:
        """What decides the manifest the fetch job of ``repository`` writes (what the workflow compares):
        the repository, the registry that pins its logs and the cache they land in. Where the bytes come
        from (:meth:`fetch_source`) is not part of it: every file is checked against its sha256."""
        return {"repository": repository, "registry": self.registry_path, "cache": self.cache}

    def fetch_source(self, repository: str) -> dict[str, Any]:
        """Where the fetch job of ``repository`` reads its logs: its mirror, or the network's ``base_url``
        (None: offline), refused where the section is offline and names no mirror of it."""
        mirror = self.mirrors.get(repository)
        if mirror is None and self.offline:
            raise ValueError(
                f"published_logs.offline is true but published_logs.mirrors names no mirror of {repository}: "
                "give one (a git directory or a checkout), or allow the network"
            )
        return {"mirror": mirror, "base_url": None if self.offline else self.base_url}

    # --- what it builds ---------------------------------------------------------------------------

    def builds_audit(self) -> bool:
        return bool(self.section.get("audit", True)) and not self.registry.empty

    def seed_tables(self) -> dict[str, tuple[str, str]]:
        """Each seed table whose logs the selection holds: slug → (paper, table)."""
        if not self.section.get("seed_tables", True):
            return {}
        tables = {}
        for (paper, table), repositories in self._seed_repositories.items():
            if set(repositories) <= set(self.repositories()):
                tables[table_slug(paper, table)] = (paper, table)
        return tables

    @functools.cached_property
    def _printed(self):
        """The transcription of the printed cells and the logs behind each row (DataFrames), checked."""
        from ddrs.published.paper_tables import load_mapping, load_transcription

        transcription = load_transcription(self.section.get("transcription"))
        return transcription, load_mapping(self.section.get("mapping"), transcription=transcription)

    @functools.cached_property
    def _seed_repositories(self) -> dict[tuple[str, str], list[str]]:
        transcription, mapping = self._printed
        primary = mapping[mapping["role"] == "primary"]
        repositories = {}
        for (paper, table), _ in transcription.groupby(["paper", "table"], sort=False):
            rows = primary[(primary["paper"] == paper) & (primary["table"] == table)]
            repositories[paper, table] = list(dict.fromkeys(rows["repository"]))
        return repositories

    def seed_table_manifests(self, slug: str) -> list[str]:
        """The manifests a seed table reads: its primary logs' repositories, and the alternatives' it fetched."""
        paper, table = self.seed_tables()[slug]
        mapping = self._printed[1]
        rows = mapping[(mapping["paper"] == paper) & (mapping["table"] == table)]
        wanted = [repository for repository in dict.fromkeys(rows["repository"]) if repository in self.repositories()]
        return self.manifests(wanted)

    def leaderboards(self) -> dict[str, list[float] | None]:
        """Each leaderboard's dataset → its radius grid (None: the paper's), where the selection holds
        test-split logs of that dataset with a stated σ."""
        boards = self.section.get("leaderboards") or {}
        registry = self.registry
        held = set(registry.loc[(registry["split"] == "test") & registry["sigma"].notna(), "dataset"])
        chosen = {dataset: radii for dataset, radii in boards.items() if dataset in held}
        for name, spec in self.own.items():
            if spec["dataset"] not in chosen:
                raise ValueError(
                    f"published_logs.own.{name}: dataset {spec['dataset']!r} has no leaderboard here "
                    f"(published_logs.leaderboards with logs in the selected repositories: {sorted(chosen)})"
                )
        return chosen

    def leaderboard_radii(self, dataset: str) -> list[float]:
        from ddrs.analysis.metrics import paper_radii

        radii = self.leaderboards()[dataset]
        return list(radii) if radii else list(paper_radii(dataset))

    def own_logs(self, dataset: str) -> dict[str, dict]:
        """The user's own logs of ``dataset`` (``own``: name → {dataset, sigma, path, ...})."""
        return {name: spec for name, spec in self.own.items() if spec["dataset"] == dataset}

    def entries_identity(self, dataset: str) -> dict[str, Any]:
        """What decides the entries of ``dataset`` (its logs read once, with the user's own): the
        registry and families tables the config names and each own log's settings (σ, n, α, family,
        ...); the files' bytes are the job's inputs. What the workflow compares, and the record's identity."""
        return {
            "dataset": dataset,
            "registry": self.registry_path,
            "families": self.families,
            "own": self.own_logs(dataset),
        }

    def leaderboard_manifests(self, dataset: str) -> list[str]:
        registry = self.registry
        return self.manifests(list(dict.fromkeys(registry.loc[registry["dataset"] == dataset, "repository"])))

    def registry_file(self) -> list[str]:
        """The registry CSV as an input file when the config names one (a changed registry reruns the tables)."""
        return [] if self.registry_path is None else [str(Path(self.registry_path))]

    def leaderboard_inputs(self, dataset: str) -> list[str]:
        """The files a leaderboard's logs are read from besides the manifests: the registry and the
        families table the config names, and the user's own logs of ``dataset``."""
        families = [] if self.families is None else [str(Path(self.families))]
        return [*self.registry_file(), *families, *(str(spec["path"]) for spec in self.own_logs(dataset).values())]
