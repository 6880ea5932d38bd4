"""benchmarks/catalogue_identity.py: which of two sides' catalogue outputs are byte-identical, and where they differ."""

import sys

from benchmark_helpers import BENCHMARKS

sys.path.insert(0, str(BENCHMARKS))
from catalogue_identity import built_files, compare  # noqa: E402


def write(root, files):
    for name, content in files.items():
        path = root / "results" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


def test_files_are_sorted_into_identical_differing_and_one_sided_with_the_first_difference(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    write(old, {"tables/a.csv": "x,y\n1,2\n", "tables/b.md": "caption. Cells.\n|1|\n", "figures/f.png": b"\x89PNG1",
                "tables/gone.csv": "1\n", "tables/a.csv.provenance.json": '{"code": "old"}'})  # fmt: skip
    write(new, {"tables/a.csv": "x,y\n1,2\n", "tables/b.md": "caption. Cells. One run.\n|1|\n",
                "figures/f.png": b"\x89PNG22", "tables/added.csv": "1\n",
                "tables/a.csv.provenance.json": '{"code": "new"}', "logs/x.log": "not built"})  # fmt: skip
    result = compare(built_files(old), built_files(new))
    assert (result["compared"], result["identical"]) == (3, 1)
    assert result["differing"] == {
        "figures/f.png": "binary: 5 against 6 bytes",
        "tables/b.md": "line 1, column 16: 'caption. Cells.' → 'caption. Cells. One run.'",
    }
    assert (result["old_only"], result["new_only"]) == (["tables/gone.csv"], ["tables/added.csv"])
    assert result["provenance_records"] == 1
