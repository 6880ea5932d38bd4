"""The paper's configurations in miniature: their data and published checkpoints, written small in
the real on-disk formats, and their Snakemake run (tests/test_miniature.py; on CUDA, the
``miniature`` step of benchmarks/gpu_check.sh):

    python tests/miniature.py {paper,seed_papers} WORKDIR [--overlay FILE ...] [SNAKEMAKE ARGUMENT ...]

writes the data under WORKDIR, runs Snakemake there on the configuration's files, its miniature
overlay (tests/configs/<name>_miniature.yaml) and the ``--overlay`` files, prints the run's job
statistics and wall time, and exits with Snakemake's status.

* CIFAR-10: torchvision's ``cifar-10-batches-py`` archive (:func:`fixtures_archives.write_cifar10`);
* ImageNet: an ``ImageFolder`` of two classes, one tiny PNG each per split, which the loader resizes
  and crops to :data:`IMAGENET_SIZE` (an input side is a size: ResNet-50 at 224 px made ImageNet's
  certifications two fifths of the paper miniature's CPU time);
* the published ImageNet ResNet-50 checkpoints a config names, each in its source's layout
  (:mod:`ddrs.models.published`): Cohen's and SmoothAdv's ``{'arch', 'state_dict', 'optimizer',
  'epoch'}`` of ``Sequential(normaliser, DataParallel(net))``, rs4a's bare ``state_dict`` of its
  ``norm`` / ``model`` wrapper.

The files need attributes patched in every process (torchvision's CIFAR-10 md5 sums, ImageNet's
class count and input side): ``tests/workflow_site/sitecustomize.py`` does it from the JSON file
:func:`site_environment` leaves, named by ``DDRS_WORKFLOW_SITE``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml
from fixtures_archives import write_cifar10, write_image_folder
from workflow_helpers import REPO, SNAKEFILE, job_counts

TEST_CONFIGS = REPO / "tests" / "configs"
#: each paper configuration: its files in the order Snakemake reads them, and its miniature overlay
MINIATURES = {
    "paper": (["paper.yaml", "paper_baselines_optimiser.yaml"], "paper_miniature.yaml"),
    "seed_papers": (["seed_papers.yaml"], "seed_papers_miniature.yaml"),
}

SITE = REPO / "tests" / "workflow_site"
IMAGENET_CLASSES = ("n01440764", "n01443537")  # ImageNet's first two synsets, as folder names
IMAGENET_SIZE = 64  # the crop the networks see: ImageNet's is 224; at 32, ResNet-50's last batch-norm
# normalises 2 values per channel (a 1×1 map, 2 images), and a DS² fine-tuning step made its weights NaN
#: the published layout of each ImageNet method of config/paper.yaml (ddrs.models.published.SOURCES)
SOURCE_OF = {"cohen": "cohen", "smoothadv": "smoothadv", "uniform": "rs4a"}


#: the sections that train a model, and the keys of theirs that set a size (lengths, counts, steps)
TRAIN_SECTIONS = (
    "train", "train.*", "datasets.*.train", "datasets.*.train_by_method.*", "datasets.*.train_by_sigma.*.*",
    "datasets.*.ds_fine_tune.*",
)  # fmt: skip
TRAIN_SIZES = (
    "epochs", "warmup_epochs", "lr_step", "lr_milestones", "eval_max", "steps", "warmup", "start_epoch",
    "reweigh_every", "discard_draws", "deferred",
)  # fmt: skip
#: what a miniature overlay may set, as key paths (``*`` one key of any name): sizes, nothing that
#: changes which jobs run (grid_search.n, say, names Appendix B's grid searches, not a size)
SIZE_PATHS = (
    "threads_per_job", "statistics.n_boot", "datasets.*.test_skip", "datasets.*.k", "datasets.*.k_by_method.*.*",
    "certify.n0", "certify.n", "optimize_sigma.k", "optimize_sigma.n0", "grid_search.budget",
    "sun2024.gradient_norm_skip", *(f"{section}.{key}" for section in TRAIN_SECTIONS for key in TRAIN_SIZES),
)  # fmt: skip


def leaves(section: dict, above: tuple[str, ...] = ()):
    """The key path of every leaf of a YAML mapping (a list is one leaf)."""
    for key, value in section.items():
        if isinstance(value, dict):
            yield from leaves(value, (*above, str(key)))
        else:
            yield (*above, str(key))


def matches(path: tuple[str, ...], patterns: tuple[str, ...]) -> bool:
    """Whether ``path`` is one of the key paths ``patterns`` (a σ key such as "0.25" is one key, dots and all)."""
    return any(
        len(parts) == len(path) and all(part in ("*", key) for part, key in zip(parts, path, strict=True))
        for parts in (pattern.split(".") for pattern in patterns)
    )


def is_size(path: tuple[str, ...]) -> bool:
    """Whether ``path`` is one of :data:`SIZE_PATHS`."""
    return matches(path, SIZE_PATHS)


def config_files(name: str, *, overlay: bool = True) -> list[Path]:
    """The ``--configfile`` files of the paper configuration ``name``, with its miniature overlay or without."""
    files, miniature = MINIATURES[name]
    return [REPO / "config" / file for file in files] + ([TEST_CONFIGS / miniature] if overlay else [])


def merged(paths: list[Path]) -> dict:
    """The configuration Snakemake reads from ``--configfile`` ``paths``: each file updates the ones before."""
    from snakemake.utils import update_config

    config: dict = {}
    for path in paths:
        update_config(config, yaml.safe_load(Path(path).read_text()))
    return config


def snakemake(workdir: Path, files: list[Path], *args: str, env: dict[str, str] | None = None):
    """``snakemake -s <repo>/Snakefile -d workdir ARGS --configfile FILES`` in ``workdir``, with ``env`` over this
    process's environment and this interpreter's venv first on PATH."""
    environment = dict(os.environ, **(env or {}))
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment.get('PATH', '')}"
    command = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "-d", str(workdir), *args]
    command += ["--configfile", *map(str, files)]
    return subprocess.run(command, capture_output=True, text=True, cwd=workdir, env=environment, timeout=6000)


def run(name: str, workdir: Path, *args: str, overlays: list[Path] = ()) -> tuple[subprocess.CompletedProcess, dict]:
    """Write the miniature of ``name`` under ``workdir`` and run Snakemake on it with ``args``; return
    the run and the environment its jobs had."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    env = write(workdir, merged(config_files(name, overlay=False)))
    return snakemake(workdir, [*config_files(name), *map(Path, overlays)], *args, env=env), env


def write(workdir: Path, config: dict, cifar10_per_batch: int = 2) -> dict[str, str]:
    """Write the data (and the published checkpoints) ``config`` reads under ``workdir``; return the
    environment a Snakemake run of it needs."""
    data = Path(workdir) / config.get("data_root", "data")
    archive = write_cifar10(data, per_batch=cifar10_per_batch)
    patches = {"cifar10": {key: archive[key] for key in ("train_list", "test_list", "meta")}}
    imagenet = config["datasets"].get("imagenet")
    if imagenet is not None:
        write_image_folder(data / "imagenet", classes=IMAGENET_CLASSES, per_class=1, size=(8, 8))
        patches["imagenet"] = {"classes": len(IMAGENET_CLASSES), "size": IMAGENET_SIZE}
        _write_published(Path(workdir), imagenet["checkpoints"])
    return site_environment(workdir, patches)


def site_environment(workdir: Path, patches: dict) -> dict[str, str]:
    """The environment under which every process of a run has ``patches`` applied
    (tests/workflow_site/sitecustomize.py), their JSON file written under ``workdir``."""
    path = Path(workdir) / "workflow_site.json"
    path.write_text(json.dumps(patches))
    python_path = os.pathsep.join(filter(None, [str(SITE), os.environ.get("PYTHONPATH")]))
    return {"DDRS_WORKFLOW_SITE": str(path), "PYTHONPATH": python_path}


def _write_published(workdir: Path, checkpoints: dict[str, dict[str, str]]) -> None:
    """One ResNet-50 per published layout, its file linked under every σ's path the config names."""
    import torch

    for method, paths in checkpoints.items():
        files = [workdir / path for path in paths.values()]
        for file in files:
            file.parent.mkdir(parents=True, exist_ok=True)
        torch.save(_published_content(SOURCE_OF[method]), files[0])
        for file in files[1:]:
            os.link(files[0], file)


def _published_content(source: str):
    """A seeded ResNet-50 of the ImageFolder's classes in ``source``'s file layout, batch-norm
    statistics as after training."""
    import torch
    from torch import nn

    from ddrs.data import DATASETS
    from ddrs.models import ARCHS

    torch.manual_seed(0)
    info = DATASETS["imagenet"]
    net = ARCHS["resnet50"].build(info.input_shape, len(IMAGENET_CLASSES))
    for module in net.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    weights = net.state_dict()
    if source == "rs4a":
        return {
            "norm.module.mu": torch.tensor(info.mean).view(-1, 1, 1),
            "norm.module.log_sig": torch.tensor(info.std).log().view(-1, 1, 1),
            **{f"model.module.{key}": value for key, value in weights.items()},
        }
    optimizer = torch.optim.SGD(net.parameters(), lr=0.001, momentum=0.9, weight_decay=1e-4)
    return {
        "epoch": 90,
        "arch": "resnet50",
        "state_dict": {f"1.module.{key}": value for key, value in weights.items()},
        "optimizer": optimizer.state_dict(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Every other argument goes to Snakemake: targets, --cores, --profile, --config, ...",
        allow_abbrev=False,
    )
    parser.add_argument("name", choices=sorted(MINIATURES))
    parser.add_argument("workdir", type=lambda path: Path(path).resolve(), help="a new or empty folder")
    parser.add_argument(
        "--overlay", action="append", default=[], type=lambda path: Path(path).resolve(), help="a config file read last"
    )
    arguments, snakemake_args = parser.parse_known_args(argv)
    if arguments.workdir.exists() and any(arguments.workdir.iterdir()):
        parser.error(f"{arguments.workdir} is not empty: the miniature writes its data and results in a new folder")
    began = time.perf_counter()
    result, _ = run(arguments.name, arguments.workdir, *snakemake_args, overlays=arguments.overlay)
    seconds = time.perf_counter() - began
    output = result.stdout + result.stderr
    print(output[-20000:] if result.returncode else "")
    counts = job_counts(output) if "Job stats:" in output else {}
    jobs = counts.pop("total", 0)
    print(f"miniature {arguments.name}: {jobs} jobs of {len(counts)} rules, exit {result.returncode}, {seconds:.0f} s")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
