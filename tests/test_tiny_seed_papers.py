"""config/seed_papers.yaml in miniature (tests/miniature.py): every rule of the DAG for real on the tiny overlay
(tests/tiny.py), with the checks of every tiny run (tests/tiny_checks.py). The miniature at its own
size: tests/test_miniature.py (``make test-slow``)."""

import pytest
from tiny_checks import EveryTinyRun, run_fixture

pytestmark = pytest.mark.e2e

tiny_run = run_fixture("seed_papers")


class TestTinySeedPapers(EveryTinyRun):
    """The checks of every tiny run, on seed_papers.yaml's tiny run."""
