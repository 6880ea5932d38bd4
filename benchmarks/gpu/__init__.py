"""The sections of ``benchmarks/gpu_throughput.py``, one module per subject: CERTIFY (:mod:`gpu.certify`),
sequential CERTIFY (:mod:`gpu.sequential`), Algorithm 1 (:mod:`gpu.algorithm1`), training
(:mod:`gpu.training`) and MACER's memory (:mod:`gpu.macer`), each sized by :class:`gpu.sizes.Sizes`."""
