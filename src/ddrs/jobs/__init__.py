"""The resumable jobs that write certification logs, behind the ``ddrs`` commands (the logs' formats:
:mod:`ddrs.logs`).

- :mod:`~ddrs.jobs.runner`: the certification jobs over a checkpoint, a job document's settings typed once;
- :mod:`~ddrs.jobs.certification`: CERTIFY over a test split, fixed or per-input σ;
- :mod:`~ddrs.jobs.sigma_search`: σ per input by Algorithm 1 (σ*ₓ at every K) or the grid search,
  written as a σ log;
- :mod:`~ddrs.jobs.memory_log`: Algorithm 3 over a certification log;
- :mod:`~ddrs.jobs.provenance_record`: the record beside every output.
"""
