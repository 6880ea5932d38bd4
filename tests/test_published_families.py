"""Each published method's family and extra training data (ddrs/published/families.csv): one row per
method of the shipped registry, read by one function, with errors that say what to add."""

from __future__ import annotations

import pandas as pd
import pytest

from ddrs.published.families import FAMILIES_PATH, Family, FamilyError, family_of, read_families
from ddrs.published.log_registry import load_registry


def test_every_method_of_the_registry_has_exactly_one_family():
    registry = load_registry()
    table = pd.read_csv(FAMILIES_PATH, dtype=str, keep_default_na=False)
    keys = list(zip(table["repository"], table["method_authors"], strict=True))
    assert len(keys) == len(set(keys))  # no method twice
    methods = set(zip(registry["repository"], registry["method_authors"], strict=True))
    assert set(keys) == methods  # every registry method, and none else
    families = read_families()
    assert all(family_of(families, *method).name for method in methods)


def test_extra_data_marks_salman_et_al_s_pretraining_and_self_training_and_nothing_else():
    families = read_families()
    extra = {key: family for key, family in families.items() if family.extra_data}
    assert {repository for repository, _ in extra} == {"Hadisalman/smoothing-adversarial"}
    for (_, method), family in extra.items():
        assert ("finetune_cifar_from_imagenet" in method) == ("ImageNet pre-training" in family.extra_data)
        assert ("self_training" in method) == ("self-training" in family.extra_data)
    plain = {(r, m) for (r, m) in families if "self_training" not in m and "finetune_cifar_from_imagenet" not in m}
    assert not any(families[key].extra_data for key in plain)
    assert families["Hadisalman/smoothing-adversarial", "cohen"] == Family("Gaussian")
    assert families["eth-sri/acr-weakness", "ours"].name == "Sun et al."


def test_a_method_without_a_family_or_a_table_with_one_twice_is_an_error_naming_it(tmp_path):
    with pytest.raises(FamilyError, match=r"no family for someone/else:'new'.*add a row"):
        family_of(read_families(), "someone/else", "new")
    path = tmp_path / "families.csv"
    path.write_text("repository,method_authors,family,extra_data\na/b,m,Gaussian,\na/b,m,MACER,\n")
    with pytest.raises(FamilyError, match=r"families\.csv: a/b:m has two rows"):
        read_families(path)
