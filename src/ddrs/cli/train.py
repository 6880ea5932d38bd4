"""``ddrs train``: train (or resume, or fine-tune) a smoothed classifier with fixed or data-dependent σ.

Every field of :class:`~ddrs.training.TrainConfig` is a flag (``--weight-decay`` for
``weight_decay``) and a YAML key (``--config FILE.yaml``, or ``-`` for standard input); every
hyper-parameter of a registered method is a flag ``--<method>-<field>`` (underscores become
hyphens: ``--easy-focus-start-epoch``) and a key of the YAML section named after the method.
Flags override the file, the file overrides the defaults. ``--help`` folds the methods' own
options and those of data, device and speed away: ``--help-method METHOD`` shows one method's,
``--help-all`` every option.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing

import yaml

from ddrs.data import DATASETS
from ddrs.methods import METHODS
from ddrs.training.config import CHOICES as OPTION_CHOICES
from ddrs.training.config import SPEED_FIELDS, TrainConfig, read_yaml

#: the group of TrainConfig's fields that ``--help`` folds away with the methods' own options
FOLDED = "data, device and speed"
#: TrainConfig's fields in the groups ``ddrs train --help`` shows them in (a test checks each is in one)
GROUPS = {
    "the run": ("dataset", "arch", "method", "sigma", "train_mode", "epochs", "init", "replicate", "seed"),
    "optimiser and schedule (Cohen et al.'s train.py)": (
        *("batch_size", "lr", "momentum", "nesterov", "weight_decay", "lr_step", "lr_gamma", "lr_milestones"),
        *("lr_drop", "noise_batching"),
    ),
    "Algorithm 2 (DDRS §3.6; train-mode ds)": (
        *("warmup_epochs", "k", "n", "sigma_lr", "min_sigma", "sigma_objective", "sigma_clamp", "c_a", "c_a_n0"),
        "sigma_model_mode",
    ),
    FOLDED: (
        *("uniform_convention", "data_root", "augment", "eval_max", "device", "precision", "memory_format"),
        *("feed", "num_workers", "pin_memory", "activation_checkpoints"),
    ),
}
HELP = {
    "dataset": f"dataset: {', '.join(DATASETS)}",
    "arch": "architecture (mlp, cnn, resnet18, resnet50, …; an unknown one is refused with the list)",
    "method": f"training method: {', '.join(METHODS)}",
    "sigma": "σ₀: the fixed σ (fs) or every example's initial σ (ds); the half-width λ for uniform noise",
    "train_mode": "fs = fixed σ, ds = data-dependent σ per example (DDRS Algorithm 2)",
    "epochs": "training epochs (Cohen et al.: 90; DDRS CIFAR-10: 200)",
    "init": "fine-tune from this ddrs checkpoint (same arch and dataset)",
    "replicate": "the training run: r > 0 draws every training seed (weights, data order, augmentation, noise) "
    "from its own seed, on the same data split; 0 = the single run of earlier versions",
    "seed": "seed of the data split and, for replicate 0, of every training stream",
    "batch_size": "inputs per SGD step",
    "lr": "SGD learning rate",
    "momentum": "SGD momentum",
    "nesterov": "Nesterov momentum",
    "weight_decay": "SGD weight decay",
    "lr_step": "multiply the lr by --lr-gamma every this many epochs",
    "lr_gamma": "the lr's factor at each decay",
    "lr_milestones": "epochs at which the lr is multiplied by --lr-gamma (replaces --lr-step)",
    "lr_drop": "the epoch a decay takes effect in: paper = at its milestone; late = one epoch after it "
    "(Jeong & Shin's scheduler.step(epoch) after each epoch); early = one epoch before it (MACER's "
    "scheduler.step() before each epoch, since torch 1.1)",
    "noise_batching": "whole = batch_size inputs per SGD step, each with its m noisy copies; split = the authors': "
    "every batch cut into m chunks, one step each (for the methods whose authors do so)",
    "warmup_epochs": "epochs with K = 0 (fixed σ) before Algorithm 1 runs (paper CIFAR-10: 50)",
    "k": "Algorithm 1 steps per batch (paper: 1)",
    "n": "Monte Carlo draws per Algorithm 1 step (paper: 1; MACER: 8)",
    "sigma_lr": "Algorithm 1 step size α (paper: 1e-4)",
    "min_sigma": "lower bound on σᵢ",
    "sigma_objective": "Algorithm 1's objective: 'released' (the authors' code) or 'fixed_class' (Eq. 2/3)",
    "sigma_clamp": "clamp of E_A, E_B before Φ⁻¹ (default: the objective's, 0.02 / 1e-6)",
    "c_a": "with fixed_class, c_A for Algorithm 1: 'clean' = argmax f(x), 'smoothed' = smoothed prediction",
    "c_a_n0": "with --c-a smoothed: noisy draws that decide c_A",
    "sigma_model_mode": "the model's mode during Algorithm 1: eval = batch-norm on running statistics; "
    "train = batch statistics of the noisy batch, updating the running ones (the DDRS training scripts)",
    "uniform_convention": "read --sigma for uniform noise as the half-width λ or as Yang et al.'s std (λ = σ√3)",
    "data_root": "where datasets are downloaded, and ImageNet's ImageFolder lies",
    "augment": "the dataset's training augmentation (random crops and flips on CIFAR-10 and ImageNet)",
    "eval_max": "test inputs scored for the per-epoch log",
    "device": "auto, cpu, cuda, cuda:1, …",
    "precision": "forward and backward passes: fp32, or autocast to bf16 / fp16 (faster on GPUs)",
    "memory_format": "layout of the model and its input batches (auto: channels_last on CUDA, contiguous elsewhere)",
    "feed": "loader = a DataLoader augmenting image by image (torchvision); device = the training split held on the "
    "training device, augmented there per epoch; auto = device for every dataset that fits (all but imagenet)",
    "num_workers": "DataLoader worker processes, kept across epochs (augmentation does not depend on them); "
    "the device feed uses them once, to read the split",
    "pin_memory": "page-locked batches for asynchronous copies to the GPU (default: on CUDA only)",
    "activation_checkpoints": "cut the training forward pass at this many places; every run but the last keeps "
    "only its input and is recomputed in backward: the same step in less memory, batch-norm included",
}
CHOICES = {"method": tuple(METHODS), **OPTION_CHOICES}


#: the value a flag takes, as its help names it: by field for the names and paths, else by type
METAVARS = {"dataset": "NAME", "arch": "NAME", "method": "METHOD", "init": "CHECKPOINT", "data_root": "DIR"}
TYPE_METAVARS = {int: "INT", float: "FLOAT", str: "TEXT"}


def _flag_kwargs(field: dataclasses.Field, annotation, help_text: str) -> dict:
    """argparse keyword arguments for one config field; every default is None (= not given)."""
    kwargs: dict = {"default": None, "help": help_text}
    if field.default is not dataclasses.MISSING and field.default is not None:
        kwargs["help"] = f"{kwargs['help']} (default: {field.default})".lstrip()
    base = next((t for t in typing.get_args(annotation) if t is not type(None)), annotation)
    if base is bool:  # bool or bool | None: --flag / --no-flag
        kwargs["action"] = argparse.BooleanOptionalAction
        return kwargs
    if typing.get_origin(annotation) is list:
        kwargs.update(nargs="*", type=int, metavar="INT")
    else:
        kwargs.update(type=base, metavar=METAVARS.get(field.name, TYPE_METAVARS.get(base)))
    if field.name in CHOICES:
        kwargs.update(choices=CHOICES[field.name], metavar=METAVARS.get(field.name))
    return kwargs


class _Help(argparse.Action):
    """Print the help with the folded option groups (one per method, and :data:`FOLDED`) shown as
    ``show`` says, and exit: ``--help`` (none), ``--help-all`` (all) or ``--help-method METHOD``."""

    def __init__(self, option_strings, dest, folded=None, show=None, **kwargs) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.folded, self.show = folded, show

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        shown = {values} if isinstance(values, str) else self.show
        for name, group in self.folded.items():
            if name not in shown:
                parser._action_groups.remove(group)  # the parser exits after printing
        parser.print_help()
        parser.exit()


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train a smoothed classifier with one of the training methods, at fixed or data-dependent σ",
        description=__doc__,
        usage="%(prog)s --out CHECKPOINT [--config FILE.yaml] [--OPTION VALUE ...]",
        add_help=False,
    )
    parser.add_argument("--config", metavar="FILE.yaml", help="YAML file of training options (keys = option names)")
    parser.add_argument("--out", required=True, help="checkpoint to write (<out>.partial while training)")
    parser.add_argument("--log", help="per-epoch CSV log")
    parser.add_argument("--sigma-table", help="TSV of the per-example σ table (idx, sigma), rewritten every epoch")
    parser.add_argument(
        "--speed",
        metavar="JSON",
        help="options that change only how fast the model trains, as a JSON or YAML mapping over --config's: "
        f"{', '.join(sorted(SPEED_FIELDS))} (the workflow's channel for what it does not compare)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no tqdm progress bars")
    hints = typing.get_type_hints(TrainConfig)
    fields = {field.name: field for field in dataclasses.fields(TrainConfig)}
    groups = {}
    for title, names in GROUPS.items():
        groups[title] = parser.add_argument_group(f"{title} (also YAML keys)")
        for name in names:
            kwargs = _flag_kwargs(fields[name], hints[name], HELP[name])
            groups[title].add_argument(f"--{name.replace('_', '-')}", dest=name, **kwargs)
    folded = {
        FOLDED: groups[FOLDED],
        **{method.name: _add_method_options(parser, method) for method in METHODS.values()},
    }
    helps = parser.add_argument_group("help")
    shown = dict(action=_Help, nargs=0, folded=folded, show=set())
    helps.add_argument("-h", "--help", help=f"this help, the {FOLDED} options and each method's own left out", **shown)
    helps.add_argument("--help-all", help="this help with every option", **{**shown, "show": set(folded)})
    helps.add_argument(
        "--help-method",
        choices=tuple(METHODS),
        metavar="METHOD",
        help="this help with METHOD's own options",
        **{**shown, "nargs": None},
    )
    parser.set_defaults(run=run)


def _add_method_options(parser: argparse.ArgumentParser, method) -> argparse._ArgumentGroup:
    """The group of ``--<method>-<field>`` flags, one per hyper-parameter of ``method``."""
    group = parser.add_argument_group(f"{method.name} options (also keys of the YAML section {method.name}:)")
    hints = typing.get_type_hints(method.params)
    for field in dataclasses.fields(method.params):
        kwargs = _flag_kwargs(field, hints[field.name], field.metadata.get("help", ""))
        group.add_argument(
            f"--{method.name.replace('_', '-')}-{field.name.replace('_', '-')}",
            dest=_dest(method.name, field),
            **kwargs,
        )
    return group


def _dest(method: str, field: dataclasses.Field) -> str:
    return f"{method}.{field.name}"


def _source(args: argparse.Namespace) -> str:
    return f"training config {args.config}" if args.config else "ddrs train"


def option_values(args: argparse.Namespace) -> dict:
    """The options the YAML file gives, ``--speed`` and the flags over them; TrainConfig's defaults
    fill the rest."""
    values = read_yaml(args.config) if args.config else {}
    values.update(speed_options(args.speed))
    for field in dataclasses.fields(TrainConfig):
        given = getattr(args, field.name, None)
        if given is not None:
            values[field.name] = given
    if isinstance(values.get("params"), dict) and values.get("method") in METHODS:
        # a saved config's ``params`` (TrainConfig.to_dict) is the method's section by another name
        values[values["method"]] = {**values.pop("params"), **values.get(values["method"], {})}
    for method in METHODS.values():
        for field in dataclasses.fields(method.params):
            given = getattr(args, _dest(method.name, field))
            if given is not None:
                values.setdefault(method.name, {})[field.name] = given
    return values


def speed_options(text: str | None) -> dict:
    """The ``--speed`` mapping: only :data:`~ddrs.training.config.SPEED_FIELDS`, which change how fast
    a model trains and never what it learns."""
    speed = yaml.safe_load(text or "") or {}
    if not isinstance(speed, dict):
        raise ValueError(f"--speed must be a mapping of option: value, got {text!r}")
    unknown = sorted(set(speed) - SPEED_FIELDS)
    if unknown:
        raise ValueError(
            f"--speed takes only {sorted(SPEED_FIELDS)}; {unknown} change what is trained: give them in --config"
        )
    return speed


def run(args: argparse.Namespace) -> None:
    from ddrs.data import saved_split
    from ddrs.jobs.provenance_record import record
    from ddrs.training.trainer import train

    values = option_values(args)
    config = TrainConfig.from_mapping(values, source=_source(args))
    out = train(config, args.out, log=args.log, sigma_table=args.sigma_table, progress=not args.no_progress)
    import torch

    # what the workflow compares (TrainingPlan.train_options, and the threads_per_job it trains on):
    # every option but the speed ones, and the intra-op threads, which order the float sums of every step
    identity = {key: value for key, value in values.items() if key not in SPEED_FIELDS}
    identity["threads"] = torch.get_num_threads()
    read = [config.init, saved_split(config.dataset, config.data_root, config.seed)]
    record([out, *(path for path in (args.log, args.sigma_table) if path)], "train", identity, read)
    print(f"trained {config.method} ({config.train_mode}, σ₀ = {config.sigma}) for {config.epochs} epochs: {out}")
