"""``ddrs show``: a results table in the terminal, as `make table1` ends and as the README shows it."""

from __future__ import annotations

import shlex

import pandas as pd
import pytest
from test_readme import README, make_dry_run

from ddrs.analysis import RADII_CIFAR10, best_table, write_table
from ddrs.analysis.log_record import LogRecord
from ddrs.cli import main

HEADER = "idx\tlabel\tpredict\tradius\tcorrect\ttime"
#: (train mode, certify mode, radii of four inputs, all correct but the last)
ROWS = {"Cohen": ("fs", "fs", [2.1, 0.6, 1.2, 0.0]), "Cohen-DS": ("fs", "ds", [2.2, 0.7, 1.3, 0.0])}


@pytest.fixture
def table1(tmp_path):
    """A table1.csv as the workflow writes it (best_table, write_table), from hand-written logs."""
    records = []
    for variant, (train, certify, radii) in ROWS.items():
        log = tmp_path / f"{variant}.tsv"
        rows = [f"{i}\t{i % 3}\t{i % 3}\t{r}\t{int(i < 3)}\t1.0" for i, r in enumerate(radii)]
        log.write_text("\n".join([HEADER, *rows]) + "\n")
        extra = {"K": 100} if certify == "ds" else {}
        records.append(LogRecord(log, "mnist5k", "cohen", train, certify, 0.25, variant=variant, **extra))
    path = tmp_path / "results" / "tables" / "table1.csv"
    write_table(best_table(records, radii=list(RADII_CIFAR10)).table, path)
    return path


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def test_show_prints_the_path_then_the_chosen_radii_with_their_intervals(table1, capsys):
    assert main(["show", str(table1), "--radii", "0", "1"]) == 0
    printed = capsys.readouterr()
    assert printed.err == ""  # no work line: the table's last row ends what `make table1` prints
    lines = printed.out.splitlines()
    renderings = f"{table1.with_suffix('.md')} and {table1.with_suffix('.tex')}"
    assert lines[0] == f"{table1} (mnist5k); with its caption in {renderings}"
    assert cells(lines[2]) == ["variant", "train", "certify", "0.00", "1.00", "ACR_per_log", "ACR_per_input_best"]
    back = pd.read_csv(table1).set_index("variant")
    cohen = cells(next(line for line in lines if line.startswith("| Cohen ")))
    low, high = back.loc["Cohen", "1.00_low"], back.loc["Cohen", "1.00_high"]
    assert cohen[4] == f"{back.loc['Cohen', '1.00']:.1f} [{low:.1f}, {high:.1f}]" == "50.0 [6.8, 93.2]"
    assert len(lines) == 2 + 2 + len(ROWS)


def test_show_names_a_missing_table_and_a_radius_the_table_lacks(table1, capsys):
    assert main(["show", str(table1.with_name("table9.csv"))]) == 2
    assert "table9.csv: no such table" in capsys.readouterr().err
    assert main(["show", str(table1), "--radii", "0.3"]) == 2
    assert "no column for radius [0.3]; the table's radii: 0.00, 0.25," in capsys.readouterr().err


def test_make_table1_ends_by_showing_the_table_the_readme_shows(table1, capsys, monkeypatch):
    """The Makefile's last table1 command prints what the README's table1 is a copy of: same headers."""
    *_, show = make_dry_run("table1").splitlines()
    program, command, path, *options = shlex.split(show)
    assert (program, command, path) == (".venv/bin/ddrs", "show", "results/tables/table1.csv"), show
    monkeypatch.chdir(table1.parents[2])
    assert main([command, path, *options]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("results/tables/table1.csv (mnist5k)")
    section = README.split("## What `make table1` gives", 1)[1]
    readme_header = next(line for line in section.splitlines() if line.startswith("| "))
    assert cells(readme_header) == cells(printed[2])
