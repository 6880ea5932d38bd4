"""What made each output (no torch): a sidecar beside every model, log and table, and the check of a
results tree against the config that claims it (``ddrs provenance``; docs/architecture.md,
"What re-runs").

A job's identity is what the workflow compares to decide a re-run: a model's training options
(:meth:`~ddrs.pipeline.training_plan.TrainingPlan.train_options`), a certification-side job's
document (:class:`~ddrs.pipeline.job_plan.JobPlan`), a table's or figure's arguments
(:meth:`~ddrs.pipeline.target.Target.arguments`). Each job writes ``<output>.provenance.json``
beside every output (:func:`ddrs.jobs.provenance_record.record`): the SHA-256 of its identity, the job's
kind, the ``ddrs`` version, source digest and git commit that ran it, the SHA-256 of every file the
job read and of the output itself. :func:`check_tree` recomputes every identity from a config and
walks the chain of digests: it names each output whose record differs, was made by other code, has
changed since it was written, was made from a file that has changed since, follows a stale input,
or has no record at all.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ddrs.jobs.provenance_record import Digests, code_version, identity_digest, read_record
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


@dataclass(frozen=True)
class Finding:
    """One output that is not what the config asks: its path and why."""

    path: str
    why: str


#: a run's file (:data:`RUN_FILES`) → the job that writes it (a JobPlan method, or ``train``)
JOB_OF_FILE = {
    "model": "train",
    "train_log": "train",
    "train_sigmas": "train",
    "certify_fixed": "fixed_certification",
    "certify_sequential": "sequential_certification",
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


def _file_patterns() -> list[tuple[str, re.Pattern]]:
    patterns = []
    for key, name in RUN_FILES.items():
        pattern = re.escape(name).replace(r"\{k\}", r"(?P<k>[0-9]+)").replace(r"\{n\}", r"(?P<n>[0-9]+)")
        patterns.append((key, re.compile(pattern)))
    return patterns


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
    if job == "grid_search_certification":
        return document_identity(plan.grid_search_certification(run, fields["n"]))
    return document_identity(getattr(plan, job)(run))


def _judged(path: Path, kind: str, identity: Any) -> str | None:
    """Why ``path``'s record is not ``identity`` made by this code, or None when it is."""
    found, version = read_record(path), code_version()
    if found is None:
        return "unknown provenance: no record (made before ddrs recorded provenance, or by hand)"
    if found.get("identity") != identity_digest(identity):
        return f"stale: made with other settings than the config asks of its {kind} job"
    if (found.get("ddrs"), found.get("source")) != (version["ddrs"], version["source"]):
        return f"other code: made by {_code(found)}; this is {_code(version)}"
    return None


@dataclass(frozen=True)
class Output:
    """One output of the tree to judge: its kind of job, the identity the config asks of that job,
    and the outputs it is made from whether or not its record names them (a log's model, a table's
    logs and files)."""

    kind: str
    identity: Callable[[], Any]
    made_from: tuple[str, ...] = ()


def _outputs(exp, plan, on_disk) -> dict[str, Output]:
    """Every output of the config's tree that is on disk, by its path as the config spells it."""
    outputs = {}
    for run, path, key, fields in _run_outputs(exp, on_disk):
        job = JOB_OF_FILE[key]
        model = () if job == "train" else (exp.layout.model(*run.wildcards),)
        outputs[path] = Output(job, functools.partial(expected_identity, exp, plan, run, job, fields), model)
    for target, wildcards, name in exp.targets():
        read = tuple(target.inputs(exp, wildcards))
        for path in target.paths(exp.layout, name).values():
            if on_disk(path).is_file():
                outputs[path] = Output(target.name, functools.partial(target.arguments, exp, wildcards), read)
    return outputs


def check_tree(exp, plan, root: str | Path | None = None) -> Iterator[Finding]:
    """Every output of the config ``exp``'s results tree (models, logs, tables and figures) whose
    provenance is not the config's: no record, another identity, other code, bytes other than those
    its job wrote (edited or copied over), an input whose bytes are not those the job read (re-made,
    copied, a changed data split), or made from an output that is itself not the config's (a log of
    such a model, a fine-tuning of it, a table of such a log). ``root`` is where the tree lies
    (default: the config's ``results``); records name paths as the config spells them, as the
    workflow's jobs did. Each file is hashed at most once, and not at all while its size and time
    are those its record holds (:class:`~ddrs.jobs.provenance_record.Digests`)."""
    root = Path(exp.layout.results if root is None else root)
    results = Path(exp.layout.results)

    def on_disk(path: str) -> Path:
        return root / Path(path).relative_to(results) if Path(path).is_relative_to(results) else Path(path)

    outputs, digests, verdicts = _outputs(exp, plan, on_disk), Digests(), {}

    def verdict(path: str) -> str | None:
        if path not in verdicts:
            verdicts[path] = None  # a cycle cannot arise from jobs, but must not recurse forever
            verdicts[path] = _verdict(path)
        return verdicts[path]

    def _verdict(path: str) -> str | None:
        output, file = outputs[path], on_disk(path)
        why = _judged(file, output.kind, output.identity())
        if why is not None:
            return why
        found = read_record(file) or {}
        own = found.get("output") or {}
        if "sha256" not in own:
            return "unknown content: its record has no digest of the output"
        if own.get("size") is not None and own.get("mtime_ns") is not None:
            digests.remember(file, own["size"], own["mtime_ns"], own["sha256"])
        if digests(file) != own["sha256"]:
            return "changed since it was made: its bytes are not those its job wrote (edited, or copied over)"
        read = found.get("inputs") or {}
        for source in dict.fromkeys([*read, *output.made_from]):
            if source in outputs and verdict(source) is not None:
                return f"stale: made from {source}, which is not the config's"
        for source, sha256 in read.items():
            now = digests(on_disk(source))
            if now is None:
                return f"stale: made from {source}, which is no longer there"
            if now != sha256:
                return f"stale: made from {source}, whose bytes have changed since (re-made, copied over or edited)"
        return None

    for path in outputs:
        if (why := verdict(path)) is not None:
            yield Finding(str(on_disk(path)), why)


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
