"""From certification logs to the DDRS paper's tables: metrics, table assembly, rendering."""

from ddrs.analysis.comparisons import (
    comparisons_table,
    log_comparisons_table,
    selection_optimism_table,
    study_comparisons_table,
)
from ddrs.analysis.evidence import PER_INPUT_BEST, PER_LOG, SELECTIONS
from ddrs.analysis.log_record import LogRecord, load_log
from ddrs.analysis.metrics import (
    RADII_CIFAR10,
    RADII_IMAGENET,
    RADII_L1,
    acr,
    certified_accuracy,
    easy_inputs,
    envelope,
    paper_radii,
    radius_grid,
    true_class_p_a_lower,
)
from ddrs.analysis.render import best_table_caption, to_latex, to_markdown, write_table
from ddrs.analysis.tables import (
    BestTable,
    best_table,
    grid_search_table,
    log_table,
    memory_table,
    per_setting_table,
    per_sigma_table,
    radius_column,
    runtime_table,
)

__all__ = [
    "RADII_CIFAR10",
    "RADII_IMAGENET",
    "RADII_L1",
    "PER_INPUT_BEST",
    "PER_LOG",
    "SELECTIONS",
    "BestTable",
    "LogRecord",
    "acr",
    "best_table",
    "best_table_caption",
    "certified_accuracy",
    "comparisons_table",
    "easy_inputs",
    "envelope",
    "grid_search_table",
    "load_log",
    "log_comparisons_table",
    "log_table",
    "memory_table",
    "paper_radii",
    "per_setting_table",
    "per_sigma_table",
    "radius_column",
    "radius_grid",
    "runtime_table",
    "selection_optimism_table",
    "study_comparisons_table",
    "to_latex",
    "to_markdown",
    "true_class_p_a_lower",
    "write_table",
]
