"""The maintainers' tool that writes the registry of published logs: its parse rules
(scripts/published_registry/rules.py) and its regeneration from mirrors (scripts/published_logs_registry.py).

The regeneration tests build small git repositories of their own (no network, no fetched logs).
``test_real_mirrors_regenerate_the_shipped_registry`` (and ``…_origins``, for the table of who produced
each byte-identical log, scripts/published_log_origins.py) runs only when ``DDRS_LOG_MIRRORS`` names a
folder of mirrors laid out as ``<owner>+<name>/repo[/.git]`` (what ``scripts/published_logs_registry.py
--mirrors`` takes), e.g. ``DDRS_LOG_MIRRORS=~/mirrors``: then the shipped file must come out byte for byte.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from published_registry.rules import REPOSITORIES, our_method, parse_path, settings_for, tables_for

from ddrs.methods import METHODS
from ddrs.published.log_registry import EXTERNAL, REGISTRY_PATH, load_registry

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "published_logs_registry.py"
ORIGINS_SCRIPT = REPO / "scripts" / "published_log_origins.py"
HEADER = "idx\tlabel\tpredict\tradius\tcorrect\ttime\n"


# --- the parse rules ----------------------------------------------------------------------------------

PARSED = [
    # repository, path, dataset, sigma, arch, run, method_authors, method, noise
    (
        "Hadisalman/smoothing-adversarial",
        "data/certify/best_models/imagenet/PGD_1step/eps_127/resnet50/noise_0.50/test/sigma_0.50",
        ("imagenet", "0.5", "resnet50", "best_models", "PGD_1step/eps_127", "smoothadv", "0.5"),
    ),
    (
        "Hadisalman/smoothing-adversarial",
        "data/certify/imagenet/PGD_1step/imagenet/eps_255/resnet50/noise_1.00/test/sigma_1.00",
        ("imagenet", "1.0", "resnet50", "", "PGD_1step/eps_255", "smoothadv", "1.0"),
    ),
    (
        "Hadisalman/smoothing-adversarial",
        "data/certify/cifar10/DDN_4steps_multiNoiseSamples/2-multitrain/eps_64/cifar10/resnet110/noise_0.12/test/sigma_0.12",
        ("cifar10", "0.12", "resnet110", "", "DDN_4steps_multiNoiseSamples/2-multitrain/eps_64", EXTERNAL, "0.12"),
    ),
    (
        "Hadisalman/smoothing-adversarial",
        "data/certify/cifar10/PGD_2steps_baseAttackExp/without_noise/eps_64/cifar10/resnet110/noise_0.00/test/sigma_0.25",
        ("cifar10", "0.25", "resnet110", "", "PGD_2steps_baseAttackExp/without_noise/eps_64", EXTERNAL, "0.0"),
    ),
    (
        "jh-jeong/smoothing-consistency",
        "data/certify/mnist/consistency/cohen/num_2/lbd_10.0/eta_0.5/noise_0.25_3",
        ("mnist", "0.25", "lenet", "3", "consistency/cohen/num_2/lbd_10.0/eta_0.5", "consistency", "0.25"),
    ),
    (
        "jh-jeong/smoothing-consistency",
        "data/certify/cifar10/salman/pgd_512.0_10_10/num_2/cifar_densenet40/noise_0.50_1149_o",
        ("cifar10", "0.5", "cifar_densenet40", "1149_o", "salman/pgd_512.0_10_10/num_2", "smoothadv", "0.5"),
    ),
    (
        "jh-jeong/smoothing-consistency",
        "data/certify/mnist/macer_deferred30/num_16/lbd_6.0/gamma_8.0/beta_16.0/noise_1.00_505",
        ("mnist", "1.0", "lenet", "505", "macer_deferred30/num_16/lbd_6.0/gamma_8.0/beta_16.0", "macer", "1.0"),
    ),
    (
        "eth-sri/acr-weakness",
        "data/certify/imagenet/gaussian/noise_0.25",
        ("imagenet", "0.25", "", "", "gaussian", "cohen", "0.25"),
    ),
    (
        "eth-sri/acr-weakness",
        "test/certify/cifar10/0.25_3_pgd_radius_l2/ds_60_0.5/num_4/dataset_weight_10/1/noise_0.25.tsv",
        (
            "cifar10",
            "0.25",
            "cifar_resnet110",
            "1",
            "ours 0.25_3_pgd_radius_l2/ds_60_0.5/num_4/dataset_weight_10",
            "easy_focus",
            "0.25",
        ),
    ),
    (
        "jh-jeong/smoothmix",
        "data/certify/mnist/smoothmix/smix_1.0_8_m1/tau_5.0/num_4/23/noise_1.0",
        ("mnist", "1.0", "lenet", "23", "smoothmix/smix_1.0_8_m1/tau_5.0/num_4", EXTERNAL, "1.0"),
    ),
    (
        "alinlab/smoothing-catrs",
        "data/fmnist/noise_0.25/salman/noist_0.25.tsv",
        ("fmnist", "0.25", "", "", "salman", "smoothadv", "0.25"),
    ),
    (
        "alinlab/smoothing-catrs",
        "data/cifar10c/severity_3/stab/glass_blur.tsv",
        ("cifar10c-glass_blur-s3", "", "", "", "stab", "stability", ""),
    ),
]


@pytest.mark.parametrize(("repository", "path", "expected"), PARSED, ids=[case[1] for case in PARSED])
def test_paths_parse_into_what_the_log_is(repository, path, expected):
    rules = REPOSITORIES[repository]
    parsed = parse_path(rules, path)
    assert parsed is not None
    method = our_method(rules, parsed["method_authors"])
    fields = ("dataset", "sigma", "arch", "run", "method_authors")
    assert (*(parsed[key] for key in fields), method, parsed["noise"]) == expected


def test_settings_and_tables_follow_the_repository_statements():
    cohen = REPOSITORIES["locuslab/smoothing"]
    cifar = "data/certify/cifar10/resnet110/noise_0.25/test/sigma_0.25"
    assert settings_for(cohen, cifar) == {"n": "100000", "n0": "100", "alpha": "0.001", "skip": "20"}
    assert settings_for(cohen, "data/certify/imagenet/resnet50/noise_0.50/train/sigma_0.50")["skip"] == ""
    assert (
        tables_for(cohen, "data/certify/cifar10/resnet110/noise_0.50/test/sigma_0.50") == "Table 3; Figure 6; Figure 15"
    )
    assert tables_for(cohen, "data/certify/cifar10/resnet110/noise_0.12/test/sigma_0.50") == ""
    jeong = REPOSITORIES["jh-jeong/smoothing-consistency"]
    assert tables_for(jeong, "data/certify/mnist/stab/lbd_2/noise_0.5_1297") == "supp. Table 2; supp. Table 3"
    assert parse_path(jeong, "data/certify/mnist/not_a_layout") is None


def test_every_rule_names_its_source_and_a_known_method():
    for repository in REPOSITORIES.values():
        assert repository.paper
        for rule in (*repository.paths, *repository.settings, *repository.tables):
            assert rule.source.strip(), (repository.name, rule.pattern)
            re.compile(rule.pattern)
        assert {method for _, method in repository.methods} <= set(METHODS) | {EXTERNAL}


# --- regeneration from mirrors ------------------------------------------------------------------------


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout.strip()


def _repository(root: Path, files: dict[str, bytes]) -> Path:
    """A git repository holding ``files`` in one commit; returns its .git directory."""
    root.mkdir()
    _git(root, "init", "-q")
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "logs")
    return root / ".git"


COHEN_LOGS = {
    "data/certify/imagenet/resnet50/noise_0.50/test/sigma_0.50": (
        HEADER + "0\t0\t0\t0.738\t1\t0:02:33.144821\n100\t2\t-1\t0.0\t0\t0:02:29.060859\n200\t4\t4\t1.2\t1\t0:02:30.1\n"
    ).encode(),
    "data/certify/cifar10/resnet110/noise_0.25/test/sigma_0.50": (
        HEADER.replace("\n", "\r\n") + "0\t3\t3\t0.378\t1\t15.4\r\n20\t7\t-1\t0.0\t0\t15.6\r\n"
    ).encode(),
    "data/certify/imagenet/resnet50/noise_0.25/test/sigma_0.25": HEADER.encode(),  # header only: still a log
    "data/predict/imagenet/resnet50/noise_0.25/test/N_100": b"idx\tlabel\tpredict\tcorrect\ttime\n0\t0\t0\t1\t0.1\n",
    "extra/unplaced.tsv": (HEADER + "0\t1\t1\t0.5\t1\t0:00:01.0").encode(),  # no path rule; no final newline
    "README.md": b"# not a log\n",
}
JEONG_LOGS = {
    "data/certify/mnist/cohen/noise_0.25_3870": (HEADER + "0\t7\t7\t0.953\t1\t0:00:00.5\n").encode(),
    "data/certify/mnist/cohen/noise_0.25_3870_acc": b"0.00000\t0.99\n",
    "LICENSE": b"MIT License\n\nCopyright (c) 2020\n",
}


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=REPO)


def test_the_script_registers_every_log_of_small_mirrors(tmp_path):
    cohen = _repository(tmp_path / "locuslab+smoothing", COHEN_LOGS)
    jeong = _repository(tmp_path / "jeong", JEONG_LOGS)
    out = tmp_path / "logs.csv"
    mirrors = ("--mirror", f"locuslab/smoothing={cohen}", "--mirror", f"jh-jeong/smoothing-consistency={jeong}")
    result = _run(*mirrors, "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "locuslab/smoothing:extra/unplaced.tsv: a log no path rule parses" in result.stderr
    rows = {row["path"]: row for row in csv.DictReader(out.open(newline=""))}
    cohen_logs = [name for name in COHEN_LOGS if name.startswith(("data/certify", "extra"))]
    assert sorted(rows) == sorted([*cohen_logs, "data/certify/mnist/cohen/noise_0.25_3870"])
    for name in cohen_logs:
        row = rows[name]
        assert row["sha256"] == hashlib.sha256(COHEN_LOGS[name]).hexdigest()
        assert int(row["size"]) == len(COHEN_LOGS[name])
        assert row["commit"] == _git(cohen.parent, "rev-parse", "HEAD")
        assert (row["repository"], row["paper"], row["licence"]) == ("locuslab/smoothing", "cohen2019", "none stated")
    assert [rows[name]["rows"] for name in cohen_logs] == ["3", "2", "0", "1"]
    mismatched = rows["data/certify/cifar10/resnet110/noise_0.25/test/sigma_0.50"]
    assert {
        key: mismatched[key] for key in ("dataset", "sigma", "noise", "arch", "split", "method", "skip", "table")
    } == {
        "dataset": "cifar10",
        "sigma": "0.5",
        "noise": "0.25",
        "arch": "resnet110",
        "split": "test",
        "method": "cohen",
        "skip": "20",
        "table": "Figure 15",
    }
    unplaced = rows["extra/unplaced.tsv"]
    assert (unplaced["dataset"], unplaced["sigma"], unplaced["method"], unplaced["n"]) == ("", "", EXTERNAL, "100000")
    mnist = rows["data/certify/mnist/cohen/noise_0.25_3870"]
    assert (mnist["run"], mnist["arch"], mnist["licence"], mnist["paper"]) == ("3870", "lenet", "MIT", "jeong2020")
    assert len(load_registry(out)) == 5  # the loader accepts what the script writes

    again = tmp_path / "again.csv"
    assert _run(*reversed_pairs(mirrors), "--out", str(again)).returncode == 0
    assert again.read_bytes() == out.read_bytes()
    from_folder = tmp_path / "from_folder.csv"
    assert _run("--mirrors", str(tmp_path), "--out", str(from_folder)).returncode == 0  # finds locuslab+smoothing
    assert {row["repository"] for row in csv.DictReader(from_folder.open())} == {"locuslab/smoothing"}


def reversed_pairs(arguments: tuple[str, ...]) -> tuple[str, ...]:
    """The ``--mirror X`` pairs in the other order: the output must not depend on it."""
    pairs = [arguments[i : i + 2] for i in range(0, len(arguments), 2)]
    return tuple(item for pair in reversed(pairs) for item in pair)


def test_the_script_refuses_an_unknown_repository_and_a_missing_mirror(tmp_path):
    result = _run("--mirror", f"someone/else={tmp_path}", "--out", str(tmp_path / "x.csv"))
    assert result.returncode == 1 and "no parse rules for 'someone/else'" in result.stderr
    result = _run("--mirror", f"locuslab/smoothing={tmp_path / 'absent'}", "--out", str(tmp_path / "x.csv"))
    assert result.returncode == 1 and "git rev-parse" in result.stderr
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.skipif(not os.environ.get("DDRS_LOG_MIRRORS"), reason="DDRS_LOG_MIRRORS names no folder of mirrors")
def test_real_mirrors_regenerate_the_shipped_registry(tmp_path):
    out = tmp_path / "logs.csv"
    result = _run("--mirrors", os.environ["DDRS_LOG_MIRRORS"], "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == REGISTRY_PATH.read_bytes()


def _dated_repository(root: Path, files: dict[str, bytes], date: str) -> str:
    """A git repository at ``root`` committing ``files`` at ``date``; returns its commit."""
    root.mkdir(parents=True)
    _git(root, "init", "-q")
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    _git(root, "add", "-A")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t"}
    env |= {"GIT_COMMITTER_EMAIL": "t@example.org", "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    subprocess.run(["git", "commit", "-q", "-m", "logs"], cwd=root, env=env, check=True, capture_output=True)
    return _git(root, "rev-parse", "HEAD")


def test_the_origins_script_credits_the_copy_first_committed(tmp_path):
    """The copier sorts first in the registry, but committed the log a year after its producer."""
    from published_helpers import registry_row, write_registry

    content = HEADER + "0\t3\t3\t0.5\t1\t0:00:01.0\n"
    copier = _dated_repository(tmp_path / "Aa+copier", {"data_cohen/log": content.encode()}, "2020-06-01T00:00:00")
    producer = _dated_repository(tmp_path / "zz+producer", {"data/log": content.encode()}, "2019-02-01T00:00:00")
    alone = _dated_repository(
        tmp_path / "zz+alone", {"data/other": (content + content[-20:]).encode()}, "2018-01-01T00:00:00"
    )
    rows = [
        registry_row("data_cohen/log", content, repository="Aa/copier", commit=copier),
        registry_row("data/log", content, repository="zz/producer", commit=producer),
        registry_row("data/other", content + content[-20:], repository="zz/alone", commit=alone),
    ]
    registry = write_registry(tmp_path / "registry.csv", rows)
    out = tmp_path / "origins.csv"
    command = [sys.executable, str(ORIGINS_SCRIPT), "--mirrors", str(tmp_path), "--registry", str(registry)]
    result = subprocess.run([*command, "--out", str(out)], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert "1 contents with copies, 1 credited to another copy than the first in registry order" in result.stdout
    with open(out, newline="") as handle:
        (origin,) = list(csv.DictReader(handle))  # the single log has no copies: no row
    assert (origin["repository"], origin["path"], origin["commit"]) == ("zz/producer", "data/log", producer)
    assert origin["committed"].startswith("2019-02-01")


@pytest.mark.skipif(not os.environ.get("DDRS_LOG_MIRRORS"), reason="DDRS_LOG_MIRRORS names no folder of mirrors")
def test_real_mirrors_regenerate_the_shipped_origins(tmp_path):
    from ddrs.published.origins import ORIGINS_PATH

    out = tmp_path / "origins.csv"
    command = [sys.executable, str(ORIGINS_SCRIPT), "--mirrors", os.environ["DDRS_LOG_MIRRORS"], "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == ORIGINS_PATH.read_bytes()
