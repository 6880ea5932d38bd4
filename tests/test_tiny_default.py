"""config/config.yaml, the embedded default: its whole DAG for real on its tiny overlay (tests/tiny.py),
with the checks of every tiny run (tests/tiny_checks.py). At its own size it is ``make all``."""

import pytest
from tiny_checks import (
    run_fixture,
    test_a_finished_tiny_tree_schedules_nothing,  # noqa: F401 - collected here
    test_every_output_is_what_the_configuration_asks_by_its_provenance_record,  # noqa: F401
    test_every_rule_of_the_full_configuration_ran,  # noqa: F401
    test_every_table_and_figure_of_the_catalogue_is_built,  # noqa: F401
)

pytestmark = pytest.mark.e2e

tiny_run = run_fixture("default")
