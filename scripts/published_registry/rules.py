"""What a published log's path says: one small table per repository (DESIGN.md, "Published logs").

Authors name their logs by folder, not by content: ``noise_0.50/test/sigma_0.50`` (Cohen et al.),
``consistency/cohen/num_2/lbd_10.0/eta_0.5/noise_0.25_3`` (Jeong & Shin), ``gaussian/noise_0.5.tsv``
(Sun et al.). For each repository, :data:`REPOSITORIES` holds

- ``paths``: path patterns (``re.fullmatch``; named groups) → dataset, σ (certification noise),
  training noise, architecture, run or seed, split, and the method as its authors name it;
- ``methods``: the authors' method names → our method registry's name (``ddrs.methods.METHODS``), or
  ``external`` for a method we do not train;
- ``settings``: the certification settings the repository states (N, N0, α, skip); every matching
  rule applies in order, a later one overriding the keys it sets;
- ``tables``: the tables and figures of the repository's paper that a log backs; every match adds.

Each entry cites the file of the repository (at the pinned commit in the registry) or the paper
section its convention comes from. A value a repository does not state stays empty.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass

from ddrs.published.log_registry import EXTERNAL

#: the fields a path rule fills (the registry's "what it is" columns)
PARSED_FIELDS = ("dataset", "sigma", "arch", "run", "method_authors", "noise", "split")
#: the certification settings a settings rule fills
SETTING_FIELDS = ("n", "n0", "alpha", "skip")
#: Cohen et al.'s certify.py defaults, kept by every repository below (``--N0 100 --N 100000 --alpha 0.001``)
COHEN_DEFAULTS = {"n": 100000, "n0": 100, "alpha": 0.001}

SIGMA = r"(?P<sigma>\d+(?:\.\d+)?)"
NOISE = r"(?P<noise>\d+(?:\.\d+)?)"


@dataclass(frozen=True)
class PathRule:
    """A path layout: ``pattern``'s named groups fill fields; ``fields`` adds constants or ``{group}`` templates."""

    pattern: str
    fields: Mapping[str, str]
    source: str


@dataclass(frozen=True)
class SettingRule:
    """Certification settings stated for the logs whose path matches ``pattern``."""

    pattern: str
    settings: Mapping[str, int | float]
    source: str


@dataclass(frozen=True)
class TableRule:
    """The paper tables/figures that the logs whose path matches ``pattern`` back."""

    pattern: str
    table: str
    source: str


@dataclass(frozen=True)
class Repository:
    """One repository's parse rules, and the short key of the paper its logs back."""

    name: str
    paper: str
    paths: tuple[PathRule, ...]
    methods: tuple[tuple[str, str], ...]
    settings: tuple[SettingRule, ...] = ()
    tables: tuple[TableRule, ...] = ()


# --- locuslab/smoothing (Cohen et al. 2019) ---------------------------------------------------------

COHEN = Repository(
    name="locuslab/smoothing",
    paper="cohen2019",
    paths=(
        PathRule(
            rf"data/certify/(?P<dataset>cifar10|imagenet)/(?P<arch>resnet\d+)/noise_{NOISE}/(?P<split>test|train)"
            rf"/sigma_{SIGMA}",
            {"method_authors": "gaussian"},
            "experiments.MD: certify.py ... data/certify/<dataset>/<arch>/noise_<train σ>/test/sigma_<σ>; the paper "
            "trains with Gaussian data augmentation (§3.3, App. F)",
        ),
    ),
    methods=((r"gaussian", "cohen"),),
    settings=(
        SettingRule(r".*", COHEN_DEFAULTS, "README.md: certify ... N0=100, N=100000 and alpha=0.001"),
        SettingRule(r"data/certify/imagenet/.*/test/.*", {"skip": 100}, "experiments.MD: imagenet ... --skip 100"),
        SettingRule(r"data/certify/cifar10/.*/test/.*", {"skip": 20}, "experiments.MD: cifar10 ... --skip 20"),
    ),
    tables=(
        TableRule(
            r"data/certify/imagenet/resnet50/noise_(0\.25|0\.50|1\.00)/test/sigma_\1",
            "Table 1; Table 2; Figure 6",
            "code/analyze.py: vary_noise_imagenet (paper App. E Table 2, Figure 6); Table 1 picks the best σ",
        ),
        TableRule(
            r"data/certify/cifar10/resnet110/noise_(0\.12|0\.25|0\.50|1\.00)/test/sigma_\1",
            "Table 3; Figure 6",
            "code/analyze.py: vary_noise_cifar10 (paper App. E Table 3, Figure 6)",
        ),
        TableRule(
            r"data/certify/imagenet/resnet50/noise_0\.50/test/sigma_0\.50",
            "Figure 14",
            "code/analyze.py: high_prob (paper App. H.2, Figure 14)",
        ),
        TableRule(
            r"data/certify/(imagenet/resnet50|cifar10/resnet110)/noise_(0\.25|0\.50|1\.00)/test/sigma_0\.50",
            "Figure 15",
            "code/analyze.py: vary_train_noise_{cifar,imagenet}_050 (paper App. H.3, Figure 15)",
        ),
    ),
)

# --- Hadisalman/smoothing-adversarial (Salman et al. 2019) -------------------------------------------

_SALMAN_TAIL = rf"noise_{NOISE}/(?P<split>test)/sigma_{SIGMA}"
_SALMAN_RUN = r"(?:(?P<run>best_models)/)?"

SALMAN = Repository(
    name="Hadisalman/smoothing-adversarial",
    paper="salman2019",
    paths=(
        PathRule(
            rf"data/certify/best_models/(?P<dataset>cifar10)/(?P<method_authors>cohen)/(?P<arch>resnet110)/{_SALMAN_TAIL}",
            {"run": "best_models"},
            "code/analyze.py (best_models/cifar10/cohen: Cohen et al.'s models certified on the full test set)",
        ),
        PathRule(
            rf"data/certify/{_SALMAN_RUN}(?P<dataset>cifar10)/(?:ours\w*/cifar10/)?(?P<method_authors>.+)/cifar10"
            rf"/(?P<arch>resnet110)/{_SALMAN_TAIL}",
            {},
            "README.md: model dirs <attack>_<k>steps[_multiNoiseSamples/<m>-multitrain]/eps_<255ε>/cifar10/resnet110/"
            "noise_<σ> (jobs.yaml names); best_models/ holds the models of analysis/radii_to_best_models",
        ),
        PathRule(
            rf"data/certify/{_SALMAN_RUN}(?P<dataset>imagenet)/(?P<attack>(?:PGD|DDN)_\d+steps?)/(?:imagenet/)?"
            rf"(?P<eps>eps_\d+)/(?P<arch>resnet50)/{_SALMAN_TAIL}",
            {"method_authors": "{attack}/{eps}"},
            "README.md: imagenet models <attack>_<k>step(s)/eps_<255ε>/resnet50/noise_<σ>",
        ),
        PathRule(
            rf"data/certify/{_SALMAN_RUN}(?P<dataset>imagenet)/(?P<method_authors>replication)/(?P<arch>resnet50)"
            rf"/{_SALMAN_TAIL}",
            {},
            "code/analyze.py: imagenet/replication (their retraining of Cohen et al.'s Gaussian models)",
        ),
        PathRule(
            rf"data_cohen/certify/(?P<dataset>cifar10|imagenet)/(?P<arch>resnet\d+)/noise_{NOISE}/(?P<split>test|train)"
            rf"/sigma_{SIGMA}",
            {"method_authors": "data_cohen"},
            "data_cohen/: Cohen et al.'s logs in locuslab/smoothing's layout",
        ),
    ),
    methods=(
        (r"cohen|replication|data_cohen", "cohen"),
        (r".*(self_training|finetune|baseAttackExp).*", EXTERNAL),  # extra data, pre-training, base-classifier attack
        (r"PGD_\d+steps?(_multiNoiseSamples/\d+-multitrain)?/eps_\d+", "smoothadv"),  # ours: PGD only (DDN: external)
    ),
    settings=(
        SettingRule(r".*", COHEN_DEFAULTS, "README.md: certify.py ... --alpha 0.001 --N0 100 --N 100000"),
        SettingRule(
            r"data/certify/cifar10/.*",
            {"skip": 20},
            "README.md: certify.py cifar10 ... --skip 20 gives 'these results' (a data/certify/cifar10/ log)",
        ),
    ),
)

# --- jh-jeong/smoothing-consistency (Jeong & Shin 2020), also re-shipped by jh-jeong/smoothmix ------

_RUN = r"(?:_(?P<run>\d+(?:_o)?))?"
_JEONG_SOURCE = "EXPERIMENTS.MD: certify.py <dataset> logs/<dataset>/<method cfg>/noise_<σ> ... test/certify/..."

JEONG_PATHS = (
    PathRule(
        rf"data/certify/(?P<dataset>mnist)/(?P<method_authors>.+?)/noise_{SIGMA}{_RUN}",
        {"arch": "lenet", "noise": "{sigma}", "split": "test"},
        _JEONG_SOURCE + " (mnist lenet; trained at the σ it is certified with; _<n>: run)",
    ),
    PathRule(
        rf"data/certify/(?P<dataset>cifar10)/(?P<method_authors>.+?)/(?P<arch>cifar_[a-z0-9]+)/noise_{SIGMA}{_RUN}",
        {"noise": "{sigma}", "split": "test"},
        _JEONG_SOURCE + " (logs/<dataset>/<cfg>/noise_<σ>/<arch>)",
    ),
    PathRule(
        rf"data/certify/(?P<dataset>imagenet)/(?P<method_authors>.+?)/noise_{SIGMA}{_RUN}",
        {"noise": "{sigma}", "split": "test"},
        _JEONG_SOURCE,
    ),
)
#: README.md's table of train_*.py scripts: Gaussian (cohen), SmoothAdv (salman), Stability (stab), MACER, ours
JEONG_METHODS = (
    (r"cohen", "cohen"),
    (r"salman/.*", "smoothadv"),
    (r"stab/.*", "stability"),
    (r"macer.*", "macer"),
    (r"consistency/cohen/.*", "consistency"),
    (r"consistency/salman_.*", "smoothadv_consistency"),
)
JEONG_SETTINGS = (
    SettingRule(r".*", COHEN_DEFAULTS, "README.md: certify ... N0=100, N=100000, alpha=0.001"),
    SettingRule(r"data/certify/mnist/.*", {"skip": 1}, "EXPERIMENTS.MD: mnist ... --N=100000 --skip=1"),
)

_MNIST = "data/certify/mnist"
_HEADLINE = (
    r"cohen|salman/pgd_255\.0_10_10/num_4|stab/lbd_2|macer_deferred30/num_16/lbd_(16|6)\.0/gamma_8\.0/beta_16\.0"
    r"|consistency/cohen/num_2/lbd_10\.0/eta_0\.5(?=/noise_0\.25)|consistency/cohen/num_2/lbd_5\.0/eta_0\.5"
    r"(?=/noise_(0\.50|1\.00))|consistency/salman_255\.0_10_10/num_4/lbd_1\.0/eta_0\.5"
)

JEONG = Repository(
    name="jh-jeong/smoothing-consistency",
    paper="jeong2020",
    paths=JEONG_PATHS,
    methods=JEONG_METHODS,
    settings=JEONG_SETTINGS,
    tables=(
        TableRule(
            rf"{_MNIST}/({_HEADLINE})/noise_[\d.]+_\d+",
            "supp. Table 2; supp. Table 3",
            "EXPERIMENTS.MD (the MNIST configurations); supplement App. C: Table 3 is the mean ± std over 5 seeds "
            "of Table 2's results",
        ),
        TableRule(
            rf"{_MNIST}/consistency/cohen/num_(2|4|8)/lbd_5\.0/eta_0\.5/noise_[\d.]+_0",
            "supp. Table 5",
            "supplement App. D: Table 5 (Figure 4(b)) varies m at λ = 5",
        ),
        TableRule(
            rf"{_MNIST}/consistency/cohen/num_2/lbd_(1|5|15|20|25|30|50)\.0/eta_0\.5/noise_1\.00_0",
            "supp. Table 6",
            "supplement App. D: Table 6 (Figure 4(c)) varies λ at σ = 1.0",
        ),
        TableRule(
            rf"{_MNIST}/consistency/cohen/num_2/lbd_(5|20)\.0/eta_0\.5/noise_1\.00_0",
            "supp. Table 4",
            "supplement App. D: Table 4 (Figure 4(a)), cross-entropy rows λ = 5, 20",
        ),
    ),
)

# --- eth-sri/acr-weakness (Sun et al. 2024) -----------------------------------------------------------

SUN = Repository(
    name="eth-sri/acr-weakness",
    paper="sun2024",
    paths=(
        PathRule(
            rf"data/certify/(?P<dataset>cifar10)/(?P<method_authors>[a-z]+)/noise_{SIGMA}(?:\.tsv)?",
            {"noise": "{sigma}", "split": "test"},
            "README.md: 'the certification results used in our paper in the folder data/certify' (Table 2: one model "
            "per method, trained and certified at σ)",
        ),
        PathRule(
            rf"data/certify/(?P<dataset>imagenet)/(?P<method_authors>[a-z]+)/noise_{SIGMA}(?:\.tsv)?",
            {"noise": "{sigma}", "split": "test"},
            "README.md: data/certify",
        ),
        PathRule(
            rf"test/certify/(?P<dataset>cifar10)/(?P<cfg>.+)/(?P<run>\d+)/noise_{SIGMA}\.tsv",
            {"method_authors": "ours {cfg}", "noise": "{sigma}", "arch": "cifar_resnet110", "split": "test"},
            "script/cifar10/certify_<σ>.sh: test/certify/cifar10/<cfg>/<id>/noise_<σ>.tsv from "
            "logs/cifar10/<cfg>/noise_<σ>/cifar_resnet110/<id>",
        ),
        PathRule(
            rf"test/certify/(?P<dataset>imagenet)/(?P<cfg>.+)/(?P<run>\d+)/noise_{SIGMA}\.tsv",
            {"method_authors": "ours {cfg}", "noise": "{sigma}", "arch": "resnet50", "split": "test"},
            "script/imagenet/certify_<σ>.sh: logs/imagenet/<cfg>/noise_<σ>/resnet50/<id>",
        ),
    ),
    methods=(
        (r"gaussian", "cohen"),
        (r"smoothadv", "smoothadv"),
        (r"macer", "macer"),
        (r"consistency", "consistency"),
        (r"ours.*", "easy_focus"),  # README.md: "Our main training code is code/train.py" (§5 of the paper)
    ),
    settings=(
        SettingRule(r".*", COHEN_DEFAULTS, "code/certify.py defaults (--N0 100 --N 100000 --alpha 0.001)"),
        # ImageNet: --skip=1, but certify.py keeps only the inputs of test/certify/imagenet/indexes1.txt (not
        # in the repository), so the stride is not stated
        SettingRule(r".*/cifar10/.*", {"skip": 1}, "script/cifar10/certify_<σ>.sh: --N=100000 --skip=1"),
    ),
    tables=(
        TableRule(
            r"data/certify/cifar10/[a-z]+/noise_[\d.]+\.tsv",
            "Table 2; Figure 6",
            "paper §6 Table 2 and Figure 6 (CIFAR-10, every method × σ ∈ {0.25, 0.5, 1.0})",
        ),
        TableRule(r"data/certify/cifar10/ours/noise_[\d.]+\.tsv", "Table 3", "paper Table 3: the full method's row"),
    ),
)

# --- jh-jeong/smoothmix (Jeong et al. 2021) -----------------------------------------------------------

SMOOTHMIX = Repository(
    name="jh-jeong/smoothmix",
    paper="jeong2021_smoothmix",
    paths=(
        PathRule(
            rf"data/certify/(?P<dataset>mnist)/(?P<method_authors>smoothmix/smix_[^/]+/tau_[^/]+/num_\d+)/(?P<run>\d+)"
            rf"/noise_{SIGMA}",
            {"arch": "lenet", "noise": "{sigma}", "split": "test"},
            "EXPERIMENTS.MD: certify.py mnist logs/mnist/smix_<α>_<steps>_m<mix_step>/eta_<η>/num_<m>/noise_<σ>/"
            "lenet/<id> (the folder 'tau' holds η)",
        ),
        PathRule(
            rf"data/certify/ablation/(?P<study>\w+)/(?P<cfg>smix_[^/]+/tau_[^/]+/num_\d+)/(?P<run>\d+)/noise_{SIGMA}",
            {
                "dataset": "mnist",
                "method_authors": "smoothmix ablation {study}: {cfg}",
                "arch": "lenet",
                "noise": "{sigma}",
                "split": "test",
            },
            "data/certify/ablation/: no dataset folder; the logs' labels are MNIST's test labels (7, 2, 1, 0, 4, …) "
            "and the configurations are EXPERIMENTS.MD's MNIST σ = 1.0 ones",
        ),
        PathRule(
            rf"data/certify/(?P<dataset>cifar10)/(?P<method_authors>smoothmix)/noise_{SIGMA}(?P<adv>_adv)?",
            {"method_authors": "smoothmix{adv}", "arch": "cifar_resnet110", "noise": "{sigma}", "split": "test"},
            "EXPERIMENTS.MD: SmoothMix (CIFAR-10) cifar_resnet110, with and without the one-step adversary (_adv)",
        ),
        *JEONG_PATHS,
    ),
    methods=JEONG_METHODS,
    settings=(
        SettingRule(r".*", COHEN_DEFAULTS, "README.md: certify ... N0=100, N=100000, alpha=0.001"),
        SettingRule(
            r"data/certify/(mnist|cifar10|ablation)/.*", {"skip": 1}, "EXPERIMENTS.MD: mnist, cifar10 ... --skip=1"
        ),
    ),
)

# --- alinlab/smoothing-catrs (Jeong et al. 2023) ------------------------------------------------------

_CATRS_README = "README.md: 'Certification results for our experiments can be found in data/*'"

CATRS = Repository(
    name="alinlab/smoothing-catrs",
    paper="jeong2023_catrs",
    paths=(
        PathRule(
            rf"data/(?P<dataset>cifar10)/noise_{NOISE}/(?P<method_authors>[^/]+)/noi(?:se|st)_{SIGMA}\.tsv",
            {"arch": "cifar_resnet110", "split": "test"},
            _CATRS_README + "; EXPERIMENTS.MD: every CIFAR-10 method trains cifar_resnet110 (noist_: a typo)",
        ),
        PathRule(
            rf"data/(?P<dataset>cifar100|fmnist)/noise_{NOISE}/(?P<method_authors>[^/]+)/noi(?:se|st)_{SIGMA}\.tsv",
            {"split": "test"},
            _CATRS_README,
        ),
        PathRule(
            rf"data/(?P<dataset>mnist)/noise_{NOISE}/noise_{SIGMA}\.tsv",
            {"method_authors": "cat-rs", "split": "test"},
            _CATRS_README + " (no method folder: CAT-RS, as the cat-rs folders of the other datasets)",
        ),
        PathRule(
            rf"data/(?P<dataset>imagenet)/noise_{SIGMA}\.tsv",
            {"method_authors": "cat-rs", "noise": "{sigma}", "arch": "resnet50", "split": "test"},
            _CATRS_README + "; EXPERIMENTS.MD trains CAT-RS on imagenet resnet50 at σ = 1.0 only",
        ),
        PathRule(
            r"data/cifar10c/severity_(?P<severity>\d)/(?P<method_authors>[^/]+)/(?P<corruption>\w+)\.tsv",
            {"dataset": "cifar10c-{corruption}-s{severity}", "split": "test"},
            _CATRS_README + " (CIFAR-10-C, one severity; σ is not stated)",
        ),
        PathRule(
            r"data/cifar10c/(?P<method_authors>[^/]+)/(?P<corruption>\w+)\.tsv",
            {"dataset": "cifar10c-{corruption}", "split": "test"},
            _CATRS_README + " (CIFAR-10-C, all five severities in one stream; σ is not stated)",
        ),
        PathRule(
            r"data/mnistc/(?P<method_authors>[^/]+)/(?P<corruption>\w+)\.tsv",
            {"dataset": "mnistc-{corruption}", "sigma": "0.25", "noise": "0.25", "arch": "lenet", "split": "test"},
            "code/certify_c.py: Smooth(base_classifier, 10, 0.25) on MNIST-C; EXPERIMENTS.MD: the "
            "logs/mnist/catrs/.../noise_0.25/lenet model",
        ),
    ),
    methods=(
        (r"cohen", "cohen"),
        (r"salman", "smoothadv"),
        (r"macer", "macer"),
        (r"consistency", "consistency"),
        (r"stab", "stability"),
    ),
    settings=(
        SettingRule(r".*", COHEN_DEFAULTS, "README.md: certify ... N0=100, N=100000, alpha=0.001"),
        SettingRule(
            r"data/(cifar10|mnistc)/.*", {"skip": 1}, "EXPERIMENTS.MD: certify.py cifar10, certify_c.py ... --skip=1"
        ),
    ),
)

#: every repository with parse rules, by ``owner/name``
REPOSITORIES: dict[str, Repository] = {repo.name: repo for repo in (COHEN, SALMAN, JEONG, SUN, SMOOTHMIX, CATRS)}


class _Blank(dict):
    """A template's mapping: a group the path left empty fills as ""."""

    def __missing__(self, key: str) -> str:
        return ""


def canonical_number(text: str) -> str:
    """``0.50`` → ``0.5``, ``1.00`` → ``1.0``: one spelling per σ, whatever the folder wrote."""
    return str(float(text)) if text else ""


def parse_path(repository: Repository, path: str) -> dict[str, str] | None:
    """The fields that ``path`` says, by the first path rule that matches it; None when none does."""
    for rule in repository.paths:
        match = re.fullmatch(rule.pattern, path)
        if match is None:
            continue
        groups = _Blank({key: value for key, value in match.groupdict().items() if value is not None})
        values = {key: groups[key] for key in PARSED_FIELDS}
        for key, template in rule.fields.items():
            values[key] = string.Formatter().vformat(template, (), groups)
        for key in ("sigma", "noise"):
            values[key] = canonical_number(values[key])
        return values
    return None


def our_method(repository: Repository, method_authors: str) -> str:
    """Our method registry's name for the authors' ``method_authors``, or :data:`EXTERNAL`."""
    for pattern, method in repository.methods:
        if re.fullmatch(pattern, method_authors):
            return method
    return EXTERNAL


def settings_for(repository: Repository, path: str) -> dict[str, str]:
    """N, N0, α and skip that the repository states for ``path`` ("" where it states none)."""
    values = dict.fromkeys(SETTING_FIELDS, "")
    for rule in repository.settings:
        if re.fullmatch(rule.pattern, path):
            values.update({key: str(value) for key, value in rule.settings.items()})
    return values


def tables_for(repository: Repository, path: str) -> str:
    """The paper tables/figures ``path`` backs, ``; ``-separated in rule order ("" when none is known)."""
    tables: list[str] = []
    for rule in repository.tables:
        if re.fullmatch(rule.pattern, path):
            tables += [table for table in rule.table.split("; ") if table not in tables]
    return "; ".join(sorted(tables, key=_table_order))


def _table_order(table: str) -> tuple:
    """Main text before supplement, tables before figures, then by number: ``Table 2`` < ``Table 10`` < ``Figure 6``."""
    match = re.fullmatch(r"(supp\. )?(Table|Figure) (\d+)(.*)", table)
    if match is None:
        return (2, table)
    return (bool(match[1]), match[2] == "Figure", int(match[3]), match[4])
