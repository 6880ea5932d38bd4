"""A user's hostile own logs, each refused through both routes (``ddrs logs rank --own`` and the
config's ``published_logs.own``, built by the workflow's ``dataset_entries``) in a few lines naming
the file and the defect; and an own log ranked only on a whole published input set."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from published_helpers import (
    REPOSITORY,
    gaussian_like,
    git_repository,
    log_text,
    order_label_table,
    registry_row,
    scaled_radii,
    write_families,
    write_registry,
)

from ddrs.errors import DDRSError
from ddrs.published import builders
from ddrs.published.log_registry import load_registry
from ddrs.published.manifest import fetch_repository
from ddrs.published.own_logs import OwnLogError, own_specs

N = 600
FAMILIES = {"gaussian": "Gaussian", "strong": "Strong"}


@pytest.fixture
def mirror(tmp_path):
    """A mirror of a Gaussian log and a stronger method's on CIFAR-10 idx 0:599, the registry and
    families naming them, and the manifest of its fetch (what the config route reads)."""
    gaussian = log_text(*gaussian_like(N, 0.5, 0.6, 2.0, seed=1))
    strong = log_text(*gaussian_like(N, 0.5, 0.8, 3.0, seed=2))
    commit = git_repository(tmp_path / "mirror", {"data/gaussian": gaussian, "data/strong": strong})
    rows = [
        registry_row("data/gaussian", gaussian, commit=commit),
        registry_row("data/strong", strong, commit=commit, method_authors="strong", method="external"),
    ]
    registry = write_registry(tmp_path / "registry.csv", rows)
    families = write_families(tmp_path / "families.csv", rows, FAMILIES)
    manifest = tmp_path / "manifest.csv"
    fetch_repository(load_registry(registry), REPOSITORY, tmp_path / "cache", manifest, mirror=tmp_path / "mirror")
    return {"registry": registry, "families": families, "manifest": manifest, "root": tmp_path}


def _cli(mirror, own: list[tuple[str, str, str]], *options: str) -> list[str]:
    root = mirror["root"]
    command = ["logs", "rank", "--dataset", "cifar10", "--registry", str(mirror["registry"])]
    command += ["--families", str(mirror["families"]), "--cache", str(root / "cache"), "--offline"]
    command += ["--mirror", f"{REPOSITORY}={root / 'mirror'}", "--out", str(root / "ranked"), *options]
    for name, sigma, path in own:
        command += ["--own", name, sigma, path]
    return command


def _config_route(mirror, own: dict) -> None:
    builders.dataset_entries(
        [mirror["manifest"]], "cifar10", mirror["root"] / "entries.npz", mirror["registry"], mirror["families"], own
    )


def _edited(text: str, edits: dict[str, str], row: int = 3) -> str:
    """``text`` with the ``edits`` (column → value) made to data row ``row`` (idx ``row``)."""
    lines = text.split("\n")
    header = lines[0].split("\t")
    fields = lines[row + 1].split("\t")
    for column, value in edits.items():
        fields[header.index(column)] = value
    lines[row + 1] = "\t".join(fields)
    return "\n".join(lines)


def _correct_row(text: str) -> int:
    """The first data row of ``text`` with correct = 1."""
    return next(k for k, line in enumerate(text.split("\n")[1:]) if line.split("\t")[4] == "1")


def _rows(text: str, keep) -> str:
    lines = text.split("\n")
    body = [line for line in lines[1:-1] if keep(line.split("\t"))]
    return "\n".join([lines[0], *body]) + "\n"


#: a log every value of which is sound: label idx % 10, 90 % certified, radii below the cap of n = 100,000
SOUND = log_text(*gaussian_like(N, 0.5, 0.9, 3.0, seed=12))
N_GIVEN = ("--n", "100000")

#: (log text, σ, CLI options, config keys, the defect the error must name)
HOSTILE = {
    "nan_radius": (_edited(SOUND, {"radius": "nan"}), "0.5", N_GIVEN, {"n": 100_000}, r"radius nan is not a finite"),
    "inf_radius_without_n": (_edited(SOUND, {"radius": "inf"}), "0.5", (), {}, r"radius inf is not a finite number"),
    "negative_radius": (_edited(SOUND, {"radius": "-0.5"}), "0.5", N_GIVEN, {"n": 100_000}, r"radius -0\.5 is negat"),
    "fractional_idx": (
        _edited(SOUND, {"idx": "20.7"}),
        "0.5",
        N_GIVEN,
        {"n": 100_000},
        r"line 5: idx '20\.7' is not an integ",
    ),
    "fractional_label": (
        _edited(SOUND, {"label": "3.4"}),
        "0.5",
        N_GIVEN,
        {"n": 100_000},
        r"line 5: label '3\.4' is not an",
    ),
    "fractional_correct_above": (
        _edited(SOUND, {"correct": "1.4"}),
        "0.5",
        N_GIVEN,
        {"n": 100_000},
        r"correct '1\.4' is not an integer",
    ),
    "fractional_correct_below": (
        _edited(SOUND, {"correct": "0.4"}),
        "0.5",
        N_GIVEN,
        {"n": 100_000},
        r"correct '0\.4' is not an integer",
    ),
    "correct_not_binary": (_edited(SOUND, {"correct": "2"}), "0.5", N_GIVEN, {"n": 100_000}, r"correct 2 is not 0 or"),
    "correct_not_predict_is_label": (
        _edited(SOUND, {"correct": "0"}, row=_correct_row(SOUND)),
        "0.5",
        N_GIVEN,
        {"n": 100_000},
        r"correct 0 with predict (\d) and label \1",
    ),
    "predict_99": (_edited(SOUND, {"predict": "99"}), "0.5", N_GIVEN, {"n": 100_000}, r"predict 99 is neither a class"),
    "label_10": (
        _edited(SOUND, {"label": "10"}),
        "0.5",
        N_GIVEN,
        {"n": 100_000},
        r"label 10 is not a class \(0 to 9\)",
    ),
    "abstention_with_radius": (
        _edited(SOUND, {"predict": "-1", "correct": "0", "radius": "0.3"}),
        "0.5",
        N_GIVEN,
        {"n": 100_000},
        r"an abstention \(predict -1\) with radius 0\.3",
    ),
    "radius_above_cap": (_edited(SOUND, {"radius": "25.0"}), "0.5", N_GIVEN, {"n": 100_000}, r"impossible_radius"),
    "nan_sigma": (SOUND, "nan", N_GIVEN, {"n": 100_000}, r"σ nan is not a number from 0\.01 to 10"),
    "negative_sigma_without_n": (SOUND, "-0.25", (), {}, r"σ -0\.25 is not a number from 0\.01 to 10"),
    "n_zero": (SOUND, "0.5", ("--n", "0"), {"n": 0}, r"n 0 is not a whole number from 1 to 10\^10"),
    "alpha_one": (SOUND, "0.5", ("--alpha", "1"), {"alpha": 1.0}, r"alpha 1(\.0)? is not in \(0, 1\)"),
    "radius_x1000_without_n": (
        scaled_radii(SOUND, 1000.0),
        "0.5",
        (),
        {},
        r"impossible_radius.*above σ·Φ⁻¹\(α\^\(1/n\)\) = 3\.0288.* n = 10,000,000,000",
    ),
    "radius_1e308_without_n": (_edited(SOUND, {"radius": "1e308"}), "0.5", (), {}, r"impossible_radius"),
    "sigma_1e-300": (SOUND, "1e-300", (), {}, r"σ 1e-300 is not a number from 0\.01 to 10"),
    "n_beyond_any_gpu": (SOUND, "0.5", ("--n", str(10**11)), {"n": 10**11}, r"n 100000000000 is not a whole number"),
    "label_beyond_int64": (_edited(SOUND, {"label": "1e20"}), "0.5", N_GIVEN, {"n": 100_000}, r"line 5: label '1e20'"),
    "comment_line": (
        SOUND.replace("\n", "\n# seed 0\n", 2).replace("\n# seed 0\n", "\n", 1),
        "0.5",
        N_GIVEN,
        {"n": 100_000},
        r"line 3 is a comment",
    ),
    "repeated_header": (SOUND + SOUND, "0.5", N_GIVEN, {"n": 100_000}, r"line 602 repeats the header"),
    "radius_named_twice": (
        SOUND.replace("correct\ttime", "correct\tradius", 1),
        "0.5",
        N_GIVEN,
        {"n": 100_000},
        r"line 1: column radius is named twice in the header",
    ),
    "every_other_row": (
        _rows(SOUND, lambda fields: int(fields[0]) % 2 == 0),
        "0.5",
        N_GIVEN,
        {"n": 100_000},
        r"its 300 inputs are not a published input set .* has 300 it lacks \(e\.g\. idx 1, 3, 5\) and it holds 0 "
        r"beyond",
    ),
    "correct_rows_only": (
        _rows(SOUND, lambda fields: fields[4] == "1"),
        "0.5",
        N_GIVEN,
        {"n": 100_000},
        r"inputs are not a published input set of cifar10; the nearest, 600 inputs: idx 0:599:1, .* it lacks",
    ),
    "superset": (
        SOUND + "600\t0\t0\t0.5\t1\t0:00:01.250000\n",
        "0.5",
        N_GIVEN,
        {"n": 100_000},
        r"its 601 inputs are not a published .* has 0 it lacks and it holds 1 beyond it \(e\.g\. idx 600\)",
    ),
}


@pytest.mark.filterwarnings("ignore::ddrs.published.own_logs.OwnLogWarning")  # no n given: tested apart
@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_own_log_is_refused_through_both_routes_naming_the_file_and_the_defect(mirror, case, capsys):
    from ddrs.cli import main

    text, sigma, options, keys, defect = HOSTILE[case]
    path = mirror["root"] / "mine.tsv"
    path.write_text(text)
    assert main(_cli(mirror, [("mine", sigma, str(path))], *options)) == 2
    error = capsys.readouterr().err.split("ddrs logs: error: ")[-1].strip()  # after the fetch's progress bars
    assert len(error.splitlines()) <= 5 and str(path) in error, error
    assert re.search(defect, error), error
    own = {"mine": {"dataset": "cifar10", "sigma": float(sigma), "path": str(path), **keys}}
    with pytest.raises(DDRSError, match=defect) as refused:
        _config_route(mirror, own)
    assert str(path) in str(refused.value) and len(str(refused.value).splitlines()) <= 5
    assert not (mirror["root"] / "entries.npz").exists() and not (mirror["root"] / "ranked").exists()


def test_two_own_logs_of_one_name_are_refused_not_overwritten(mirror, capsys):
    from ddrs.cli import main

    (mirror["root"] / "a.tsv").write_text(SOUND)
    (mirror["root"] / "b.tsv").write_text(SOUND)
    own = [("mine", "0.5", str(mirror["root"] / "a.tsv")), ("mine", "0.5", str(mirror["root"] / "b.tsv"))]
    assert main(_cli(mirror, own, *N_GIVEN)) == 2
    assert "own log name 'mine' is given twice" in capsys.readouterr().err
    with pytest.raises(OwnLogError, match=r"'mine' is given twice \(.*a\.tsv, .*b\.tsv\)"):
        own_specs([("mine", {"path": "a.tsv"}), ("mine", {"path": "b.tsv"})])


def test_a_sound_own_log_of_a_whole_input_set_is_ranked_through_both_routes(mirror, capsys):
    from ddrs.cli import main

    path = mirror["root"] / "mine.tsv"
    path.write_text(SOUND)
    assert main(_cli(mirror, [("mine", "0.5", str(path))], *N_GIVEN)) == 0
    assert "mine: rank 1 of 600 inputs: idx 0:599:1, standard order" in capsys.readouterr().out
    _config_route(mirror, {"mine": {"dataset": "cifar10", "sigma": 0.5, "path": str(path), "n": 100_000}})
    assert (mirror["root"] / "entries.npz").exists()


def test_an_own_imagenet_log_of_mixed_orders_or_of_an_order_it_contradicts_is_refused(tmp_path):
    """The own log's order is its labels': half standard and half Salman et al.'s matches neither; a
    declared order its labels contradict is refused, even where they match the other."""
    from ddrs.published.input_orders import InputOrderError
    from ddrs.published.own_logs import own_entries

    n = 100
    idx = np.arange(n)
    shifted = (idx + 5) % 10
    fingerprints = order_label_table("imagenet", {"standard": (idx, idx % 10), "salman2019": (idx, shifted)})
    mixed = np.where(idx < n // 2, idx % 10, shifted)
    path = tmp_path / "mine.tsv"
    path.write_text(log_text(*gaussian_like(n, 0.5, 0.9, 3.0, seed=1), labels=mixed))
    spec = {"dataset": "imagenet", "sigma": 0.5, "path": str(path), "n": 100_000}
    with pytest.raises(
        InputOrderError, match=r"mine\.tsv \(own log 'mine'\): .* at 50 of 100; .* at 50 of 100 .* none"
    ):
        own_entries({"mine": spec}, "imagenet", [], fingerprints)
    path.write_text(log_text(*gaussian_like(n, 0.5, 0.9, 3.0, seed=1), labels=shifted))
    with pytest.raises(InputOrderError, match=r"published_logs\.own\.mine\.order .* puts it in the standard order"):
        own_entries({"mine": {**spec, "order": "standard"}}, "imagenet", [], fingerprints)


def test_an_own_log_of_idx_written_as_whole_floats_is_read_as_integers(mirror):
    """20.0 is the integer 20 as written: no truncation happens, so nothing is refused."""
    path = mirror["root"] / "mine.tsv"
    path.write_text(_edited(SOUND, {"idx": "3.0", "label": "3.0"}))
    _config_route(mirror, {"mine": {"dataset": "cifar10", "sigma": 0.5, "path": str(path), "n": 100_000}})
    entries = pd.DataFrame(np.load(mirror["root"] / "entries.npz")["idx"])
    assert (entries[0].to_numpy()[-N:] == np.arange(N)).all()
