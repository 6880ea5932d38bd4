"""Cohen et al.'s ``--skip`` / ``--max`` choice of test inputs."""

from __future__ import annotations


def subsample_indices(length: int, skip: int = 1, max: int | None = None) -> list[int]:  # noqa: A002
    """Indices of the test inputs Cohen's ``certify.py`` visits with ``--skip`` / ``--max``.

    Every ``skip``-th index from 0 below index ``max``: ``max`` bounds the index range, not the
    count. Cohen's loop (``if i % skip != 0: continue; if i == max: break``) stops there too when
    ``max`` is a multiple of ``skip``; otherwise it never meets ``i == max`` and runs to the end,
    which is not copied here.
    """
    if skip < 1:
        raise ValueError(f"skip must be >= 1, got {skip}")
    if max is not None and max < 0:
        raise ValueError(f"max must be >= 0 (or None for no limit), got {max}")
    stop = length if max is None else min(length, max)
    return list(range(0, stop, skip))
