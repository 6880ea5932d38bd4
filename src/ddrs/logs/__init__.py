"""The log files' formats, read and written without torch by jobs, analysis and the published logs alike.

- :mod:`~ddrs.logs.certification_log`: the certification-log contract (Cohen et al.'s columns first)
  and the resumable :class:`~ddrs.logs.certification_log.LogWriter`, which writes the σ logs too;
- :mod:`~ddrs.logs.sigma_log`: the σ log's columns (σ*ₓ at every K of Algorithm 1, or the grid
  search's) and its readers;
- :mod:`~ddrs.logs.work_time`: the one line a job prints to its job log when its work is done.
"""
