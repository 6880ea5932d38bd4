"""config/paper.yaml with config/paper_baselines_optimiser.yaml in miniature (tests/miniature.py): the
whole DAG for real on the tiny overlay (tests/tiny.py), ImageNet's published ResNet-50s included,
with the checks of every tiny run (tests/tiny_checks.py). The miniature at its own size:
tests/test_miniature.py (``make test-slow``)."""

import pytest
from tiny_checks import (
    run_fixture,
    test_a_finished_tiny_tree_schedules_nothing,  # noqa: F401 - collected here
    test_every_output_is_what_the_configuration_asks_by_its_provenance_record,  # noqa: F401
    test_every_rule_of_the_full_configuration_ran,  # noqa: F401
    test_every_table_and_figure_of_the_catalogue_is_built,  # noqa: F401
)

pytestmark = pytest.mark.e2e

tiny_run = run_fixture("paper")
