"""What the certificate audit costs beside the certification it audits, on the same model and inputs.

Per certificate (seconds per input), on the default's model shape (``--arch mlp256 --dataset mnist5k``, weights at
random: speed does not depend on training) and its first ``--inputs`` test digits, each round timing in turn:

  certify_fixed  Cohen's CERTIFY at σ (n0 = 100, ``--n``): what the fixed-σ certification job spends per input
  certify_ds     Algorithm 1 to ``--k`` (n = 1 draw a step) then CERTIFY at σ*ₓ: the data-dependent job's
  pgd / line / predict   the audit's PGD (``--steps`` steps, ``--draws`` draws), line search (``--line-points``)
                 and PREDICT confirmations (``--predict-n`` draws at x and at both candidates), once with a fixed
                 σ (the control's audit) and once with Algorithm 1 at every query (``_ds``: DDRS's audit)

and the ratios audit / certification (fixed with fixed, data-dependent with data-dependent), as the median
over rounds of each round's own ratio with its range: a shared CPU's speed drifts between rounds, within a
round much less. One thread, as the workflow's jobs on the default. Run:

    PYTHONPATH=src .venv/bin/python benchmarks/audit_cost.py [--inputs 50] [--rounds 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics

import torch
from _measure import interleaved_seconds
from _report import add_json_option, write_report

from ddrs.core.attack import smoothed_pgd
from ddrs.core.audit_settings import AuditSettings
from ddrs.core.device import BaseClassifier
from ddrs.core.seeds import StudyStream
from ddrs.core.settings import Algorithm1Settings, CertifySettings, DeviceSettings
from ddrs.core.sigma import optimize_sigma
from ddrs.core.smoothing import certify_batch
from ddrs.core.streams import input_streams
from ddrs.data import get_info, load_dataset
from ddrs.jobs.audit import Auditor, DataDependentSigma, FixedSigma, training_inputs
from ddrs.models import build_model

SIGMA, ALPHA, N0 = 0.25, 0.001, 100
CPU = torch.device("cpu")


def audit_runs(auditor: Auditor, x: torch.Tensor, label: torch.Tensor, radius: torch.Tensor) -> dict:
    """The audit's three parts on a group of certificates, each drawing from fresh streams per call."""
    idx = list(range(len(x)))
    sigmas = input_streams(0, idx, StudyStream.AUDIT_SIGMA, CPU)
    sigma_at = auditor.sigma_at(sigmas)
    settings = auditor.settings

    def pgd():
        draws = input_streams(0, idx, StudyStream.AUDIT_ATTACK, CPU)
        smoothed_pgd(auditor.model, x, label, radius, sigma_at, draws, steps=settings.steps, count=settings.draws)

    def line():
        draws = input_streams(0, idx, StudyStream.AUDIT_ATTACK, CPU)
        auditor.line_search(x, label, radius, input_streams(0, idx, StudyStream.AUDIT_SIGMA, CPU), draws)

    def predict():
        confirm = input_streams(0, idx, StudyStream.AUDIT_PREDICT, CPU)
        for level in (ALPHA, ALPHA / 2, ALPHA / 2):  # at x, then at the two candidates
            auditor.predict(x, torch.full((len(x),), SIGMA), level, confirm)

    return {"pgd": pgd, "line": line, "predict": predict}


def certification_runs(model, x: torch.Tensor, n: int, search: Algorithm1Settings, num_classes: int) -> dict:
    """CERTIFY at σ, and Algorithm 1 then CERTIFY at σ*ₓ, on the same inputs."""
    settings = CertifySettings(n0=N0, n=n, alpha=ALPHA)
    classifier = BaseClassifier(model, num_classes, CPU, DeviceSettings(batch_size=2500, memory_format="contiguous"))

    def certify(sigma):
        streams = input_streams(0, range(len(x)), StudyStream.AUDIT_PREDICT, CPU)
        certify_batch(classifier, x, sigma, settings, generator=streams)

    def data_dependent():
        streams = input_streams(0, range(len(x)), StudyStream.AUDIT_SIGMA, CPU)
        certify(optimize_sigma(model, x, search, generator=streams)[-1])

    return {"certify_fixed": lambda: certify(SIGMA), "certify_ds": data_dependent}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="mlp256")
    parser.add_argument("--dataset", default="mnist5k")
    parser.add_argument("--inputs", type=int, default=50, help="certificates (the default's audit.inputs)")
    parser.add_argument("--n", type=int, default=2000, help="CERTIFY's draws (the default's certify.n)")
    parser.add_argument("--k", type=int, default=200, help="Algorithm 1's K (the default's largest)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--draws", type=int, default=8)
    parser.add_argument("--line-points", type=int, default=8)
    parser.add_argument("--predict-n", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    add_json_option(parser)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = build_model(args.arch, args.dataset).eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    test = load_dataset(args.dataset, "test", seed=0)
    x = torch.stack([test[i][0] for i in range(args.inputs)])
    with torch.no_grad():
        label = model(x).argmax(dim=1)
    radius = torch.full((args.inputs,), SIGMA, dtype=torch.float64)
    search = Algorithm1Settings(sigma0=SIGMA, steps=(args.k,), lr=5e-4, min_sigma=0.01)
    sizes = AuditSettings(inputs=args.inputs, steps=args.steps, draws=args.draws, line_points=args.line_points,
                          n=args.predict_n)  # fmt: skip
    images, labels = training_inputs(args.dataset, "data", 0, CPU)
    num_classes = get_info(args.dataset).num_classes
    runs = certification_runs(model, x, args.n, search, num_classes)
    for suffix, sigma in (("", FixedSigma(SIGMA)), ("_ds", DataDependentSigma(search, num_classes))):
        auditor = Auditor(model, sigma, sizes, alpha=ALPHA, precision="fp32", seed=0, train_images=images,
                          train_labels=labels)  # fmt: skip
        runs |= {f"{part}{suffix}": run for part, run in audit_runs(auditor, x, label, radius).items()}
    seconds = interleaved_seconds(runs, CPU, args.rounds)
    report(seconds, args)


def report(seconds: dict[str, list[float]], args: argparse.Namespace) -> None:
    """Seconds per certificate (medians over rounds) and the paired ratios audit / certification."""
    per_input = {name: [s / args.inputs for s in values] for name, values in seconds.items()}
    figures = {f"{name}_s": round(statistics.median(values), 5) for name, values in per_input.items()}
    for suffix, certification in (("", "certify_fixed"), ("_ds", "certify_ds")):
        parts = [per_input[f"{part}{suffix}"] for part in ("pgd", "line", "predict")]
        audit = [sum(round_parts) for round_parts in zip(*parts, strict=True)]
        ratios = [a / c for a, c in zip(audit, per_input[certification], strict=True)]
        name = "audit_fixed" if not suffix else "audit_ds"
        figures |= {f"{name}_s": round(statistics.median(audit), 5), f"{name}_over_{certification}":
                    round(statistics.median(ratios), 3), f"{name}_ratio_range": [round(min(ratios), 3),
                    round(max(ratios), 3)]}  # fmt: skip
    figures |= {key: getattr(args, key) for key in ("arch", "dataset", "inputs", "n", "k", "steps", "draws")}
    figures |= {"line_points": args.line_points, "predict_n": args.predict_n, "rounds": args.rounds}
    for name in ("fixed", "ds"):
        suffix = "" if name == "fixed" else "_ds"
        parts = ", ".join(f"{p} {figures[f'{p}{suffix}_s']:.4f}" for p in ("pgd", "line", "predict"))
        print(f"audit ({name}): {parts} s per certificate; total {figures[f'audit_{name}_s']:.4f} s, "
              f"{figures[f'audit_{name}_over_certify_{name}']}x certify_{name} ({figures[f'certify_{name}_s']:.4f} s "
              f"per input; rounds {figures[f'audit_{name}_ratio_range']})")  # fmt: skip
    write_report("audit_cost", figures, args.json, threads=1)


if __name__ == "__main__":
    main()
