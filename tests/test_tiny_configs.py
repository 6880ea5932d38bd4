"""Every rule of each configuration runs end to end in ``make test`` (DESIGN.md, "Tests in tiers"):
tests/test_tiny_*.py run every rule of each configuration on its tiny overlay (tests/tiny.py), and
the dry runs here show that each tiny DAG holds every rule of its full configuration's DAG, so a
rule added to a configuration that its tiny overlay leaves out fails here, by name. The overlays
cut sizes and the lengths of grids (the methods among them), nothing else, and every method trains in
some tiny run."""

from __future__ import annotations

import pytest
import tiny
import yaml
from miniature import SIZE_PATHS, leaves, matches, merged
from workflow_helpers import job_counts

from ddrs.methods import get_method

#: what a tiny overlay may set besides sizes (tests/miniature.py's SIZE_PATHS): the training runs, and
#: grids cut to some of their values (the methods too)
CUT_PATHS = (
    "replication.runs", "replication.monte_carlo", "datasets.*.sigmas", "datasets.*.uniform_sigmas", "grid_search.n",
    "sun2024.ablation_sigmas", "sun2024.ablation_variants", "sun2024.gradient_norm_sigma", "methods",
)  # fmt: skip
#: the cut grids, whose values must be among the full configuration's
GRIDS = CUT_PATHS[2:]


@pytest.mark.parametrize("name", tiny.CONFIGS)
def test_the_tiny_configuration_runs_every_rule_of_the_full_one(name, tmp_path):
    """Each rule of the full configuration's dry run (its published files and ImageNet folders in
    place) has a job in the tiny configuration's (its data written)."""
    asked = tiny.full_rules(name, tmp_path / "full")
    result = tiny.run(tiny.prepare(name, tmp_path / "tiny"), "-n")
    assert result.returncode == 0, result.stderr[-5000:]
    scheduled = job_counts(result.stdout + result.stderr)
    assert sorted(set(asked) - set(scheduled)) == []


@pytest.mark.parametrize("name", tiny.CONFIGS)
def test_a_tiny_overlay_cuts_sizes_and_grids_and_nothing_else(name):
    overlay = yaml.safe_load((tiny.TINY / f"{name}.yaml").read_text())
    other = [".".join(path) for path in leaves(overlay) if not matches(path, SIZE_PATHS + CUT_PATHS)]
    assert other == []
    full = merged(tiny.full_files(name))
    cut = {path: (values(overlay, path), values(full, path)) for path in leaves(overlay) if matches(path, GRIDS)}
    assert {path: kept for path, (kept, grid) in cut.items() if not kept <= grid} == {}


def test_every_method_of_a_configuration_trains_in_some_tiny_run():
    """A tiny overlay may leave a method out only where another tiny run trains it."""
    full = {method for name in tiny.CONFIGS for method in merged(tiny.full_files(name))["methods"]}
    trained = {method for name in tiny.CONFIGS for method in tiny.tiny_config(name)["methods"]}
    assert sorted(full - trained) == []


def values(config: dict, path: tuple[str, ...]) -> set:
    """The values at ``path`` of ``config``: a list's items, or the one value (the ablation's rows left
    out: every variant of the config's methods, the schema's meaning)."""
    if path == ("sun2024", "ablation_variants") and path[-1] not in config["sun2024"]:
        return {variant for method in config["methods"] for variant in get_method(method).variants()}
    for key in path:
        config = config[key]
    return set(config) if isinstance(config, list) else {config}
