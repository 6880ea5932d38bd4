"""The experiment design as a pure function of the validated config (no torch, no Snakemake).

An :class:`Experiment` is composed of small objects, each with one job:

- :class:`~ddrs.pipeline.grid.RunGrid` (``exp.grid``): which base classifiers exist, their σ₀ and
  K grids, smoothing scales and directories;
- :class:`~ddrs.pipeline.training_plan.TrainingPlan` (``exp.training``): what each one trains with;
- :class:`~ddrs.pipeline.records.Records` (``exp.records``): which certification logs exist and
  the queries that pick a table's;
- :class:`~ddrs.pipeline.figure_records.FigureRecords` (``exp.figure_records``): the datasets,
  models and logs the figures show;
- :class:`~ddrs.analysis.table_settings.TableStatistics` (``exp.statistics``): the tables' intervals,
  tests and selections;
- the catalogue (:mod:`ddrs.pipeline.catalogue`): the paper's tables and figures, one entry each,
  whose instances on this experiment are :meth:`Experiment.targets`.

The workflow (``rules/*.smk``) asks an :class:`Experiment` for its targets and inputs and only
turns them into rules and flags; job run times are :func:`~ddrs.pipeline.resources.job_minutes`.
Unit tests pin the design here (``tests/test_experiments.py``); the DAG tests only check the wiring.
"""

from ddrs.pipeline.experiment import Experiment
from ddrs.pipeline.layout import Layout, Run

__all__ = ["Experiment", "Layout", "Run"]
