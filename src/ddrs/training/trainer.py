"""The resumable training loop: SGD with a step schedule, a checkpoint and a log row every epoch.

While training, the checkpoint lives at ``<out>.partial`` (written atomically after every epoch with
model, optimizer, scheduler, grad-scaler, σ table, per-epoch history and config); it is renamed
to ``<out>`` after the last epoch. Rerunning on a partial run resumes from it and ends with exactly
the weights of an uninterrupted run: every random stream of an epoch — shuffling, smoothing noise,
torch's global generator (forked so the caller's is untouched), the method's epoch plan — is
seeded from ``(seed, epoch)``, and every input's data augmentation from ``(seed, epoch, idx)``
(:mod:`ddrs.training.loader_feed`, :mod:`ddrs.training.device_feed`), so no generator state has to
survive the interruption; what a method's epoch plan carries across epochs (``Method.epoch_plan``,
e.g. which inputs Sun et al.'s training discarded) is saved in the checkpoint. Rerunning on a finished
``<out>`` with more epochs continues training from it.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset, Subset
from tqdm import tqdm

from ddrs.core.device import autocast, copy_to, forked_devices, make_generator, prepare_classifier, select_device
from ddrs.core.noise import get_noise
from ddrs.core.seeds import TrainingStream, derived_seed
from ddrs.core.settings import resolve_memory_format
from ddrs.data import get_info, load_dataset
from ddrs.errors import CheckpointError
from ddrs.io import atomic_path, partial_path
from ddrs.methods import get_method
from ddrs.models import build_model, load_checkpoint
from ddrs.training.checkpointing import RunState, initial_weights, resume_source
from ddrs.training.config import LR_DROP_DELAYS, TrainConfig
from ddrs.training.data_dependent import SigmaTable, optimize_batch_sigma
from ddrs.training.device_feed import DeviceFeed, training_feed
from ddrs.training.recompute import with_recomputation

#: per-epoch CSV log columns
LOG_COLUMNS = (
    "epoch",
    "lr",
    "loss",
    "clean_accuracy",
    "noisy_accuracy",
    "sigma_mean",
    "sigma_min",
    "sigma_max",
    "distinct_inputs",
    "seconds",
)


def build_optimizer(model: nn.Module, config: TrainConfig) -> tuple[torch.optim.Optimizer, Any]:
    """SGD with momentum and weight decay, and a StepLR (or MultiStepLR for ``lr_milestones``),
    brought to each epoch's position by :func:`advance_schedule`."""
    optimizer = torch.optim.SGD(
        model.parameters(),
        lr=config.lr,
        momentum=config.momentum,
        nesterov=config.nesterov,
        weight_decay=config.weight_decay,
    )
    if config.lr_milestones:
        scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, config.lr_milestones, gamma=config.lr_gamma)
    else:
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=config.lr_step, gamma=config.lr_gamma)
    return optimizer, scheduler


def advance_schedule(scheduler: Any, config: TrainConfig, epoch: int) -> None:
    """Bring the lr schedule to where it stands while the 0-based ``epoch`` trains, so that each decay
    takes effect in the epoch ``config.lr_drop`` says (:data:`~ddrs.training.config.LR_DROP_DELAYS`).

    The scheduler stands at ``epoch − delay`` (at least 0). ``paper``: at ``epoch``, as after a
    ``scheduler.step()`` at the end of every epoch; ``late``: at ``epoch − 1``, as after Jeong &
    Shin's ``scheduler.step(epoch)`` at the end of every epoch (their
    ``code/train_consistency.py`` line 105); ``early``: at ``epoch + 1``, as after MACER's
    ``scheduler.step()`` at the top of every epoch (its ``main.py`` line 158) since torch 1.1. The
    position depends on the epoch alone, so a resumed run (whose checkpoint holds the scheduler's
    state) continues the same schedule. Torch's warning against stepping a scheduler before its
    optimizer, due here before the first epoch of an ``early`` run, is silenced: the position, not
    the order of calls, sets the lr.
    """
    position = max(0, epoch - LR_DROP_DELAYS[config.lr_drop])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step\(\)` before")
        while scheduler.last_epoch < position:
            scheduler.step()


@torch.no_grad()
def evaluate(
    model: nn.Module,
    dataset: Dataset,
    sigma: float,
    noise: str,
    *,
    seed: int,
    batch_size: int,
    device: torch.device,
    precision: str = "fp32",
) -> tuple[float, float]:
    """Accuracy of the base classifier on clean inputs and under one draw of noise at ``sigma`` (uniform: λ)."""
    model.eval()
    generator = make_generator(derived_seed(seed, TrainingStream.EVAL), device)
    distribution = get_noise(noise)
    correct_clean = correct_noisy = total = 0
    for x, y in DataLoader(dataset, batch_size=batch_size, pin_memory=device.type == "cuda"):
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with autocast(device, precision):
            correct_clean += int((model(x).argmax(dim=1) == y).sum())
            correct_noisy += int((model(distribution.perturb(x, sigma, generator)).argmax(dim=1) == y).sum())
        total += len(y)
    return correct_clean / total, correct_noisy / total


class Trainer:
    """Train ``config`` into the checkpoint ``out``; optional CSV log and σ-table TSV beside it.

    ``config.init`` names a ddrs checkpoint to fine-tune from (DDRS §4.1: ImageNet models are
    fine-tuned with Algorithm 2 for 30 epochs from the published weights, imported with
    ``ddrs.models.import_published``; §4.2 fine-tunes the SmoothAdv models).
    """

    def __init__(
        self,
        config: TrainConfig,
        out: str | os.PathLike,
        *,
        log: str | os.PathLike | None = None,
        sigma_table: str | os.PathLike | None = None,
        progress: bool = True,
    ):
        self.config = config
        self.out = Path(out)
        self.partial = partial_path(self.out)
        self.log = None if log is None else Path(log)
        self.sigma_table_path = None if sigma_table is None else Path(sigma_table)
        self.progress = progress
        self.device = select_device(config.device)
        method = get_method(config.method)
        self.loss_fn = method.load_loss()
        plan = method.load_epoch_plan()
        self.epoch_plan = None if plan is None else plan(config.params, config, self.device)
        self.num_classes = get_info(config.dataset).num_classes
        self.channels_last = resolve_memory_format(config.memory_format, self.device.type) == "channels_last"

    # -- set-up -------------------------------------------------------------------------------

    def _build_model(self, *, resuming: bool) -> nn.Module:
        """The run's model: its seeded initial weights, or ``config.init``'s unless a checkpoint of
        the run is about to replace them (so a resumed fine-tuning no longer needs the init file)."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derived_seed(self.config.run_seed, TrainingStream.INIT))
            model = build_model(self.config.arch, self.config.dataset)
        if self.config.init is not None and not resuming:
            model.load_state_dict(initial_weights(self.config))
        return prepare_classifier(
            model.to(self.device), self.device, memory_format=self.config.memory_format, compile=False
        )

    # -- the loop -----------------------------------------------------------------------------

    def run(self) -> Path:
        """Train (or resume) to ``config.epochs`` epochs; return the path of the finished checkpoint.

        Torch's global generators are forked for the whole run, so the caller's are left as they
        were, whatever draws from them inside (e.g. every DataLoader pass, for its base seed)."""
        with torch.random.fork_rng(devices=forked_devices(self.device)):
            return self._run()

    def _run(self) -> Path:
        config = self.config
        train_set, batches, epoch_view = training_feed(config, self.device)
        test_set = load_dataset(config.dataset, "test", root=config.data_root, seed=config.seed)
        eval_set = Subset(test_set, range(min(config.eval_max, len(test_set))))
        source = resume_source(self.out, self.partial)
        model = self._build_model(resuming=source is not None)
        optimizer, scheduler = build_optimizer(model, config)
        scaler = torch.amp.GradScaler(
            self.device.type, enabled=config.precision == "fp16" and self.device.type == "cuda"
        )
        table = SigmaTable.constant(len(train_set), config.initial_sigma)
        state = RunState(optimizer, scheduler, scaler, table, self.epoch_plan)
        if source is not None:
            state.restore(source, config, model)

        for epoch in range(state.epoch, config.epochs):
            began = time.perf_counter()
            advance_schedule(state.scheduler, config, epoch)
            visits = self._plan_epoch(model, epoch_view, state.table, epoch)
            with torch.random.fork_rng(devices=forked_devices(self.device)):
                torch.manual_seed(derived_seed(config.run_seed, TrainingStream.GLOBAL, epoch))
                loss = self.train_epoch(model, batches, state.table, state.optimizer, state.scaler, epoch, visits)
            lr = state.optimizer.param_groups[0]["lr"]
            clean, noisy = evaluate(
                model,
                eval_set,
                config.initial_sigma,
                config.noise_name,
                seed=config.run_seed,
                batch_size=config.batch_size,
                device=self.device,
                precision=config.precision,
            )
            state.history.append(
                {
                    "epoch": epoch + 1,
                    "lr": lr,
                    "loss": loss,
                    "clean_accuracy": clean,
                    "noisy_accuracy": noisy,
                    **state.table.summary(),
                    "distinct_inputs": len(train_set) if visits is None else len(visits.unique()),
                    "seconds": time.perf_counter() - began,
                }
            )
            state.epoch = epoch + 1
            state.save(self.partial, config, model)
            if self.log is not None:  # progress so far, beside the checkpoint: the outputs appear at the end
                write_history(state.history, partial_path(self.log))

        if self.partial.is_file():
            os.replace(self.partial, self.out)
        if self.log is not None:
            write_history(state.history, self.log)
            partial_path(self.log).unlink(missing_ok=True)
        if self.sigma_table_path is not None:
            state.table.write_tsv(self.sigma_table_path)
        return self.out

    def _plan_epoch(
        self, model: nn.Module, epoch_view: Callable[[int], Dataset], table: SigmaTable, epoch: int
    ) -> Tensor | None:
        """The indices the method's epoch plan has ``epoch`` visit, or ``None`` for a shuffled pass.

        The plan scores the inputs as the epoch augments them (``epoch_view``: the device feed's, or
        :class:`~ddrs.training.loader_feed.EpochView` of the split for the DataLoader), under torch's
        global generator seeded from ``(seed, epoch)``, forked so the training stream is untouched.
        """
        if self.epoch_plan is None:
            return None
        view = epoch_view(epoch)
        seed = derived_seed(self.config.run_seed, TrainingStream.PLAN, epoch)
        with torch.random.fork_rng(devices=forked_devices(self.device)):
            torch.manual_seed(seed)
            return self.epoch_plan.plan(epoch, model, view, table.values, seed)

    def train_epoch(
        self,
        model: nn.Module,
        loader: DataLoader | DeviceFeed,
        table: SigmaTable,
        optimizer,
        scaler,
        epoch: int,
        visits: Tensor | None = None,
    ) -> float:
        """One pass of ``loader`` (:func:`~ddrs.training.loader_feed.training_loader` or a
        :class:`~ddrs.training.device_feed.DeviceFeed`) over ``visits``
        (default: the shuffled training set), DDRS Algorithm 2 per batch in ``ds`` mode; mean loss.
        Under ``noise_batching: split`` every loaded batch is cut into ``config.chunks`` consecutive
        chunks, each a batch of its own (σ update and SGD step). Image batches are laid out as
        ``memory_format`` says; the loss's forward passes recompute activations in backward after
        ``activation_checkpoints`` cuts (:mod:`ddrs.training.recompute`)."""
        config, device = self.config, self.device
        noise = make_generator(derived_seed(config.run_seed, TrainingStream.NOISE, epoch), device)
        loader.sampler.set_epoch(epoch, visits)
        optimise_sigma = config.train_mode == "ds" and epoch >= config.warmup_epochs and config.k > 0
        model.train()
        forward = with_recomputation(model, config.arch, config.activation_checkpoints)
        total, count = torch.zeros((), device=device), 0
        bar = tqdm(
            loader, desc=f"epoch {epoch + 1}/{config.epochs}", leave=False, disable=None if self.progress else True
        )
        for x, y, indices in (chunk for batch in bar for chunk in _chunked(batch, config.chunks)):
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            if self.channels_last and x.ndim == 4:
                x = x.contiguous(memory_format=torch.channels_last)
            # pinned first: a copy from pageable memory would wait for the queued steps, every step
            sigma = copy_to(table.gather(indices), device)
            if optimise_sigma:
                sigma = optimize_batch_sigma(model, x, sigma, config, num_classes=self.num_classes, generator=noise)
                table.update(indices, sigma)
            with autocast(device, config.precision):
                loss = self.loss_fn(forward, x, y, sigma, noise, config.params, epoch)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            total += loss.detach() * len(y)
            count += len(y)
        mean = float(total) / count
        check_finite(model, mean, config, epoch)
        return mean

    # -- outputs ------------------------------------------------------------------------------


def check_finite(model: nn.Module, mean: float, config: TrainConfig, epoch: int) -> None:
    """Raise :class:`FloatingPointError` naming the learning rate when 0-based ``epoch`` diverged: its
    mean loss ``mean`` or a weight of ``model`` is not finite. A non-finite gradient in a step after
    the last forward pass leaves the loss finite and the weights not: a checkpoint of them would
    certify garbage in every later job."""
    if not math.isfinite(mean):
        raise FloatingPointError(
            f"training diverged in epoch {epoch + 1}: the mean {config.method} loss is {mean}; "
            f"lower the learning rate (lr = {config.lr})"
        )
    broken = [
        name for name, value in model.state_dict().items() if value.is_floating_point() and not value.isfinite().all()
    ]
    if broken:
        raise FloatingPointError(
            f"training diverged in epoch {epoch + 1}: {len(broken)} weight tensors are no longer finite "
            f"(first {broken[0]}) though the mean {config.method} loss is {mean}; lower the learning rate "
            f"(lr = {config.lr})"
        )


def write_history(history: Iterable[dict[str, Any]], path: Path) -> None:
    """The per-epoch log (:data:`LOG_COLUMNS`), written atomically."""
    with atomic_path(path) as tmp:
        pd.DataFrame(list(history), columns=list(LOG_COLUMNS)).to_csv(tmp, index=False)


def _chunked(batch: tuple[Tensor, ...], chunks: int) -> Iterable[tuple[Tensor, ...]]:
    """``batch``'s tensors cut into ``chunks`` consecutive pieces (Jeong & Shin's ``_chunk_minibatch``,
    Salman et al.'s ``get_minibatches``). Piece sizes differ by at most one, so a short last batch of
    the epoch loses no input (theirs drop the remainder of ``len // chunks``); an empty piece is skipped."""
    if chunks == 1:
        yield batch
        return
    for piece in zip(*(tensor.tensor_split(chunks) for tensor in batch), strict=True):
        if len(piece[0]):
            yield piece


def train(config: TrainConfig, out: str | os.PathLike, **kwargs: Any) -> Path:
    """Run :class:`Trainer` (see its arguments) and return the finished checkpoint's path."""
    return Trainer(config, out, **kwargs).run()


def load_sigma_table(path: str | os.PathLike) -> Tensor:
    """The σ table saved in a training checkpoint (one σᵢ per training example)."""
    _, meta = load_checkpoint(path)
    if "sigma_table" not in meta:
        raise CheckpointError(f"{path} holds no σ table (it was not written by ddrs train)")
    return meta["sigma_table"]
