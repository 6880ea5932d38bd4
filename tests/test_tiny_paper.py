"""config/paper.yaml with config/paper_baselines_optimiser.yaml in miniature (tests/miniature.py):
every rule of the DAG for real on the tiny overlay (tests/tiny.py), ImageNet's published ResNet-50s included,
with the checks of every tiny run (tests/tiny_checks.py). The miniature at its own size:
tests/test_miniature.py (``make test-slow``)."""

import pytest
from tiny_checks import EveryTinyRun, run_fixture

pytestmark = pytest.mark.e2e

tiny_run = run_fixture("paper")


class TestTinyPaper(EveryTinyRun):
    """The checks of every tiny run, on paper.yaml's tiny run."""
