"""Every caption of the Snakemake report (``report/*.rst``) renders as ``snakemake --report`` renders
it, Jinja then docutils, without a warning: broken markup (an emphasis never closed) prints a warning
in every report run and shows wrong in the report."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest
from docutils.core import publish_parts
from jinja2 import Environment, StrictUndefined
from workflow_helpers import REPO, load_config

CAPTIONS = sorted((REPO / "report").glob("*.rst"))


def docutils_warnings(caption: str, config: dict) -> str:
    """What docutils warns while it renders ``caption`` to HTML once Jinja has filled it in with
    ``config``, as Snakemake's report does (``snakemake.report``: ``publish_parts(..., writer_name="html")``)."""
    text = (
        Environment(undefined=StrictUndefined)
        .from_string(caption)
        .render(snakemake=SimpleNamespace(config=config), categories={}, files={})
    )
    warnings = io.StringIO()
    settings = {"warning_stream": warnings, "report_level": 2, "halt_level": 5}
    publish_parts(text, writer="html", settings_overrides=settings)
    return warnings.getvalue()


def test_a_caption_with_broken_markup_is_caught():
    assert "Inline emphasis start-string without end-string" in docutils_warnings("(Method-GDS-n-*, n draws)", {})
    assert docutils_warnings(r"(Method-GDS-n-\*, n draws)", {}) == ""


@pytest.mark.parametrize("caption", CAPTIONS, ids=lambda path: path.name)
def test_every_report_caption_renders_without_a_warning(caption):
    assert len(CAPTIONS) > 20
    configs = ["config.yaml", "published.yaml"] if caption.name == "workflow.rst" else ["config.yaml"]
    for config in configs:  # the workflow's description reads the config: the paper's and the published logs'
        assert docutils_warnings(caption.read_text(), load_config(config)) == "", f"{caption.name} with {config}"
