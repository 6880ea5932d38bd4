"""Published certification logs of the field (DESIGN.md, "Published logs"): the shipped registry of every
log in Cohen et al.'s format found in the authors' public repositories (:mod:`~ddrs.published.log_registry`,
``logs.csv``), and the modules that fetch, audit and recompute the papers' tables from those logs. The
registry is written offline by the maintainers' tool, ``scripts/published_logs_registry.py`` with its
parse rules and scan of mirrors (``scripts/published_registry/``), which nothing here imports."""
