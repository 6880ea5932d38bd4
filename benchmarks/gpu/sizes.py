"""How much work each GPU figure times: the paper's sizes on CUDA, tiny ones in quick mode (``gpu_throughput.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from _train_loops import CIFAR10_EPOCH_STEPS

#: CERTIFY's n0 and α (Cohen et al. 2019's settings), and Cohen's loop's forward batch
N0, ALPHA, COHEN_BATCH = 100, 0.001, 400
#: CERTIFY's seconds per input are quoted at this many estimation draws
QUOTED_N = 100_000


@dataclass(frozen=True)
class Sizes:
    """How much work each figure times."""

    n: int
    imagenet_n: int  # ImageNet's draws, scaled to n (a 224² forward pass is 50× a CIFAR one)
    n0: int
    inputs: int
    sequential_inputs: int  # the inputs sequential CERTIFY certifies to the end
    batch: int | None  # ddrs's forward batch; None: chosen from free memory
    k: int
    k_timed: int
    sigma_batch_today: int
    sigma_batch: int
    train_batch: int
    train_steps: int
    macer_batch: int
    macer_m: int
    macer_chunk: int  # draws_per_pass
    macer_cuts: int  # activation_checkpoints
    repeats: int
    training_rounds: int  # the training figures' interleaved rounds
    compile: bool
    max_side: int | None  # quick: images no larger than this (ImageNet's 224 shrinks)

    @staticmethod
    def for_run(
        quick: bool,
        n: int | None,
        k: int | None,
        imagenet_n: int | None,
        sigma_batch: int | None,
        train_steps: int | None = None,
    ) -> Sizes:
        if quick:
            return Sizes(
                n=n or 4, imagenet_n=imagenet_n or 4, n0=2, inputs=1, sequential_inputs=4, batch=4,
                k=k or 2, k_timed=1, sigma_batch_today=1, sigma_batch=sigma_batch or 2,
                train_batch=4, train_steps=train_steps or 2, macer_batch=2, macer_m=4, macer_chunk=2,
                macer_cuts=3,
                repeats=1, training_rounds=1, compile=False, max_side=32,
            )  # fmt: skip
        return Sizes(
            n=n or QUOTED_N, imagenet_n=imagenet_n or 10_000, n0=N0, inputs=2, sequential_inputs=256, batch=None,
            k=k or 1500, k_timed=50, sigma_batch_today=64, sigma_batch=sigma_batch or 1024,
            train_batch=256, train_steps=train_steps or CIFAR10_EPOCH_STEPS,
            macer_batch=256, macer_m=64, macer_chunk=16, macer_cuts=10,
            repeats=2, training_rounds=5, compile=True, max_side=None,
        )  # fmt: skip
