"""The two levers that keep R training runs from costing R times one (issue 55), each measured.

1. **Stacked training.** R replicates of one model trained in one job: their weights stacked
   (``torch.func.stack_module_state``) and one ``vmap``-ed forward and backward per step over R
   batches (each run its own data order and noise), against R models stepped one after another,
   on the same batches. Printed: seconds per step of each and their ratio, per R, side by side in
   interleaved rounds (``_measure.interleaved_seconds``). A Gaussian-noise (Cohen) step of the
   embedded default's MLP at its batch size.
2. **Common noise.** Every replicate is certified with the same CERTIFY draws (noise keyed by
   input, not by model). From a finished results tree with ``replication.monte_carlo`` ≥ 1 this
   prints, per σ, the variance of a paired ACR difference between run 0 and run 1 with common
   noise (both logs as certified) against independent noise (run 0's re-certification with other
   seeds in place of its log): what the paired comparisons gain, at no cost.

    .venv/bin/python benchmarks/replication_levers.py --runs 5 --rounds 5 --threads 1
    .venv/bin/python benchmarks/replication_levers.py --tree results --dataset mnist5k   # lever 2 too
"""

from __future__ import annotations

import argparse
import copy
import statistics
from pathlib import Path

import numpy as np
import torch
from _measure import interleaved_seconds, paired_ratios
from _report import add_json_option, write_report
from tabulate import tabulate
from torch.func import functional_call, grad, stack_module_state, vmap

from ddrs.analysis.evidence import per_input
from ddrs.data import get_info
from ddrs.logs.certification_log import read_log
from ddrs.models import build_model


def _batches(runs: int, size: int, inputs: torch.Tensor, labels: torch.Tensor, seed: int):
    """One batch per run, each its own draw of inputs and noise (as different seeds would give)."""
    generator = torch.Generator().manual_seed(seed)
    order = torch.stack([torch.randperm(len(inputs), generator=generator)[:size] for _ in range(runs)])
    noise = torch.randn((runs, size, *inputs.shape[1:]), generator=generator)
    return inputs[order], labels[order], noise


def stacked_vs_sequential(runs: int, batch: int, sigma: float, rounds: int, dataset: str, arch: str) -> dict:
    """Seconds per SGD step of R replicates, one after another and stacked (module docstring)."""
    torch.manual_seed(0)
    models = [build_model(arch, dataset) for _ in range(runs)]
    shape = get_info(dataset).input_shape
    inputs, labels = torch.rand(4000, *shape), torch.randint(0, 10, (4000,))
    x, y, noise = _batches(runs, batch, inputs, labels, seed=1)
    optimisers = [torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9) for m in models]

    def sequential():
        for model, optimiser, xr, yr, er in zip(models, optimisers, x, y, noise, strict=True):
            loss = torch.nn.functional.cross_entropy(model(xr + sigma * er), yr)
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()

    params, buffers = stack_module_state([copy.deepcopy(m) for m in models])
    template = copy.deepcopy(models[0]).to("meta")
    velocity = {name: torch.zeros_like(p) for name, p in params.items()}

    def loss_of(p, b, xr, yr, er):
        return torch.nn.functional.cross_entropy(functional_call(template, (p, b), (xr + sigma * er,)), yr)

    gradients = vmap(grad(loss_of))

    def stacked():
        with torch.no_grad():
            for name, g in gradients(params, buffers, x, y, noise).items():
                velocity[name].mul_(0.9).add_(g)
                params[name].sub_(0.01 * velocity[name])

    seconds = interleaved_seconds({"sequential": sequential, "stacked": stacked}, torch.device("cpu"), rounds)
    return {
        "runs": runs,
        "sequential_s": statistics.median(seconds["sequential"]),
        "stacked_s": statistics.median(seconds["stacked"]),
        **paired_ratios(seconds["stacked"], seconds["sequential"]),
    }


def common_noise(tree: Path, dataset: str, method: str) -> list[dict]:
    """Per σ: the variance over inputs of run 1 − run 0's per-input radius (0 where wrong), with
    common noise and with run 0 re-certified on other noise; their ratio is the variance saved."""
    rows = []
    for run0 in sorted((tree / dataset / method / "fs").glob("sigma*")):
        if "_r" in run0.name:
            continue
        run1 = run0.with_name(f"{run0.name}_r1")
        recertified = sorted(run0.glob("certify_fixed_mc*.tsv"))
        if not (run1 / "certify_fixed.tsv").is_file() or not recertified:
            continue
        other = per_input(read_log(run1 / "certify_fixed.tsv"))[1]
        common = per_input(read_log(run0 / "certify_fixed.tsv"))[1]
        independent = [per_input(read_log(path))[1] for path in recertified]
        var_common = float(np.var(other - common, ddof=1) / len(common))
        var_independent = float(np.mean([np.var(other - z, ddof=1) for z in independent]) / len(common))
        rows.append(
            {
                "sigma": run0.name.removeprefix("sigma"),
                "var_delta_acr_common": var_common,
                "var_delta_acr_independent": var_independent,
                "independent_over_common": var_independent / var_common,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, nargs="+", default=[2, 5])
    parser.add_argument("--batch", type=int, default=64, help="the embedded default's train.batch_size")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dataset", default="mnist5k")
    parser.add_argument("--arch", default="mlp256")
    parser.add_argument("--method", default="cohen")
    parser.add_argument("--tree", type=Path, help="a finished results tree with replicates and re-certifications")
    add_json_option(parser)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    stacked = [stacked_vs_sequential(r, args.batch, 0.25, args.rounds, args.dataset, args.arch) for r in args.runs]
    print("Stacked training: seconds per SGD step of R replicates (median of rounds); ratio = sequential / stacked")
    print(tabulate(stacked, headers="keys", floatfmt=".4g"))
    report = {"stacked": stacked}
    if args.tree is not None:
        noise = common_noise(args.tree, args.dataset, args.method)
        print("\nCommon noise: variance of a paired ΔACR between runs 0 and 1")
        print(tabulate(noise, headers="keys", floatfmt=".3g"))
        report["common_noise"] = noise
    settings = {
        key: (str(value) if isinstance(value, Path) else value) for key, value in vars(args).items() if key != "json"
    }
    write_report("replication_levers", {"settings": settings, **report}, args.json, threads=args.threads)


if __name__ == "__main__":
    main()
