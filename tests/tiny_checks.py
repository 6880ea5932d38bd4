"""What every tiny end-to-end run is checked for (:class:`EveryTinyRun`, whose tests each
tests/test_tiny_*.py collects by subclassing it, one file per configuration so that ``make test``'s
workers run them side by side), each run making the outputs that run every rule at least once
(:func:`tiny.covering_targets`): every job ran to its end and a finished tree schedules nothing;
every rule of the full configuration's DAG ran; every entry of the catalogue its configuration asks
for is built, and each table and figure built is whole; and every output's provenance record says it
is what the configuration asks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
import tiny
import yaml
from workflow_helpers import REPO

from ddrs.pipeline import Experiment


class TinyRun(NamedTuple):
    tree: tiny.Tree
    targets: list[str]  # what its last Snakemake run made (tiny.covering_targets)
    output: str  # what its Snakemake runs printed, in order


def finished_rules(output: str) -> set[str]:
    """The rules of the jobs a Snakemake run's output says finished (``all`` left out)."""
    rules = set(re.findall(r"^Finished jobid: \d+ \(Rule: (\w+)\)$", output, flags=re.MULTILINE))
    assert rules, "no 'Finished jobid: N (Rule: name)' line: has Snakemake's output changed?"
    return rules - {"all"}


def run_fixture(name: str):
    """The module's fixture ``tiny_run``: every rule of the tiny DAG of configuration ``name``, run once."""

    @pytest.fixture(scope="module")
    def tiny_run(tmp_path_factory) -> TinyRun:
        tree = tiny.prepare(name, tmp_path_factory.mktemp(name))
        targets = tiny.covering_targets(tree)
        result = tiny.run(tree, *tiny.RUN_ARGS, *targets, warm=True)
        output = result.stdout + result.stderr
        assert result.returncode == 0, output[-8000:]
        return TinyRun(tree, targets, output)

    return tiny_run


def provenance(tree: tiny.Tree) -> subprocess.CompletedProcess:
    """``ddrs provenance`` on the tree's results, under its configuration."""
    command = [Path(sys.executable).parent / "ddrs", "provenance", "results", "--configfile", str(tree.config)]
    command += ["--schema", str(REPO / "config" / "schema" / "config.schema.yaml")]
    return subprocess.run(command, capture_output=True, text=True, cwd=tree.workdir, env=dict(os.environ, **tree.env))


class EveryTinyRun:
    """The checks of every tiny run, on the module's fixture ``tiny_run`` (:func:`run_fixture`): a
    test file collects them with ``class Test…(EveryTinyRun)``."""

    def test_a_finished_tiny_tree_schedules_nothing(self, tiny_run):
        again = tiny.run(tiny_run.tree, "-n", *tiny_run.targets)
        assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr

    def test_every_rule_of_the_full_configuration_ran(self, tiny_run, tmp_path):
        """Every rule of the full configuration's DAG (a dry run, its published files and ImageNet
        folders in place) has a job that ran to its end here."""
        asked = tiny.full_rules(tiny_run.tree.name, tmp_path)
        assert sorted(set(asked) - {"all", "total"} - finished_rules(tiny_run.output)) == []

    def test_every_entry_of_the_catalogue_is_built_whole(self, tiny_run):
        """Each catalogue entry the configuration asks for has an instance built, and every instance
        built has all its files, none empty."""
        experiment = Experiment(yaml.safe_load(tiny_run.tree.config.read_text()))
        workdir = tiny_run.tree.workdir
        asked, built, broken = set(), set(), []
        for target, _, name in experiment.targets():
            files = [workdir / path for path in target.paths(experiment.layout, name).values()]
            asked.add(target.name)
            if any(path.is_file() for path in files):
                built.add(target.name)
                broken += [str(path) for path in files if not path.is_file() or path.stat().st_size == 0]
        assert asked and sorted(asked - built) == [] and broken == []

    def test_every_output_is_what_the_configuration_asks_by_its_provenance_record(self, tiny_run):
        result = provenance(tiny_run.tree)
        assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
        assert "every output of results is what the config asks" in result.stdout
