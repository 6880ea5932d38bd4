"""The paper's algorithms, read first (as one reads Cohen et al.'s ``core.py``).

In reading order:

- :mod:`~ddrs.core.noise`: the smoothing noise distributions and their certified radii
  (Gaussian ℓ2, Cohen et al. 2019 Thm 1; uniform ℓ1, Yang et al. 2020);
- :mod:`~ddrs.core.binomial`: the Clopper–Pearson bound on p_A;
- :mod:`~ddrs.core.smoothing`: ``Smooth`` with PREDICT and CERTIFY (Cohen et al. §3.2), batched;
- :mod:`~ddrs.core.sequential`, :mod:`~ddrs.core.sequential_pool`: sequential CERTIFY, drawing
  until a confidence sequence decides every radius of the grid (Voráček 2024, Algorithm 2);
- :mod:`~ddrs.core.sigma`: Algorithm 1 (DDRS §3.2, Eq. 2: σ*ₓ by gradient ascent on the certified
  radius) and the grid-search baseline (Appendix B);
- :mod:`~ddrs.core.memory`: Algorithm 3 (DDRS §3.5, Appendix C), memory-based certification;
- :mod:`~ddrs.core.semi_elastic`, :mod:`~ddrs.core.distance_sigma`: Súkeník et al.'s (ICML 2022)
  certificate of a semi-elastic σ(x), sound without a memory, and their σ(x) design;
- :mod:`~ddrs.core.certificate`: the abstention and easy/hard vocabulary every layer shares;
- :mod:`~ddrs.core.seeds`, :mod:`~ddrs.core.philox`, :mod:`~ddrs.core.streams`: per-input noise
  streams, so an input's draws depend only on the config's seed and its idx;
- :mod:`~ddrs.core.settings`, :mod:`~ddrs.core.device`, :mod:`~ddrs.core.gpu_slots`: the settings
  objects, the device and precision a classifier runs in, and the GPU a job claims.

Nothing here reads or writes files (:mod:`ddrs.jobs` does) or knows the config (:mod:`ddrs.pipeline`).
This package imports nothing on import, so a torch-free module of it stays torch-free to import.
"""
