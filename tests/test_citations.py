"""Every file of a published repository that the configurations or docs/protocol.md cite exists at
the commit they name, and so does every line they cite.

A citation is spelled ``owner/name@commit:path``, with ``#Lnn`` or ``#Lnn-Lmm`` for the lines it
means and ``*`` for any characters of the path (docs/protocol.md, "Sources"). Each is checked in the
registry's pinned rows (``src/ddrs/published/logs.csv``) where it names a registered log, else in a
mirror of its repository: ``DDRS_LOG_MIRRORS=DIR`` names a folder of ``<owner>+<name>`` git mirrors,
the layout ``scripts/published_logs_registry.py --mirrors`` reads (and
tests/test_published_registry_script.py). A citation that neither can check is skipped, saying why.
"""

from __future__ import annotations

import csv
import fnmatch
import functools
import os
import re
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest
from published_helpers import git_repository
from published_logs_registry import git_dir_in

from ddrs.published.log_registry import REGISTRY_PATH

REPO = Path(__file__).resolve().parents[1]
#: the files whose citations are checked
CITING = sorted((REPO / "config").glob("*.yaml")) + [REPO / "docs" / "protocol.md"]
MIRRORS = os.environ.get("DDRS_LOG_MIRRORS")

_NAME = r"[A-Za-z0-9][\w.-]*/[\w.-]+"
#: ``owner/name@commit`` wherever it stands: each must be a whole citation
_PINNED = re.compile(rf"({_NAME})@([0-9a-f]{{7,40}})\b")
_CITATION = re.compile(
    rf"(?P<repository>{_NAME})@(?P<commit>[0-9a-f]{{7,40}}):(?P<path>[^\s`'\"#,;()]+?)"
    r"(?:#L(?P<first>\d+)(?:-L(?P<last>\d+))?)?(?=[\s`'\",;()]|[.:]?$|[.:]\s)"
)


class Citation(NamedTuple):
    where: str  # file:line of the citation
    repository: str
    commit: str
    path: str
    lines: tuple[int, int] | None

    def __str__(self) -> str:
        lines = f"#L{self.lines[0]}-L{self.lines[1]}" if self.lines else ""
        return f"{self.where} {self.repository}@{self.commit}:{self.path}{lines}"


def citations_in(text: str, name: str) -> list[Citation]:
    """The citations of ``text`` (the file ``name``), in order."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{name}:{number}"
        for match in _CITATION.finditer(line):
            first = match["first"] and int(match["first"])
            lines = (first, int(match["last"] or first)) if first else None
            found.append(Citation(where, match["repository"], match["commit"], match["path"], lines))
    return found


def _git(git_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True)


def problem(citation: Citation, git_dir: Path) -> str | None:
    """What the mirror ``git_dir`` says is wrong with ``citation``, or None."""
    commit = _git(git_dir, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{citation.commit}^{{commit}}")
    if commit.returncode:
        return f"{citation}: no commit {citation.commit} in {git_dir}"
    commit = commit.stdout.decode().strip()
    if "*" in citation.path:
        listing = _git(git_dir, "ls-tree", "-r", "--name-only", "--full-tree", "-z", commit).stdout.decode()
        if not fnmatch.filter(listing.split("\0"), citation.path):
            return f"{citation}: nothing at {citation.commit} matches {citation.path}"
        return None
    if _git(git_dir, "cat-file", "-e", f"{commit}:{citation.path}").returncode:
        return f"{citation}: no {citation.path} at {citation.commit}"
    if citation.lines is not None:
        first, last = citation.lines
        count = len(_git(git_dir, "show", f"{commit}:{citation.path}").stdout.splitlines())
        if not 1 <= first <= last <= count:
            return f"{citation}: lines {first}-{last} of a {count}-line file"
    return None


@functools.cache
def registry_rows() -> tuple[dict[str, str], ...]:
    """The registry's rows (repository, commit, path, ...), read once."""
    with REGISTRY_PATH.open(newline="") as file:
        return tuple(csv.DictReader(file))


def registered(citation: Citation) -> bool:
    """Whether ``citation`` names a log (or logs) that the registry pins at its commit."""
    return citation.lines is None and any(
        row["repository"] == citation.repository
        and row["commit"].startswith(citation.commit)
        and fnmatch.fnmatchcase(row["path"], citation.path)
        for row in registry_rows()
    )


CITATIONS = [citation for path in CITING for citation in citations_in(path.read_text(), path.relative_to(REPO))]


def test_the_configurations_and_the_protocol_spell_every_pinned_citation_whole():
    """An ``owner/name@commit`` that the parser does not read as a citation would go unchecked."""
    partial = [
        f"{path.relative_to(REPO)}:{number}: {match[0]}"
        for path in CITING
        for number, line in enumerate(path.read_text().splitlines(), 1)
        for match in _PINNED.finditer(line)
        if not any(citation.start() == match.start() for citation in _CITATION.finditer(line))
    ]
    assert partial == [], "write owner/name@commit:path[#Lnn[-Lmm]]"
    assert {citation.repository for citation in CITATIONS} >= {
        "jh-jeong/smoothing-consistency",
        "eth-sri/acr-weakness",
        "alinlab/smoothing-catrs",
    }


@pytest.mark.parametrize("citation", CITATIONS, ids=str)
def test_each_cited_file_and_line_exists_at_its_commit(citation):
    if registered(citation):
        return
    if not MIRRORS:
        pytest.skip("not a registered log, and DDRS_LOG_MIRRORS names no folder of mirrors")
    git_dir = git_dir_in(Path(MIRRORS) / citation.repository.replace("/", "+"))
    if git_dir is None:
        pytest.skip(f"not a registered log, and {MIRRORS} holds no mirror of {citation.repository}")
    assert problem(citation, git_dir) is None


def test_the_check_refuses_a_path_missing_at_its_commit_and_lines_past_the_end(tmp_path):
    """The checker itself, on a repository of its own: a file deleted by a later commit is cited at
    the later one (MACER's logs at a11954a, issue 59), a citation's last line lies past the file."""
    first = git_repository(tmp_path / "repo", {"data/macer/noise_0.25": "a\n", "code/train.py": "1\n2\n3"})
    subprocess.run(["git", "-C", str(tmp_path / "repo"), "rm", "-q", "data/macer/noise_0.25"], check=True)
    later = git_repository(tmp_path / "repo", {"code/train.py": "1\n2\n3\n4\n"})
    git_dir = tmp_path / "repo" / ".git"
    text = (
        f"logs `someone/repo@{first[:7]}:data/macer/noise_*`, gone at `someone/repo@{later[:7]}:data/macer/noise_*`;\n"
        f"code at someone/repo@{later[:7]}:code/train.py#L2-L4 and someone/repo@{first[:7]}:code/train.py#L4.\n"
        f"someone/repo@{'0' * 7}:code/train.py, someone/repo@{later}:code/absent.py\n"
    )
    cited = citations_in(text, "cites.md")
    assert [(c.commit, c.path, c.lines) for c in cited] == [
        (first[:7], "data/macer/noise_*", None),
        (later[:7], "data/macer/noise_*", None),
        (later[:7], "code/train.py", (2, 4)),
        (first[:7], "code/train.py", (4, 4)),
        ("0" * 7, "code/train.py", None),
        (later, "code/absent.py", None),
    ]
    problems = [problem(citation, git_dir) for citation in cited]
    assert problems[0] is None and problems[2] is None
    assert "nothing at" in problems[1] and "lines 4-4 of a 3-line file" in problems[3]
    assert "no commit 0000000" in problems[4] and "no code/absent.py" in problems[5]


def test_a_registered_log_is_found_at_its_pinned_commit_and_nowhere_else():
    stability = "data/cifar10/noise_1.0/stab/noise_1.0.tsv"
    pinned, [other] = (
        citations_in(f"alinlab/smoothing-catrs@d4bc576:{stability}", "t"),
        citations_in("jh-jeong/smoothing-consistency@a11954a:data/certify/cifar10/macer/noise_*", "t"),
    )
    assert registered(*pinned) and not registered(other)
    assert not registered(pinned[0]._replace(commit="a11954a")) and not registered(pinned[0]._replace(lines=(1, 1)))
