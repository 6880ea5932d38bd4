"""``ddrs gradient-norms``: mean loss-gradient norm of easy vs hard training inputs (Sun et al. 2024, Table 1).

For a trained model at σ: p_A of every selected input (the fraction of ``--draws`` noisy copies
labelled correctly), the ℓ2 norm of the gradient of its training loss with respect to the model's
parameters, and their means over easy (p_A > 0.5) and hard (p_A < 0.5) inputs with the ratio
easy / hard. The loss is ``--method``'s (default: Gaussian cross-entropy, ``cohen``), with the
hyper-parameters saved in the checkpoint when it was trained with that method, else the method's
defaults, at the checkpoint's last training epoch (warm-ups over) unless ``--epoch`` is given.

Output ``--out``: one tab-separated row ``method sigma split draws inputs easy_inputs
hard_inputs easy_grad_norm hard_grad_norm easy_over_hard`` (NaN for an empty group);
``--per-input``: ``idx label p_correct grad_norm``, one row per input.
"""

from __future__ import annotations

import argparse

from ddrs.methods import METHODS, get_method

#: the ``--out`` row's leading columns; :data:`ddrs.training.gradient_norms.SUMMARY_COLUMNS` follow
RUN_COLUMNS = ("method", "sigma", "split", "draws")


#: the command's line in ``ddrs --help``
COMMAND_HELP = "mean per-input loss-gradient norm of easy (p_A > 0.5) and hard training inputs (Sun et al. Table 1)"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("gradient-norms", help=COMMAND_HELP, description=__doc__)
    parser.add_argument("--checkpoint", required=True, help="ddrs checkpoint of the trained base classifier")
    parser.add_argument("--dataset", required=True, help="dataset the model was trained on")
    parser.add_argument(
        "--sigma", type=float, required=True, help="σ of the noise in the loss and in p_A (λ for uniform noise)"
    )
    parser.add_argument("--out", required=True, metavar="FILE.tsv", help="the one-row summary to write")
    parser.add_argument("--per-input", metavar="FILE.tsv", help="also write idx, label, p_correct, grad_norm")
    parser.add_argument(
        "--method",
        default="cohen",
        help=f"whose training loss: one of {', '.join(METHODS)}, or a variant of one, e.g. cohen@easy_focus, "
        "whose name labels the row (default: cohen)",
    )
    parser.add_argument("--epoch", type=int, help="0-based epoch given to the loss (default: the last trained)")
    parser.add_argument("--split", default="train", choices=("train", "test"), help="inputs measured")
    parser.add_argument("--draws", type=int, default=100, help="noise draws estimating p_A (Sun et al.: 100)")
    parser.add_argument("--skip", type=int, default=1, help="measure every skip-th input")
    parser.add_argument("--max", type=int, default=None, help="stop before this index")
    parser.add_argument("--batch", type=int, default=400, help="noisy copies per forward pass (p_A)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every noise draw (per input: seed, idx)")
    parser.add_argument("--data-root", default="data", help="dataset download / ImageFolder root")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, …")
    parser.add_argument("--precision", default="fp32", help="fp32, bf16 or fp16")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    flags = {key: value for key, value in vars(args).items() if key not in ("command", "threads", "run", "max")}
    measure(**flags, max_index=args.max)


def measure(
    *,
    checkpoint: str,
    out: str,
    dataset: str,
    sigma: float,
    method: str = "cohen",
    epoch: int | None = None,
    split: str = "train",
    draws: int = 100,
    skip: int = 1,
    max_index: int | None = None,
    batch: int = 400,
    seed: int = 0,
    data_root: str = "data",
    device: str = "auto",
    precision: str = "fp32",
    per_input: str | None = None,
) -> None:
    """The command's work, its flags as keywords (``--max`` as ``max_index``; ``ddrs job`` passes a
    job document's)."""
    import pandas as pd

    from ddrs.core.device import select_device
    from ddrs.core.settings import PRECISIONS
    from ddrs.data import load_dataset, subsample_indices
    from ddrs.io import atomic_path
    from ddrs.models import load_checkpoint
    from ddrs.training.gradient_norms import gradient_norm_table

    if not sigma > 0:
        raise ValueError(f"--sigma must be > 0, got {sigma}")
    if draws < 1 or batch < 1:
        raise ValueError(f"--draws and --batch must be >= 1, got {draws}, {batch}")
    if precision not in PRECISIONS:
        raise ValueError(f"unknown --precision {precision!r}; choose one of {sorted(PRECISIONS)}")
    trained_method = get_method(method)
    device = select_device(device)
    model, meta = load_checkpoint(checkpoint, dataset=dataset, device=device)
    trained_with = meta.get("config") if meta.get("method") == trained_method.name else None
    params = trained_method.make_params(trained_with["params"] if trained_with else None, source=str(checkpoint))
    epoch = epoch if epoch is not None else max(0, (meta.get("epoch") or 1) - 1)
    inputs = load_dataset(dataset, split, root=data_root, seed=seed, augment=False)
    indices = subsample_indices(len(inputs), skip, max_index)
    per_input_table, summary = gradient_norm_table(
        model,
        inputs,
        indices,
        sigma,
        loss=trained_method.load_loss(),
        params=params,
        epoch=epoch,
        draws=draws,
        noise=trained_method.noise,
        seed=seed,
        batch_size=batch,
        device=device,
        precision=precision,
    )
    row = dict(zip(RUN_COLUMNS, (method, sigma, split, draws), strict=True)) | summary
    with atomic_path(out) as tmp:
        pd.DataFrame([row]).to_csv(tmp, sep="\t", index=False, na_rep="nan")
    if per_input:
        with atomic_path(per_input) as tmp:
            per_input_table.to_csv(tmp, sep="\t", index=False)
    print(
        f"gradient-norms: {summary['inputs']} {split} inputs, {trained_method.name} loss at σ = {sigma}: "
        f"easy {summary['easy_grad_norm']:.4g} ({summary['easy_inputs']}), hard {summary['hard_grad_norm']:.4g} "
        f"({summary['hard_inputs']}), easy/hard {summary['easy_over_hard']:.4g} -> {out}"
    )
