"""config/config.yaml, the embedded default: every rule of its DAG for real on its tiny overlay (tests/tiny.py),
with the checks of every tiny run (tests/tiny_checks.py). At its own size it is ``make all``."""

import pytest
from tiny_checks import EveryTinyRun, run_fixture

pytestmark = pytest.mark.e2e

tiny_run = run_fixture("default")


class TestTinyDefault(EveryTinyRun):
    """The checks of every tiny run, on the default's tiny run."""
