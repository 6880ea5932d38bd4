"""Published certification logs of the field (DESIGN.md, "Published logs"): the shipped registry of every
log in Cohen et al.'s format found in the authors' public repositories (:mod:`~ddrs.published.registry`,
``logs.csv``), the per-repository rules that say from a path what a log is (:mod:`~ddrs.published.rules`),
the scan of local mirrors that regenerates the registry (:mod:`~ddrs.published.scan`), and the modules that
fetch, audit and recompute the papers' tables from those logs."""
