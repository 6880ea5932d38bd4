"""Atomic file output: all or nothing, with the permissions of an ordinarily created file."""

import os
import stat

import pytest

from ddrs.io import atomic_path, write_text_atomic


@pytest.fixture
def umask_022():
    before = os.umask(0o022)
    yield
    os.umask(before)


def test_an_atomic_file_has_the_permissions_the_umask_gives(tmp_path, umask_022):
    write_text_atomic(tmp_path / "table.csv", "a,b\n")
    with open(tmp_path / "plain.csv", "w") as handle:
        handle.write("a,b\n")
    mode = stat.S_IMODE((tmp_path / "table.csv").stat().st_mode)
    assert mode == stat.S_IMODE((tmp_path / "plain.csv").stat().st_mode) == 0o644


def test_a_failed_block_leaves_neither_the_file_nor_its_temporary(tmp_path):
    with pytest.raises(RuntimeError), atomic_path(tmp_path / "out" / "log.tsv") as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed")
    assert list((tmp_path / "out").iterdir()) == []
