"""What each compute job of a run grid is handed (no torch): one JSON document per job, read by
``ddrs job --config -`` (:mod:`ddrs.jobs.runner`), as :class:`~ddrs.pipeline.training_plan.TrainingPlan`
hands ``ddrs train --config -`` its options.

A document holds every argument that decides the job's output rows, and nothing else (the
workflow compares it to decide a re-run; docs/architecture.md, "What re-runs"); the rule names the
job's files on the command line:

- ``kind``: which job it is (:data:`ddrs.cli.job.KINDS`, the name of the method that made it);
- ``inputs``: the test inputs and where they come from (the keys of ``ddrs certify``'s test-input
  flags: ``dataset``, ``data_root``, ``skip``, ``max``, ``seed``, ``device``);
- ``sigma``: σ of a fixed-σ certification (the half-width λ for uniform noise, :meth:`RunGrid.noise_sigma`);
- ``algorithm1`` or ``grid_search``: how σ per input is found first (DDRS §3.4; Appendix B), the
  fields of :class:`~ddrs.core.settings.Algorithm1Settings`, or of
  :class:`~ddrs.core.settings.SigmaSettings` with the grid's ``low``, ``high`` and ``budget``;
- ``certify``: the statistics of :class:`~ddrs.core.settings.CertifySettings` that decide rows, every
  σ-log column certified with them and made sound by Algorithm 3 (DDRS §3.3);
- ``semi_elastic``: Súkeník et al.'s σ(x) design and the semi-elasticity its certificate assumes
  (:class:`~ddrs.core.distance_sigma.DistanceSigmaSettings`).

Each settings section is the ``resume_settings()`` of a settings object built from the config's
section by field name (:func:`~ddrs.core.settings.settings_from`), so a field added to a settings
class (and its config key) reaches the job with no change here; the objects are built, and so
checked, when the DAG is. A σ search's document also holds what orders its float sums
(:meth:`JobPlan.search_order`: threads and inputs per batch), which moves σ by an ulp. What changes
only how fast a job runs (CERTIFY's batch, inputs per call, memory format, compilation and
sequential pool) is :meth:`JobPlan.speed`, handed to ``ddrs job --speed`` beside the document.
"""

from __future__ import annotations

from typing import Any

from ddrs.core.distance_sigma import DistanceSigmaSettings
from ddrs.core.seeds import StudyStream, derived_seed
from ddrs.core.settings import (
    Algorithm1Settings,
    CertifySettings,
    DeviceSettings,
    SequentialSettings,
    SigmaSettings,
    certify_speed,
    settings_from,
)
from ddrs.methods import get_method
from ddrs.pipeline.grid import RunGrid
from ddrs.pipeline.layout import Run


class JobPlan:
    """The job documents of a run grid's certification-side jobs."""

    def __init__(self, grid: RunGrid):
        self.grid = grid
        self.config = grid.config
        self._certify: dict[tuple[Run, str | None], CertifySettings] = {}

    def sigma(self, run: Run) -> float:
        """σ of the run's noise as the library takes it (λ for uniform noise)."""
        return self.grid.noise_sigma(run.dataset, run.method, run.sigma)

    def inputs(self, run: Run) -> dict[str, Any]:
        """The test inputs every certification-side job of the run visits (Cohen's ``--skip/--max``)."""
        spec = self.grid.datasets[run.dataset]
        return {
            "dataset": run.dataset,
            "data_root": self.config["data_root"],
            "skip": spec.get("test_skip", 1),
            "max": spec.get("test_max"),
            "seed": self.config["seed"],
            "device": self.config["device"],
        }

    def _shared(self, run: Run) -> dict[str, Any]:
        """Settings every test-time run of the model shares: its noise, seed and precision."""
        return {
            "noise": get_method(run.method).noise,
            "seed": self.config["seed"],
            "precision": self.config["precision"],
        }

    def certify_settings(self, run: Run, mode: str | None = None) -> CertifySettings:
        """CERTIFY's statistics: the config's ``certify`` section by field name, in ``mode`` where
        given, built once per run and mode (a job's document and its :meth:`speed` read the one object).
        The sequential stopping rule is ``certify.sequential`` by field name, deciding the dataset's
        radius grid in the norm of the method's noise (docs/protocol.md, "Sequential certification")."""
        if (run, mode) not in self._certify:
            self._certify[run, mode] = self._certify_settings(run, mode)
        return self._certify[run, mode]

    def _certify_settings(self, run: Run, mode: str | None) -> CertifySettings:
        section = self.config["certify"]
        radii = self.grid.radii(get_method(run.method).norm)[run.dataset]
        sequential = settings_from(SequentialSettings, section.get("sequential", {}), radii=tuple(radii))
        return settings_from(
            CertifySettings,
            section,
            **self._shared(run),
            mode=mode or section.get("mode", "fixed"),
            sequential=sequential,
        )

    def device_settings(self) -> DeviceSettings:
        """How fast CERTIFY runs: the config's ``certify`` section by field name (``batch``: the
        forward batch, ``auto`` or absent for the device's choice), resolved by the job on its device."""
        section = self.config["certify"]
        batch = section.get("batch", "auto")
        return settings_from(DeviceSettings, section, batch_size=None if batch == "auto" else batch)

    def _sigma_search(self, run: Run) -> dict[str, Any]:
        """The ``optimize_sigma`` fields Algorithm 1 and the grid search share, σ₀ = the training σ."""
        options = self.config["optimize_sigma"]
        return {
            **self._shared(run),
            "sigma0": self.sigma(run),
            "objective": options["objective"],
            "clamp": options.get("clamp"),
            "n0": options["n0"],
        }

    def algorithm1_settings(self, run: Run) -> Algorithm1Settings:
        """Algorithm 1 from the training σ, snapshots at every K of the model's grid."""
        options = self.config["optimize_sigma"]
        return Algorithm1Settings(
            **self._sigma_search(run),
            n=self.grid.algorithm1_n(run.method),
            steps=tuple(self.grid.k_grid(run.dataset, run.method, run.mode)),
            lr=options["lr"],
            min_sigma=options["min_sigma"],
        )

    def speed(self, run: Run) -> dict[str, Any]:
        """What changes only how fast a certification-side job of the run goes, never its rows:
        CERTIFY's :class:`~ddrs.core.settings.DeviceSettings` with the sequential pool
        (:func:`~ddrs.core.settings.certify_speed`) (``ddrs job --speed``)."""
        return {"certify": certify_speed(self.certify_settings(run), self.device_settings())}

    def search_order(self) -> dict[str, int]:
        """What decides the order of a σ search's float sums, and so the last bits of σ: torch's
        intra-op threads and the inputs solved together (the model's kernels sum in another order
        for another batch or thread count; tests/test_speed_keys.py shows σ logs change by an ulp)."""
        threads, batch = self.config.get("threads_per_job", 1), self.config["optimize_sigma"]["batch"]
        return {"threads": threads, "search_batch": batch}

    def fixed_certification(self, run: Run, mode: str | None = None) -> dict[str, Any]:
        """Cohen et al.'s CERTIFY with the training σ for every input (the Method rows), in ``mode``
        where given (:meth:`certify_settings`)."""
        return {
            "kind": "fixed_certification",
            "inputs": self.inputs(run),
            "sigma": self.sigma(run),
            "certify": self.certify_settings(run, mode=mode).resume_settings(),
        }

    def monte_carlo_certification(self, run: Run, draw: int | str) -> dict[str, Any]:
        """The fixed-σ certification again with CERTIFY's noise drawn from another seed, ``(seed,
        RECERTIFY, draw)``: the same model and inputs, so the spread over draws is the Monte Carlo
        part of the variance budget (:mod:`ddrs.analysis.replication`)."""
        document = self.fixed_certification(run)
        document["certify"]["seed"] = derived_seed(self.config["seed"], StudyStream.RECERTIFY, int(draw))
        return document

    def sequential_certification(self, run: Run) -> dict[str, Any]:
        """The fixed-σ job in sequential mode whatever ``certify.mode`` says: the sequential side of
        the comparison with Cohen's fixed n (``sequential_<dataset>``)."""
        return self.fixed_certification(run, mode="sequential")

    def data_dependent_certification(self, run: Run) -> dict[str, Any]:
        """Algorithm 1 to the largest K, then CERTIFY at σ*ₓ of every K and Algorithm 3 (DDRS §3.3–3.4)."""
        return {
            "kind": "data_dependent_certification",
            "inputs": self.inputs(run),
            **self.search_order(),
            "algorithm1": self.algorithm1_settings(run).resume_settings(),
            "certify": self.certify_settings(run).resume_settings(),
        }

    def semi_elastic_certification(self, run: Run) -> dict[str, Any]:
        """Súkeník et al.'s σ(x) from the training σ over the training inputs (``semi_elastic``, the
        fields of :class:`~ddrs.core.distance_sigma.DistanceSigmaSettings`), then Cohen's fixed-n
        CERTIFY at it and their certificate (docs/protocol.md, "A soundly certified data-dependent row")."""
        return {
            "kind": "semi_elastic_certification",
            "inputs": self.inputs(run),
            "sigma": self.sigma(run),
            "semi_elastic": settings_from(DistanceSigmaSettings, self.config["semi_elastic"]).resume_settings(),
            "certify": self.certify_settings(run, mode="fixed").resume_settings(),
        }

    def grid_search_certification(self, run: Run, n: int) -> dict[str, Any]:
        """Appendix B: σ from a grid at Algorithm 1's budget, n draws per grid point, then CERTIFY
        and Algorithm 3."""
        grid = self.config["grid_search"]
        search = SigmaSettings(**self._sigma_search(run), n=int(n)).resume_settings()
        return {
            "kind": "grid_search_certification",
            "inputs": self.inputs(run),
            **self.search_order(),
            "grid_search": {**search, "low": grid["low"], "high": grid["high"], "budget": grid["budget"]},
            "certify": self.certify_settings(run).resume_settings(),
        }

    def gradient_norms(self, run: Run) -> dict[str, Any]:
        """Sun et al. (2024) Table 1: the model's own loss and noise at its training σ (λ for
        uniform noise), on every ``sun2024.gradient_norm_skip``-th training input."""
        return {
            "kind": "gradient_norms",
            "inputs": {**self.inputs(run), "skip": self.config["sun2024"].get("gradient_norm_skip", 1), "max": None},
            "sigma": self.sigma(run),
            "method": run.method,
            "precision": self.config["precision"],
        }
