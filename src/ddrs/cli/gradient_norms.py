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

from ddrs.methods import METHODS

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
    from ddrs.training.gradient_norms import write_gradient_norms

    write_gradient_norms(**flags, max_index=args.max)
