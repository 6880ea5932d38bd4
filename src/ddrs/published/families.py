"""Each published method's family and the training data beyond its dataset's training set:
``ddrs/published/families.csv``, one row per method of the registry (issue 41).

A method is what its authors call it in one repository (``repository``, ``method_authors``: the
registry's columns). Its family is the training method it is a variant of, whatever its settings:
Gaussian data augmentation (Cohen et al. 2019; also Salman et al.'s re-certifications of Cohen's
models and their replications), stability training, SmoothAdv (Salman et al. 2019: PGD and DDN
attacks, one or several noise draws), MACER, consistency (Jeong & Shin 2020, on Gaussian or on
SmoothAdv), SmoothMix, CAT-RS, Sun et al. (2024; their ``ours``, our ``easy_focus``).
``extra_data`` names what it trained on beyond the dataset's own training set, empty where
nothing: Salman et al. (2019, §4.3 and Appendix) pre-train on ImageNet (``finetune_cifar_from_imagenet…``)
and self-train on 500,000 unlabelled 80M Tiny Images (``self_training…``, after Carmon et al. 2019).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from ddrs.errors import DDRSError
from ddrs.published.csv_table import read_checked_csv

#: the file shipped in the package
FAMILIES_PATH = Path(__file__).with_name("families.csv")
#: its columns, in order
COLUMNS = ("repository", "method_authors", "family", "extra_data")
#: the family of Gaussian data augmentation, every comparison's baseline
GAUSSIAN_FAMILY = "Gaussian"


class FamilyError(DDRSError):
    """A families table is malformed, or names no family for a method."""


@dataclass(frozen=True)
class Family:
    """A method's family and the extra training data it used ("" where none)."""

    name: str
    extra_data: str = ""

    @property
    def label(self) -> str:
        """``SmoothAdv`` or ``SmoothAdv + extra data (ImageNet pre-training)``."""
        return f"{self.name} + extra data ({self.extra_data})" if self.extra_data else self.name


Families = dict[tuple[str, str], Family]


def read_families(path: str | os.PathLike | None = None) -> Families:
    """The families table at ``path`` (default: the shipped one): (repository, method_authors) → Family.
    Refused, naming the file, where its columns differ from :data:`COLUMNS`, a family is empty or a
    method has two rows."""
    path = Path(path) if path is not None else FAMILIES_PATH
    return dict(_read(str(path), path.stat().st_mtime_ns if path.exists() else 0))


@functools.lru_cache(maxsize=4)
def _read(path: str, mtime_ns: int) -> Families:
    frame = read_checked_csv(path, COLUMNS, "families CSV", FamilyError)
    if (frame["family"] == "").any():
        row = frame[frame["family"] == ""].iloc[0]
        raise FamilyError(f"{path}: {row['repository']}:{row['method_authors']} has no family")
    twice = frame.duplicated(["repository", "method_authors"])
    if twice.any():
        row = frame[twice].iloc[0]
        raise FamilyError(f"{path}: {row['repository']}:{row['method_authors']} has two rows")
    return {
        (row.repository, row.method_authors): Family(row.family, row.extra_data)
        for row in frame.itertuples(index=False)
    }


def family_of(families: Families, repository: str, method_authors: str) -> Family:
    """The family of one method, or an error saying where to add it."""
    try:
        return families[repository, method_authors]
    except KeyError:
        raise FamilyError(
            f"no family for {repository}:{method_authors!r}: add a row to the families table "
            f"(columns {', '.join(COLUMNS)}; the shipped one is {FAMILIES_PATH})"
        ) from None
