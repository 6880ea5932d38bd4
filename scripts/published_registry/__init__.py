"""The maintainers' tool behind ``scripts/published_logs_registry.py``: what a published log's path
says, per repository (:mod:`.rules`), and the scan of local mirrors that writes the registry
``src/ddrs/published/logs.csv`` from them (:mod:`.scan`). A run of the package never imports these:
it reads the registry they wrote (:mod:`ddrs.published.log_registry`)."""
