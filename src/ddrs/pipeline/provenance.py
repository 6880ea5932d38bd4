"""What made each output (no torch): a sidecar beside every model, log and table, and the check of a
results tree against the config that claims it (``ddrs provenance``; docs/architecture.md,
"What re-runs").

A job's identity is what the workflow compares to decide a re-run: a model's training options
(:meth:`~ddrs.pipeline.training_plan.TrainingPlan.train_options`), a certification-side job's
document (:class:`~ddrs.pipeline.job_plan.JobPlan`), a table's or figure's arguments
(:meth:`~ddrs.pipeline.target.Target.arguments`), a published-logs step's
(:meth:`~ddrs.pipeline.published_logs.PublishedLogs.fetch_identity`, ``.entries_identity``). Each job
writes ``<output>.provenance.json`` beside every output (:func:`ddrs.jobs.provenance_record.record`):
the SHA-256 of its identity, the job's kind, the ``ddrs`` version, source digest and git commit that
ran it, the output's path and SHA-256 and those of every file the job read. :func:`check_tree`
judges every output of the tree (:func:`judged_outputs`), recomputes every identity from a config and
walks the chain of digests: it names each output whose record was written for another path, differs,
was made by other code, has changed since it was written, was made from a file that has changed
since, follows a stale input, or has no record (or a file that is not one).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ddrs.jobs.provenance_record import SUFFIX, Digests, NotARecord, code_version, identity_digest, read_record
from ddrs.pipeline.layout import RUN_FILES, Run, scale_label


def train_identity(options: Mapping[str, Any]) -> Any:
    """A model's identity as ``ddrs train --config -`` reads it: the workflow's JSON through YAML."""
    return yaml.safe_load(json.dumps(options, sort_keys=True))


def import_identity(published: str, arch: str, method: str | None, sigma: float | None) -> dict[str, Any]:
    """An imported model's identity: the published file, our architecture, its method and σ."""
    return {"published": str(published), "arch": arch, "method": method, "sigma": sigma}


def document_identity(document: Mapping[str, Any]) -> Any:
    """A certification-side job's identity as ``ddrs job --config -`` reads it: its JSON document."""
    return json.loads(json.dumps(document))


def _code(record: Mapping[str, Any]) -> str:
    """The code named by a provenance record, for people: version, source digest, commit."""
    return f"ddrs {record.get('ddrs')} (source {str(record.get('source'))[:12]}, commit {record.get('commit')})"


#: how a finding of an output without a trustworthy record begins (counted apart in the summary)
UNKNOWN = "unknown provenance"


@dataclass(frozen=True)
class Finding:
    """One output that is not what the config asks: its path (or its record's, where that file is not
    a record) and why; ``unknown`` where its provenance is unknown (no record, or not a record)."""

    path: str
    why: str
    unknown: bool = False


#: a run's file (:data:`RUN_FILES`) → the job that writes it (a JobPlan method, or ``train``)
JOB_OF_FILE = {
    "model": "train",
    "train_log": "train",
    "train_sigmas": "train",
    "certify_fixed": "fixed_certification",
    "certify_sequential": "sequential_certification",
    "certify_monte_carlo": "monte_carlo_certification",
    "sigma_log": "data_dependent_certification",
    "certify_k": "data_dependent_certification",
    "memory_k": "data_dependent_certification",
    "grid_sigma_log": "grid_search_certification",
    "certify_grid": "grid_search_certification",
    "memory_grid": "grid_search_certification",
    "semi_elastic_sigma_log": "semi_elastic_certification",
    "certify_semi_elastic": "semi_elastic_certification",
    "semi_elastic": "semi_elastic_certification",
    "gradient_norms": "gradient_norms",
}
#: the fields of a file's name a JobPlan method takes beyond the run (the grid's draws, the Monte Carlo draw)
JOB_FIELDS = {"grid_search_certification": ("n",), "monte_carlo_certification": ("draw",)}


def _file_patterns() -> list[tuple[str, re.Pattern]]:
    """Each :data:`RUN_FILES` name as a regex, every ``{field}`` a group of digits."""
    return [
        (key, re.compile(re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[0-9]+)", re.escape(name))))
        for key, name in RUN_FILES.items()
    ]


def _run_outputs(exp, on_disk) -> Iterator[tuple[Run, str, str, dict[str, str]]]:
    """Every file of a run directory the workflow writes: (run, its layout path, its RUN_FILES key,
    fields), the models first."""
    patterns = _file_patterns()
    found = []
    for run in exp.runs():
        directory = exp.grid.run_dir(run)
        for path in sorted(on_disk(directory).iterdir()) if on_disk(directory).is_dir() else ():
            for key, pattern in patterns:
                if match := pattern.fullmatch(path.name):
                    found.append((run, f"{directory}/{path.name}", key, match.groupdict()))
    return iter(sorted(found, key=lambda item: JOB_OF_FILE[item[2]] != "train"))


def expected_identity(exp, plan, run: Run, job: str, fields: Mapping[str, str]) -> Any:
    """The identity the config asks of ``job`` (a :data:`JOB_OF_FILE` value) for ``run``."""
    if job == "train" and exp.grid.is_published(run.dataset) and run.mode == "fs":
        spec = exp.grid.datasets[run.dataset]
        published = spec["checkpoints"][run.method][scale_label(run.sigma)]
        return import_identity(published, spec["arch"], run.method, float(scale_label(run.sigma)))
    if job == "train":
        return {**train_identity(exp.training.train_options(run)), "threads": exp.grid.config.get("threads_per_job", 1)}
    return document_identity(getattr(plan, job)(run, *(fields[name] for name in JOB_FIELDS.get(job, ()))))


@dataclass(frozen=True)
class Output:
    """One output of the tree to judge: its kind of job, the identity the config asks of that job,
    and the outputs it is made from whether or not its record names them (a log's model, a table's
    logs and files)."""

    kind: str
    identity: Callable[[], Any]
    made_from: tuple[str, ...] = ()


def _published_outputs(published, on_disk) -> Iterator[tuple[str, Output]]:
    """The published-logs jobs' own outputs on disk: each repository's manifest (its fetch) and each
    leaderboard dataset's entries (its logs and the user's own, read once; :mod:`ddrs.pipeline.published_logs`)."""
    for repository in published.repositories():
        manifest = published.manifest(repository)
        if on_disk(manifest).is_file():
            yield manifest, Output("fetch_published_logs", functools.partial(published.fetch_identity, repository))
    for dataset in published.leaderboards():
        entries = published.layout.published_entries(dataset)
        if on_disk(entries).is_file():
            identity = functools.partial(published.entries_identity, dataset)
            yield entries, Output("published_dataset_logs", identity, tuple(published.leaderboard_manifests(dataset)))


def judged_outputs(exp, plan, on_disk: Callable[[str], Path]) -> dict[str, Output]:
    """Every output of the config's tree that is on disk (``on_disk``: where a path as the config
    spells it lies), by that path: a run's files, the published logs' manifests and entries, every
    table and figure."""
    outputs = {}
    for run, path, key, fields in _run_outputs(exp, on_disk):
        job = JOB_OF_FILE[key]
        model = () if job == "train" else (exp.layout.model(*run.wildcards),)
        outputs[path] = Output(job, functools.partial(expected_identity, exp, plan, run, job, fields), model)
    if exp.published is not None:
        outputs.update(_published_outputs(exp.published, on_disk))
    for target, wildcards, name in exp.targets():
        read = tuple(target.inputs(exp, wildcards))
        for path in target.paths(exp.layout, name).values():
            if on_disk(path).is_file():
                outputs[path] = Output(target.name, functools.partial(target.arguments, exp, wildcards), read)
    return outputs


class _Walk:
    """One check of a tree: every judged output's verdict, each taken once, each file hashed once."""

    def __init__(self, outputs: Mapping[str, Output], on_disk: Callable[[str], Path]):
        self.outputs, self.on_disk = outputs, on_disk
        self.digests, self.verdicts = Digests(), {}
        #: the outputs whose record file is not a record: path → the error naming it
        self.malformed: dict[str, NotARecord] = {}

    def verdict(self, path: str) -> str | None:
        """Why the output at ``path`` (as the config spells it) is not the config's, or None."""
        if path not in self.verdicts:
            self.verdicts[path] = None  # a cycle cannot arise from jobs, but must not recurse forever
            self.verdicts[path] = self._verdict(path)
        return self.verdicts[path]

    def _verdict(self, path: str) -> str | None:
        output, file = self.outputs[path], self.on_disk(path)
        try:
            found = read_record(file)
        except NotARecord as error:
            self.malformed[path] = error
            return f"{UNKNOWN}: {error}"
        why = _judged(found, path, output.kind, output.identity)
        if why is not None:
            return why
        if self.digests(file) != found["output"]["sha256"]:
            return "changed since it was made: its bytes are not those its job wrote (edited, or copied over)"
        for source in dict.fromkeys([*found["inputs"], *output.made_from]):
            if source in self.outputs and self.verdict(source) is not None:
                return f"stale: made from {source}, which is not the config's"
        for source, sha256 in found["inputs"].items():
            now = self.digests(self.on_disk(source))
            if now is None:
                return f"stale: made from {source}, which is no longer there"
            if now != sha256:
                return f"stale: made from {source}, whose bytes have changed since (re-made, copied over or edited)"
        return None


def _judged(found: Mapping[str, Any] | None, path: str, kind: str, identity: Callable[[], Any]) -> str | None:
    """Why ``found``, the record of the output at ``path`` (as the config spells it), is not that of
    this output made by its ``kind`` of job with ``identity`` by this code, or None when it is."""
    if found is None:
        return f"{UNKNOWN}: no record (made before ddrs recorded provenance, or by hand)"
    if not isinstance(found.get("path"), str):
        return f"{UNKNOWN}: its record names no output path (written before records bound their output's)"
    if not isinstance(found["output"].get("sha256"), str):
        return f"{UNKNOWN}: its record holds no digest of its output"
    if os.path.normpath(found["path"]) != os.path.normpath(path):
        return f"moved: its record was written for {found['path']} (swapped, copied or moved here with its record)"
    if found["identity"] != identity_digest(identity()):
        return f"stale: made with other settings than the config asks of its {kind} job"
    version = code_version()
    if (found.get("ddrs"), found["source"]) != (version["ddrs"], version["source"]):
        return f"other code: made by {_code(found)}; this is {_code(version)}"
    return None


def _tree_root(exp, root: str | Path | None) -> Path:
    """Where the tree lies, refused unless it is a folder holding at least one provenance record."""
    where = Path(exp.layout.results if root is None else root)
    if not where.is_dir():
        raise ValueError(f"{where}: no such folder (give the results tree: the config's `results`, or a copy of it)")
    if next(where.rglob(f"*{SUFFIX}"), None) is None:
        raise ValueError(f"{where}: holds no provenance record (*{SUFFIX}): not a results tree the workflow made")
    return where


def check_tree(exp, plan, root: str | Path | None = None) -> Iterator[Finding]:
    """Every output of the config ``exp``'s results tree (models, logs, the published logs' manifests
    and entries, tables and figures) whose provenance is not the config's: no record or a file that
    is not one, a record written for another path (a swap), another identity, other code, bytes other
    than those its job wrote (edited or copied over), an input whose bytes are not those the job read
    (re-made, copied, a changed data split, a user's own log replaced, an edited published log), or
    made from an output that is itself not the config's (a log of such a model, a fine-tuning of it, a
    table of such a log). ``root`` is where the tree lies (default: the config's ``results``); records
    name paths as the config spells them, as the workflow's jobs did. Every file is hashed, each once
    (:class:`~ddrs.jobs.provenance_record.Digests`). A ``root`` that is not a folder with a record in
    it is refused (ValueError)."""
    root, results = _tree_root(exp, root), Path(exp.layout.results)

    def on_disk(path: str) -> Path:
        return root / Path(path).relative_to(results) if Path(path).is_relative_to(results) else Path(path)

    walk = _Walk(judged_outputs(exp, plan, on_disk), on_disk)
    for path in walk.outputs:
        why = walk.verdict(path)
        if path in walk.malformed:
            error = walk.malformed[path]
            yield Finding(str(error.path), f"not a provenance record: {error.problem}", unknown=True)
        elif why is not None:
            yield Finding(str(on_disk(path)), why, unknown=why.startswith(UNKNOWN))


def load_config(paths: Iterable[str | Path], schema: str | Path) -> dict[str, Any]:
    """The config the workflow runs for ``--configfile`` ``paths``: merged in order (a mapping key
    by key, as Snakemake merges them), checked against ``schema`` and filled with its defaults."""
    from snakemake.utils import update_config, validate

    from ddrs.pipeline.validation import schema_problems

    config: dict[str, Any] = {}
    for path in paths:
        update_config(config, yaml.safe_load(Path(path).read_text()) or {})
    problems = schema_problems(config, schema)
    if problems:
        raise ValueError("\n".join(problems))
    validate(config, str(schema), set_default=True)
    return config
