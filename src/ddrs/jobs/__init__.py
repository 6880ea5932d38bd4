"""The resumable jobs that write certification logs, behind the ``ddrs`` commands.

- :mod:`~ddrs.jobs.logs`: the certification-log contract (Cohen et al.'s columns first) and the
  resumable :class:`~ddrs.jobs.logs.LogWriter`;
- :mod:`~ddrs.jobs.certification`: CERTIFY over a test split, fixed or per-input σ;
- :mod:`~ddrs.jobs.sigma_log_format`, :mod:`~ddrs.jobs.sigma_log`: Algorithm 1's σ log (σ*ₓ at
  every K) and the grid search's;
- :mod:`~ddrs.jobs.memory_log`: Algorithm 3 over a certification log;
- :mod:`~ddrs.jobs.work_time`: the one line a job prints when its work is done.
"""
