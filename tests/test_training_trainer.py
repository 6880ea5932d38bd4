"""The resumable trainer, Algorithm 2's σ table, and ``ddrs train`` end to end."""

from __future__ import annotations

import contextlib

import pandas as pd
import pytest
import torch
import yaml
from fixtures_archives import install_cifar10

import ddrs.training.data_dependent as data_dependent
import ddrs.training.device_feed as feed_module
import ddrs.training.trainer as trainer_module
from ddrs.cli import main
from ddrs.data import TensorImages
from ddrs.errors import CheckpointError
from ddrs.models import load_checkpoint, save_checkpoint
from ddrs.training import LOG_COLUMNS, TrainConfig, Trainer, load_sigma_table, train

TRAIN_SIZE = 1257  # digits train split (conftest)


def _config(**overrides) -> TrainConfig:
    values = dict(
        dataset="digits",
        arch="mlp",
        method="cohen",
        sigma=0.25,
        epochs=2,
        batch_size=128,
        lr=0.05,
        lr_step=1,
        lr_gamma=0.5,
        eval_max=200,
        device="cpu",
    )
    values.update(overrides)
    return TrainConfig(**values)


def _state(path):
    model, meta = load_checkpoint(path)
    return model.state_dict(), meta


def _assert_same_weights(path_a, path_b):
    (a, meta_a), (b, meta_b) = _state(path_a), _state(path_b)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[key], b[key]) for key in a)
    assert torch.equal(meta_a["sigma_table"], meta_b["sigma_table"])
    assert [{k: v for k, v in row.items() if k != "seconds"} for row in meta_a["history"]] == [
        {k: v for k, v in row.items() if k != "seconds"} for row in meta_b["history"]
    ]


def test_ds_training_changes_and_persists_the_sigma_table(tmp_path):
    """Algorithm 2 moves the σ table, holds it at ``min_sigma`` and saves it in the checkpoint and TSV."""
    out, table_path, log = tmp_path / "ds.pt", tmp_path / "sigma.tsv", tmp_path / "train.csv"
    config = _config(train_mode="ds", sigma_lr=0.05, min_sigma=0.245)  # unbounded, σ would fall to ≈ 0.242
    train(config, out, log=log, sigma_table=table_path, progress=False)

    table = load_sigma_table(out)
    assert table.shape == (TRAIN_SIZE,)
    assert not torch.all(table == 0.25)  # Algorithm 1 moved the σᵢ
    bound = torch.tensor(0.245)
    assert torch.equal(table.min(), bound) and int((table == bound).sum()) > 1  # the lower bound binds
    tsv = pd.read_csv(table_path, sep="\t")
    assert list(tsv.columns) == ["idx", "sigma"] and tsv["idx"].tolist() == list(range(TRAIN_SIZE))
    assert torch.allclose(torch.tensor(tsv["sigma"].to_numpy(), dtype=torch.float32), table)

    rows = pd.read_csv(log)
    assert list(rows.columns) == list(LOG_COLUMNS) and rows["epoch"].tolist() == [1, 2]
    assert rows["sigma_mean"].iloc[-1] == pytest.approx(float(table.mean()), rel=1e-6)
    assert rows["lr"].tolist() == pytest.approx([0.05, 0.025])
    assert not (tmp_path / "ds.pt.partial").exists()


def test_lr_milestones_decay_the_learning_rate_at_those_epochs_instead_of_every_lr_step(tmp_path):
    """``lr_milestones`` replaces the StepLR schedule: the lr drops by ``lr_gamma`` after epoch 1."""
    log = tmp_path / "train.csv"
    train(_config(batch_size=512, lr_step=100, lr_milestones=[1]), tmp_path / "m.pt", log=log, progress=False)
    assert pd.read_csv(log)["lr"].tolist() == pytest.approx([0.05, 0.025], rel=1e-12)


def _lr_per_epoch(config: TrainConfig) -> list[float]:
    """The lr each 0-based epoch of ``config`` trains at, from the trainer's optimiser and schedule."""
    optimizer, scheduler = trainer_module.build_optimizer(torch.nn.Linear(1, 1), config)
    rates = []
    for epoch in range(config.epochs):
        trainer_module.advance_schedule(scheduler, config, epoch)
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
    return rates


def _jeong_and_shin_lr_per_epoch(epochs: int, lr: float, step: int, gamma: float) -> list[float]:
    """Their loop (``code/train_consistency.py`` lines 89–105, ``code/train_utils.py`` line 123):
    StepLR(step), ``scheduler.step(epoch)`` after each epoch."""
    optimizer = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=step, gamma=gamma)
    rates = []
    for epoch in range(epochs):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        with pytest.warns(UserWarning, match="epoch parameter"):
            scheduler.step(epoch)
    return rates


def _macer_lr_per_epoch(epochs: int, lr: float, milestones: list[int], gamma: float) -> list[float]:
    """MACER's loop (``main.py`` lines 135–161): MultiStepLR, ``scheduler.step()`` before each epoch."""
    optimizer = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones, gamma=gamma)
    rates = []
    for _ in range(epochs):
        with pytest.warns(UserWarning) if not rates else contextlib.nullcontext():  # stepped before optimizer.step
            scheduler.step()
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
    return rates


@pytest.mark.parametrize(
    ("schedule", "lr_drop", "first_epochs"),
    [
        # Jeong & Shin A.1: lr 0.1 × 0.1 at 50 and 100 of 150 epochs
        ({"epochs": 150, "lr": 0.1, "lr_step": 50}, "paper", (0, 50, 100)),
        ({"epochs": 150, "lr": 0.1, "lr_step": 50}, "late", (0, 51, 101)),
        ({"epochs": 150, "lr": 0.1, "lr_milestones": [50, 100]}, "late", (0, 51, 101)),
        # MACER: lr 0.01 × 0.1 at 200 and 400 of 440 epochs
        ({"epochs": 440, "lr": 0.01, "lr_milestones": [200, 400]}, "paper", (0, 200, 400)),
        ({"epochs": 440, "lr": 0.01, "lr_milestones": [200, 400]}, "late", (0, 201, 401)),
        ({"epochs": 440, "lr": 0.01, "lr_milestones": [200, 400]}, "early", (0, 199, 399)),
    ],
)
def test_lr_drop_puts_each_decay_in_the_epoch_it_names(schedule, lr_drop, first_epochs):
    """``paper``: every decay in its milestone's (0-based) epoch; ``late``: one epoch after it;
    ``early``: one epoch before it."""
    config = _config(lr_gamma=0.1, lr_drop=lr_drop, **schedule)
    rates = _lr_per_epoch(config)
    bounds = (*first_epochs, config.epochs)
    expected = [config.lr * 0.1**level for level in range(3) for _ in range(bounds[level], bounds[level + 1])]
    assert rates == pytest.approx(expected, rel=1e-12)


def test_lr_drop_late_is_jeong_and_shins_schedule_and_early_macers():
    late = _config(epochs=150, lr=0.1, lr_step=50, lr_gamma=0.1, lr_drop="late")
    assert _lr_per_epoch(late) == pytest.approx(_jeong_and_shin_lr_per_epoch(150, 0.1, 50, 0.1), rel=1e-12)
    early = _config(epochs=440, lr=0.01, lr_milestones=[200, 400], lr_gamma=0.1, lr_drop="early")
    assert _lr_per_epoch(early) == pytest.approx(_macer_lr_per_epoch(440, 0.01, [200, 400], 0.1), rel=1e-12)


@pytest.mark.parametrize(
    ("lr_drop", "rates"), [("late", [0.05, 0.05, 0.05, 0.025]), ("early", [0.05, 0.025, 0.025, 0.0125])]
)
def test_a_shifted_drop_survives_an_interruption(tmp_path, monkeypatch, lr_drop, rates):
    """StepLR(2) over 4 epochs, killed in epoch 3 (0-based 2) and resumed: each run's lr per epoch is
    its schedule's, and the resumed run ends with the uninterrupted one's weights."""
    config = _config(epochs=4, lr_step=2, lr_drop=lr_drop)
    whole, resumed = _killed_in_epoch_3_then_resumed(config, tmp_path, monkeypatch)
    _assert_same_weights(whole, resumed)
    assert [row["lr"] for row in _state(resumed)[1]["history"]] == pytest.approx(rates, rel=1e-12)


def test_warmup_epochs_keep_sigma_fixed(tmp_path):
    out = train(_config(train_mode="ds", epochs=1, warmup_epochs=1), tmp_path / "warm.pt", progress=False)
    assert torch.all(load_sigma_table(out) == 0.25)


@pytest.mark.parametrize(
    ("objective", "c_a_rule"), [("fixed_class", "clean"), ("fixed_class", "smoothed"), ("released", "clean")]
)
def test_algorithm_1_never_sees_labels(tmp_path, monkeypatch, objective, c_a_rule):
    """One batch per epoch, so Algorithm 1 runs on the initial model for every example: with
    poisoned labels the weights differ but the σ table must be bit-identical; c_A is the model's
    own (clean or smoothed) prediction under ``fixed_class``, and ``released`` takes none. The
    table stores the σ Algorithm 1 returned for each input under that input's own index."""
    calls, returned = [], []
    real_optimize = data_dependent.optimize_sigma

    def spy(model, x, settings, c_a, **kwargs):
        if objective == "released":
            assert c_a is None and settings.objective == "released"
        elif c_a_rule == "clean":
            with torch.no_grad():
                assert torch.equal(c_a, model(x).argmax(dim=1))
        calls.append(settings)
        snapshots = real_optimize(model, x, settings, c_a, **kwargs)
        returned.append((x.detach().clone(), snapshots[-1].detach().clone()))
        return snapshots

    monkeypatch.setattr(data_dependent, "optimize_sigma", spy)
    config = _config(
        train_mode="ds",
        epochs=1,
        batch_size=2048,
        sigma_lr=0.05,
        sigma_objective=objective,
        c_a=c_a_rule,
        c_a_n0=4,
    )
    clean = train(config, tmp_path / "clean.pt", progress=False)

    real_load = feed_module.load_dataset

    def poisoned(name, split, **kwargs):
        dataset = real_load(name, split, **kwargs)
        if split != "train":
            return dataset
        return TensorImages(dataset.images, (torch.as_tensor(dataset.targets) + 3) % 10)

    monkeypatch.setattr(feed_module, "load_dataset", poisoned)
    dirty = train(config, tmp_path / "dirty.pt", progress=False)

    assert len(calls) == 2 and all(call.steps == (1,) and call.n == 1 for call in calls)
    # the digits training images are distinct and not augmented: each batch row names its index
    index_of = {image.numpy().tobytes(): i for i, image in enumerate(real_load("digits", "train").images)}
    for (x, sigma), path in zip(returned, (clean, dirty), strict=True):
        indices = torch.tensor([index_of[row.numpy().tobytes()] for row in x])
        assert sorted(indices.tolist()) == list(range(TRAIN_SIZE))
        assert torch.equal(load_sigma_table(path)[indices], sigma)
    assert torch.equal(load_sigma_table(clean), load_sigma_table(dirty))
    assert not torch.all(load_sigma_table(clean) == 0.25)
    weights_clean, weights_dirty = _state(clean)[0], _state(dirty)[0]
    assert any(not torch.equal(weights_clean[k], weights_dirty[k]) for k in weights_clean)


def _killed_in_epoch_3_then_resumed(config: TrainConfig, tmp_path, monkeypatch):
    """Train ``config`` whole, and again killed during epoch 3 (after epoch 2's checkpoint) then
    resumed; return both checkpoints. The killed run leaves none of its outputs, so Snakemake
    finds nothing half-written, only the checkpoint and the history so far beside them."""
    whole = train(config, tmp_path / "whole.pt", progress=False)

    real_evaluate, calls = trainer_module.evaluate, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_evaluate(*args, **kwargs)

    monkeypatch.setattr(trainer_module, "evaluate", interrupted)
    resumed, log, sigmas = tmp_path / "resumed.pt", tmp_path / "train.csv", tmp_path / "sigmas.tsv"
    with pytest.raises(KeyboardInterrupt):
        train(config, resumed, log=log, sigma_table=sigmas, progress=False)
    assert not resumed.exists() and _state(tmp_path / "resumed.pt.partial")[1]["epoch"] == 2
    assert not log.exists() and not sigmas.exists()
    assert pd.read_csv(tmp_path / "train.csv.partial")["epoch"].tolist() == [1, 2]

    monkeypatch.setattr(trainer_module, "evaluate", real_evaluate)
    train(config, resumed, log=log, sigma_table=sigmas, progress=False)
    assert pd.read_csv(log)["epoch"].tolist() == list(range(1, config.epochs + 1)) and sigmas.exists()
    assert not (tmp_path / "train.csv.partial").exists()
    return whole, resumed


def test_resume_after_interruption_equals_uninterrupted(tmp_path, monkeypatch):
    # the lr step falls after the interruption, so a lost scheduler state would show
    config = _config(train_mode="ds", epochs=4, lr_step=3, sigma_lr=0.05)
    whole, resumed = _killed_in_epoch_3_then_resumed(config, tmp_path, monkeypatch)
    _assert_same_weights(whole, resumed)

    # a finished run asked for more epochs continues from its checkpoint
    extended = tmp_path / "extended.pt"
    train(_config(train_mode="ds", epochs=2, lr_step=3, sigma_lr=0.05), extended, progress=False)
    train(config, extended, progress=False)
    _assert_same_weights(whole, extended)


@pytest.mark.parametrize("feed", ["device", "loader"])
def test_easy_focus_resume_equals_uninterrupted(tmp_path, monkeypatch, feed):
    """Sun et al.'s training as their code runs it, with discarding, reweighing and the attack all on
    after E_t = 2 plain epochs (0-based epoch 2 discards and re-estimates the weights): the run killed
    in that epoch resumes from the saved mask and weights and ends bit-identical to the
    uninterrupted one."""
    params = dict(m=2, start_epoch=2, threshold=0.1, discard_draws=20, reweigh_every=2, steps=2)
    config = _config(method="easy_focus", params=params, train_mode="ds", epochs=4, lr_step=3, sigma_lr=0.05, feed=feed)
    whole, resumed = _killed_in_epoch_3_then_resumed(config, tmp_path, monkeypatch)
    _assert_same_weights(whole, resumed)
    plan_whole, plan_resumed = _state(whole)[1]["epoch_plan"], _state(resumed)[1]["epoch_plan"]
    assert torch.equal(plan_whole["kept"], plan_resumed["kept"])
    assert torch.equal(plan_whole["weights"], plan_resumed["weights"])
    assert 0 < int(plan_whole["kept"].sum()) < TRAIN_SIZE  # some inputs were discarded, not all
    assert (plan_whole["weights"] > 1).any()  # and some weigh more than others
    distinct = [row["distinct_inputs"] for row in _state(whole)[1]["history"]]
    assert distinct[:2] == [TRAIN_SIZE] * 2 and all(d <= plan_whole["kept"].sum() for d in distinct[2:])


def test_resume_with_other_options_fails_naming_them_and_how_to_start_over(tmp_path):
    out = train(_config(epochs=1), tmp_path / "a.pt", progress=False)
    with pytest.raises(CheckpointError, match=rf"lr: 0.05 there, 0.1 now\).*resumes from {out}.*delete or move it"):
        train(_config(epochs=2, lr=0.1), out, progress=False)

    partial = tmp_path / "b.pt.partial"
    partial.write_bytes(out.read_bytes()[:200])
    with pytest.raises(CheckpointError, match=rf"{partial}: it is truncated or corrupt.*delete or move it"):
        train(_config(epochs=2), tmp_path / "b.pt", progress=False)


def test_train_leaves_the_callers_global_generator_alone(tmp_path):
    for feed in ("loader", "device"):
        torch.manual_seed(5)
        before = torch.get_rng_state()
        train(_config(epochs=1, feed=feed), tmp_path / f"{feed}.pt", progress=False)
        assert torch.equal(torch.get_rng_state(), before), feed


def test_an_empty_grad_scaler_state_resumes_with_a_fresh_scale(tmp_path, monkeypatch):
    """fp16 begun off CUDA saves a disabled scaler's empty state; resumed where the scaler is on
    (CUDA), the run starts a fresh scale instead of failing."""
    out = train(_config(epochs=1), tmp_path / "a.pt", progress=False)
    assert _state(out)[1]["scaler"] == {}
    scaler = torch.amp.GradScaler
    monkeypatch.setattr(trainer_module.torch.amp, "GradScaler", lambda device, enabled: scaler("cpu"))
    train(_config(epochs=2), out, progress=False)
    assert _state(out)[1]["scaler"]["scale"] > 0 and _state(out)[1]["epoch"] == 2


def test_fine_tuning_starts_from_the_given_checkpoint(tmp_path, digits_checkpoint):
    """With a tiny learning rate one epoch cannot teach a fresh model; starting from the trained
    checkpoint keeps its accuracy (DDRS §4.1 fine-tunes published models with Algorithm 2)."""
    config = _config(train_mode="ds", epochs=1, lr=1e-4)
    tuned = Trainer(
        _config(train_mode="ds", epochs=1, lr=1e-4, init=str(digits_checkpoint)), tmp_path / "tuned.pt", progress=False
    ).run()
    fresh = train(config, tmp_path / "fresh.pt", progress=False)
    assert _state(tuned)[1]["history"][0]["clean_accuracy"] > 0.85
    assert _state(fresh)[1]["history"][0]["clean_accuracy"] < 0.5
    assert _state(tuned)[1]["init"] == str(digits_checkpoint)
    assert _state(tuned)[1]["config"]["init"] == str(digits_checkpoint)


def test_fine_tuning_from_another_architecture_or_dataset_fails_naming_both(tmp_path, digits_checkpoint):
    with pytest.raises(
        CheckpointError,
        match=r"cannot fine-tune 'mlp256' on 'mnist5k' from init checkpoint .*'mlp' model for dataset 'digits'",
    ):
        train(
            _config(dataset="mnist5k", arch="mlp256", epochs=1, init=str(digits_checkpoint), data_root=str(tmp_path)),
            tmp_path / "x",
            progress=False,
        )
    with pytest.raises(CheckpointError, match=r"cannot fine-tune 'cnn' on 'digits' from init checkpoint .*'mlp' model"):
        train(_config(arch="cnn", epochs=1, init=str(digits_checkpoint)), tmp_path / "y.pt", progress=False)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        train(_config(epochs=1, init=str(tmp_path / "missing.pt")), tmp_path / "z.pt", progress=False)


def test_resuming_a_fine_tuning_run_does_not_need_its_init_checkpoint(tmp_path, digits_checkpoint):
    init = tmp_path / "init.pt"
    init.write_bytes(digits_checkpoint.read_bytes())
    whole = train(_config(epochs=2, lr=1e-3, init=str(init)), tmp_path / "whole.pt", progress=False)
    resumed = train(_config(epochs=1, lr=1e-3, init=str(init)), tmp_path / "resumed.pt", progress=False)
    init.unlink()
    train(_config(epochs=2, lr=1e-3, init=str(init)), resumed, progress=False)
    _assert_same_weights(whole, resumed)


def test_cli_init_flag_fine_tunes_and_resuming_from_another_init_is_refused(tmp_path, digits_checkpoint):
    out = tmp_path / "tuned.pt"
    flags = ["train", "--dataset", "digits", "--arch", "mlp", "--method", "cohen", "--sigma", "0.25"]
    flags += ["--epochs", "1", "--eval-max", "50", "--device", "cpu", "--no-progress", "--out", str(out)]
    assert main([*flags, "--init", str(digits_checkpoint)]) == 0
    saved = load_checkpoint(out)[1]["config"]
    assert saved["init"] == str(digits_checkpoint)
    with pytest.raises(CheckpointError, match=r"other options \(init: '.*digits_mlp.pt' there, None now\)\."):
        train(TrainConfig.from_mapping({**saved, "init": None, "epochs": 2}), out, progress=False)


def _step_sizes(config: TrainConfig, tmp_path) -> list[int]:
    """Train one epoch; the number of inputs of every SGD step's batch (one loss call per step), in order."""
    seen = []
    trainer = Trainer(config, tmp_path / f"{config.method}_{config.noise_batching}.pt", progress=False)
    real_loss = trainer.loss_fn

    def recording_loss(model, x, *args):
        seen.append(len(x))
        return real_loss(model, x, *args)

    trainer.loss_fn = recording_loss
    trainer.run()
    return seen


def test_split_noise_batching_cuts_each_batch_into_m_steps_of_batch_size_noisy_samples(tmp_path):
    """Jeong & Shin's train_consistency.py and Salman et al.'s train_pgd.py: m chunks of a batch,
    one SGD step each, so a step sees batch_size noisy samples; ours (whole) sees batch_size·m."""
    common = dict(epochs=1, batch_size=128, eval_max=50)
    whole = _step_sizes(_config(method="cohen", params={"m": 4}, **common), tmp_path)
    split = _step_sizes(_config(method="cohen", params={"m": 4}, noise_batching="split", **common), tmp_path)
    full, last = divmod(TRAIN_SIZE, 128)
    assert whole == [128] * full + [last]
    assert split == [32] * (4 * full) + [len(c) for c in torch.arange(last).tensor_split(4)]
    assert sum(split) == TRAIN_SIZE  # every input once, none dropped
    # MACER's authors keep the whole batch, so split leaves it alone
    macer = _config(method="macer", params={"m": 4}, noise_batching="split", **common)
    assert macer.chunks == 1 and _step_sizes(macer, tmp_path) == whole


def test_split_with_one_draw_trains_exactly_as_whole(tmp_path):
    a = train(_config(epochs=1), tmp_path / "a.pt", progress=False)
    b = train(_config(epochs=1, noise_batching="split"), tmp_path / "b.pt", progress=False)
    _assert_same_weights(a, b)


@pytest.mark.parametrize(("mode", "updates"), [("eval", 0), ("train", 2)])
def test_algorithm2_runs_the_model_in_the_configured_mode(mode, updates):
    """sigma_model_mode: eval leaves batch-norm's running statistics alone; train (the DDRS scripts'
    get_sigma) normalises each σ step's noisy batch by itself and updates them once per step."""
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10), torch.nn.BatchNorm1d(10)).train()
    config = _config(train_mode="ds", k=2, sigma_lr=0.1, sigma_model_mode=mode)
    sigma = data_dependent.optimize_batch_sigma(
        model, torch.rand(8, 1, 8, 8), torch.full((8,), 0.25), config, num_classes=10,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    assert sigma.shape == (8,) and model.training
    assert int(model[2].num_batches_tracked) == updates


def test_split_needs_a_batch_size_that_m_divides():
    with pytest.raises(ValueError, match="batch_size 100 is not a multiple of it"):
        _config(method="consistency", params={"m": 3}, noise_batching="split", batch_size=100)
    with pytest.raises(ValueError, match=r"unknown noise_batching 'chunks'; choose one of \['whole', 'split'\]"):
        _config(noise_batching="chunks")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"method": "adversarial"}, "unknown training method 'adversarial'"),
        ({"train_mode": "dd"}, "unknown train_mode 'dd'"),
        ({"sigma": 0.0}, "sigma must be a positive number"),
        ({"sigma": -0.5}, "sigma must be a positive number"),
        ({"params": {"m": 0}, "method": "macer"}, "m must be >= 1"),
        ({"params": {"steps": 2}, "method": "macer"}, r"unknown macer option\(s\) \['steps'\]"),
        ({"memory_format": "nhwc"}, "unknown memory_format 'nhwc'"),
        ({"seed": -1}, r"seed must be an integer in \[0, 2\*\*32\), got -1"),
        ({"seed": 2**32}, r"seed must be an integer in \[0, 2\*\*32\), got 4294967296"),
        ({"feed": "gpu"}, r"unknown feed 'gpu'; choose one of \['auto', 'loader', 'device'\]"),
        ({"sigma_model_mode": "batch"}, r"unknown sigma_model_mode 'batch'; choose one of \['eval', 'train'\]"),
        ({"lr_drop": "code"}, r"unknown lr_drop 'code'; choose one of \['paper', 'late', 'early'\]"),
        (
            {"dataset": "imagenet", "arch": "resnet50", "feed": "device"},
            "feed 'device' holds the training split on the training device, which imagenet does not fit",
        ),
    ],
)
def test_bad_options_fail_clearly(overrides, message):
    with pytest.raises(ValueError, match=message):
        _config(**overrides)


def test_cli_trains_from_yaml_with_flag_overrides(tmp_path):
    config_file = tmp_path / "train.yaml"
    config_file.write_text(
        yaml.safe_dump(
            {
                "dataset": "digits",
                "arch": "mlp",
                "method": "uniform",
                "sigma": 0.5,
                "epochs": 1,
                "batch_size": 256,
                "lr": 0.05,
                "eval_max": 100,
                "device": "cpu",
                "train_mode": "ds",
                "uniform_convention": "half_width",
            }
        )
    )
    out, log, table = tmp_path / "m.pt", tmp_path / "m.csv", tmp_path / "m.tsv"
    code = main(
        [
            "train",
            "--config",
            str(config_file),
            "--sigma",
            "0.25",
            "--lr-milestones",
            "5",
            "10",
            "--no-augment",
            "--out",
            str(out),
            "--log",
            str(log),
            "--sigma-table",
            str(table),
            "--no-progress",
        ]
    )
    assert code == 0
    _, meta = load_checkpoint(out)
    assert meta["method"] == "uniform" and meta["noise"] == "uniform" and meta["train_mode"] == "ds"
    assert meta["config"]["sigma"] == 0.25 and meta["config"]["lr_milestones"] == [5, 10]
    assert meta["config"]["augment"] is False and meta["scale"] == 0.25
    assert len(pd.read_csv(log)) == 1 and len(pd.read_csv(table, sep="\t")) == TRAIN_SIZE


def test_cli_flags_override_the_method_options_of_a_saved_config(tmp_path):
    """A YAML holding ``params:`` (a checkpoint's saved config) is the method's section by another
    name: a flag overrides one of its options, the others stay."""
    config_file = tmp_path / "train.yaml"
    saved = _config(method="macer", epochs=1, eval_max=50, params={"m": 2, "lam": 3.0}).to_dict()
    config_file.write_text(yaml.safe_dump(saved))
    out = tmp_path / "m.pt"
    assert main(["train", "--config", str(config_file), "--macer-m", "3", "--out", str(out), "--no-progress"]) == 0
    params = load_checkpoint(out)[1]["config"]["params"]
    assert params["m"] == 3 and params["lam"] == 3.0


def test_cli_errors_name_the_problem(tmp_path, capsys):
    config_file = tmp_path / "bad.yaml"
    config_file.write_text("dataset: digits\narch: mlp\nmethod: cohen\nsigma: 0.25\nlearning_rate: 0.1\n")
    out = str(tmp_path / "x.pt")
    assert main(["train", "--config", str(config_file), "--out", out]) == 2
    assert "unknown training option(s) ['learning_rate']" in capsys.readouterr().err

    assert (
        main(["train", "--dataset", "digits", "--arch", "mlp", "--method", "cohen", "--sigma", "-1", "--out", out]) == 2
    )
    assert "sigma must be a positive number" in capsys.readouterr().err

    assert main(["train", "--dataset", "digits", "--arch", "mlp", "--method", "cohen", "--out", out]) == 2
    assert "missing required training option(s) ['sigma']" in capsys.readouterr().err

    with pytest.raises(SystemExit) as excinfo:
        main(["train", "--dataset", "digits", "--arch", "mlp", "--method", "gauss", "--sigma", "0.25", "--out", out])
    assert excinfo.value.code == 2
    assert "invalid choice: 'gauss'" in capsys.readouterr().err


def test_uniform_sigma_is_the_half_width_unless_yang_std_is_asked_for():
    assert _config(method="uniform").initial_sigma == 0.25
    yang = _config(method="uniform", uniform_convention="yang_std", min_sigma=0.01)
    assert yang.initial_sigma == pytest.approx(0.25 * 3**0.5)
    assert yang.algorithm1.min_sigma == pytest.approx(0.01 * 3**0.5)
    assert _config(method="cohen", uniform_convention="yang_std").initial_sigma == 0.25


def test_a_diverging_run_stops_with_a_clear_error(tmp_path):
    with pytest.raises(FloatingPointError, match="training diverged in epoch 1: the mean cohen loss is nan"):
        train(_config(epochs=1, lr=1e30), tmp_path / "diverged.pt", progress=False)


def test_weights_a_nan_gradient_left_behind_stop_the_run_though_the_loss_is_finite(tmp_path):
    """sqrt(0 · f(x)) is 0 with a NaN gradient (∞ · 0), in the epoch's one step: its loss is finite,
    the weights after it are not."""
    trainer = Trainer(_config(epochs=1, batch_size=4096), tmp_path / "nan.pt", progress=False)
    trainer.loss_fn = lambda model, x, *rest: torch.sqrt(0 * model(x).sum())
    with pytest.raises(FloatingPointError, match=r"in epoch 1: \d+ weight tensors are no longer finite \(first 1\."):
        trainer.run()
    assert not (tmp_path / "nan.pt").exists()


def test_loader_workers_train_exactly_as_the_training_process_without_augmentation(tmp_path):
    """Workers only move loading elsewhere: same shuffled order, same batches, same weights."""
    common = dict(epochs=1, augment=False, eval_max=50, feed="loader")
    a = train(_config(**common), tmp_path / "a.pt", progress=False)
    b = train(_config(num_workers=2, **common), tmp_path / "b.pt", progress=False)
    _assert_same_weights(a, b)


class _Jittered:
    """The training split with a random flip and jitter drawn from torch's global generator, as
    torchvision's crops and flips draw."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        x, y = self.dataset[index]
        if torch.rand(()) < 0.5:
            x = x.flip(-1)
        return x + 0.1 * torch.rand_like(x), y


@pytest.fixture
def augmented(monkeypatch):
    """``load_dataset`` of the training feed returns an augmented training split."""
    real_load = feed_module.load_dataset

    def load(name, split, **kwargs):
        dataset = real_load(name, split, **kwargs)
        return _Jittered(dataset) if split == "train" else dataset

    monkeypatch.setattr(feed_module, "load_dataset", load)


def test_augmentation_does_not_depend_on_loader_workers(tmp_path, augmented):
    """Every input's augmentation is seeded from (seed, epoch, idx): the persistent workers of a
    two-epoch run draw the crops of the training process."""
    common = dict(epochs=2, eval_max=50, feed="loader")
    a = train(_config(**common), tmp_path / "a.pt", progress=False)
    b = train(_config(num_workers=2, **common), tmp_path / "b.pt", progress=False)
    _assert_same_weights(a, b)


def test_augmented_resume_with_workers_equals_uninterrupted(tmp_path, monkeypatch, augmented):
    config = _config(epochs=4, lr_step=3, num_workers=2, eval_max=50, feed="loader")
    whole, resumed = _killed_in_epoch_3_then_resumed(config, tmp_path, monkeypatch)
    _assert_same_weights(whole, resumed)


def test_augmented_inputs_differ_between_epochs_and_seeds():
    from ddrs.training.loader_feed import IndexedDataset

    dataset = _Jittered(TensorImages(torch.zeros(4, 1, 8, 8), [0, 1, 2, 3]))
    keyed = IndexedDataset(dataset, seed=0)
    state = torch.random.get_rng_state()
    x, y, index = keyed[(3, 2, 0)]
    assert torch.equal(torch.random.get_rng_state(), state)  # the caller's generator is untouched
    assert (y, index) == (2, 2) and torch.equal(keyed[(3, 2, 0)][0], x)
    assert not torch.equal(keyed[(4, 2, 0)][0], x) and not torch.equal(keyed[(3, 1, 0)][0], x)
    assert not torch.equal(keyed[(3, 2, 1)][0], x)  # a second visit in the epoch: its own draws
    assert not torch.equal(IndexedDataset(dataset, seed=1)[(3, 2, 0)][0], x)


def test_one_loader_per_run_with_persistent_workers(tmp_path, monkeypatch):
    built = []
    real_loader = feed_module.training_loader

    def spy(*args, **kwargs):
        built.append(real_loader(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(feed_module, "training_loader", spy)
    train(_config(epochs=2, num_workers=1, eval_max=50, feed="loader"), tmp_path / "a.pt", progress=False)
    assert len(built) == 1 and built[0].persistent_workers and built[0].sampler.epoch == 1
    assert not real_loader(
        TensorImages(torch.zeros(2, 1, 8, 8), [0, 1]), _config(), torch.device("cpu")
    ).persistent_workers


#: ResNet-18 on the 16 CIFAR-shaped images of :func:`_tiny_cifar`, 8 a batch
TINY_CIFAR = dict(dataset="cifar10", arch="resnet18", batch_size=8, eval_max=8)


def _tiny_cifar(monkeypatch):
    """The trainer's datasets are 16 random CIFAR-shaped images."""
    images = torch.rand(16, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    labels = [i % 10 for i in range(16)]
    for module in (trainer_module, feed_module):  # the test split, the training split
        monkeypatch.setattr(module, "load_dataset", lambda *args, **kwargs: TensorImages(images, labels))


def test_channels_last_lays_out_the_model_and_its_batches(tmp_path, monkeypatch):
    """``memory_format: channels_last`` on the CPU (ResNet-18 on 16 random CIFAR-shaped images):
    the weights and every batch the loss sees are channels-last, ``auto`` keeps both contiguous,
    the first step's loss agrees up to float error, and the setting may change on resume."""
    _tiny_cifar(monkeypatch)

    def steps(memory_format, out, epochs=1):
        """(batch channels-last, first conv's weight channels-last, loss) of every SGD step."""
        config = _config(**TINY_CIFAR, epochs=epochs, memory_format=memory_format)
        trainer, seen = Trainer(config, out, progress=False), []
        loss_fn = trainer.loss_fn

        def spy(model, x, *rest):
            conv = next(module for module in model.modules() if isinstance(module, torch.nn.Conv2d))
            loss = loss_fn(model, x, *rest)
            layout = torch.channels_last
            seen.append(
                (
                    x.is_contiguous(memory_format=layout),
                    conv.weight.is_contiguous(memory_format=layout),
                    float(loss.detach()),
                )
            )
            return loss

        trainer.loss_fn = spy
        trainer.run()
        return seen

    last, plain = steps("channels_last", tmp_path / "last.pt"), steps("auto", tmp_path / "plain.pt")
    assert all(x and w for x, w, _ in last) and not any(x or w for x, w, _ in plain)
    assert last[0][2] == pytest.approx(plain[0][2], rel=1e-5)
    assert not any(x for x, _, _ in steps("contiguous", tmp_path / "last.pt", epochs=2))  # resumed in the other layout


def test_activation_recomputation_trains_the_same_weights_and_may_switch_on_resume(tmp_path, monkeypatch):
    """Two epochs of ResNet-18 (batch-norm) plain, recomputed after 4 cuts, and one epoch plain
    continued with recomputation (a runtime setting): the same weights and running statistics."""
    _tiny_cifar(monkeypatch)
    plain = train(_config(**TINY_CIFAR), tmp_path / "plain.pt", progress=False)
    recomputed = train(_config(**TINY_CIFAR, activation_checkpoints=4), tmp_path / "recomputed.pt", progress=False)
    switched = tmp_path / "switched.pt"
    train(_config(**TINY_CIFAR, epochs=1), switched, progress=False)
    train(_config(**TINY_CIFAR, activation_checkpoints=4), switched, progress=False)

    reference, _ = _state(plain)
    for path in (recomputed, switched):
        state, _ = _state(path)
        assert state.keys() == reference.keys()
        for key, value in state.items():
            assert torch.allclose(value.float(), reference[key].float(), rtol=1e-5, atol=1e-6), key
    with pytest.raises(ValueError, match="activation_checkpoints must be >= 0, got -1"):
        _config(activation_checkpoints=-1)


def test_cli_pin_memory_flag_is_a_switch():
    import argparse

    from ddrs.cli import train as train_cli

    parser = argparse.ArgumentParser()
    train_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(
        ["train", "--out", "m.pt", "--no-pin-memory", "--num-workers", "3", "--activation-checkpoints", "10"]
    )
    assert args.pin_memory is False and args.num_workers == 3 and args.activation_checkpoints == 10
    assert parser.parse_args(["train", "--out", "m.pt"]).pin_memory is None  # not given: on CUDA only


def test_the_device_feed_trains_exactly_as_the_loader_without_augmentation(tmp_path):
    """digits is never augmented: held on the device, it gives the DataLoader's batches in the same
    order, so the same weights (``auto`` picks the device feed for it)."""
    assert _config().resolved_feed == "device"
    assert _config(dataset="imagenet", arch="resnet50").resolved_feed == "loader"
    a = train(_config(feed="loader"), tmp_path / "a.pt", progress=False)
    b = train(_config(feed="device"), tmp_path / "b.pt", progress=False)
    _assert_same_weights(a, b)


def _cifar_config(root, **overrides) -> TrainConfig:
    """ResNet-18 on the 20 training images of a CIFAR-10 archive in torchvision's format."""
    values = dict(
        dataset="cifar10", arch="resnet18", batch_size=8, eval_max=4, data_root=str(root), epochs=4, lr_step=3
    )
    return _config(**{**values, **overrides})


def test_device_feed_augmented_resume_equals_uninterrupted(tmp_path, monkeypatch):
    """Crops and flips drawn on the device from (seed, epoch, idx): a run killed in epoch 3 and
    resumed ends with the weights of an uninterrupted one; the checkpoint says which feed augmented."""
    install_cifar10(tmp_path, monkeypatch, per_batch=4)
    whole, resumed = _killed_in_epoch_3_then_resumed(_cifar_config(tmp_path), tmp_path, monkeypatch)
    _assert_same_weights(whole, resumed)
    assert _state(whole)[1]["augmented_by"] == "device"


@pytest.mark.parametrize(
    ("method", "option", "old", "other"),
    [
        (None, "sigma_model_mode", "eval", "train"),
        (None, "lr_drop", "paper", "late"),
        ("macer", "form", "zhai", "released"),
        ("stability", "divergence", "kl", "cross_entropy"),
    ],
)
def test_a_checkpoint_older_than_an_option_resumes_under_what_it_was_trained_with(tmp_path, method, option, old, other):
    """A checkpoint saved before an option existed lacks it: it resumes under the value that trains
    as the code then did, and is refused, naming that value, under any other."""

    def config(epochs: int, value: str) -> TrainConfig:
        if method is None:  # a TrainConfig field (sigma_model_mode: Algorithm 2's σ steps)
            return _config(epochs=epochs, train_mode="ds", sigma_lr=0.05, eval_max=50, **{option: value})
        params = {"m": 2} if method == "macer" else {}
        return _config(epochs=epochs, method=method, eval_max=50, params={**params, option: value})

    train(config(1, old), tmp_path / "old.pt", progress=False)
    model, meta = load_checkpoint(tmp_path / "old.pt")
    saved = meta["config"] if method is None else meta["config"]["params"]
    del saved[option]  # as a checkpoint written before the option existed
    save_checkpoint(tmp_path / "old.pt", model, **meta)

    with pytest.raises(CheckpointError, match=f"trained with other options.*'{old}'.* there"):
        train(config(2, other), tmp_path / "old.pt", progress=False)
    train(config(2, old), tmp_path / "old.pt", progress=False)
    assert load_checkpoint(tmp_path / "old.pt")[1]["epoch"] == 2


def test_resuming_under_the_other_feeds_augmentation_is_refused(tmp_path, monkeypatch):
    install_cifar10(tmp_path, monkeypatch, per_batch=4)
    out = tmp_path / "loader.pt"
    train(_cifar_config(tmp_path, epochs=1, feed="loader"), out, progress=False)
    with pytest.raises(CheckpointError, match="augmented by the loader feed.*set feed: loader to resume it"):
        train(_cifar_config(tmp_path, epochs=2), out, progress=False)
    train(_cifar_config(tmp_path, epochs=2, feed="loader"), out, progress=False)  # the same feed resumes

    # a checkpoint from before the device feed records no feed: its inputs were augmented by the loader
    model, meta = load_checkpoint(out)
    del meta["augmented_by"]
    save_checkpoint(tmp_path / "old.pt", model, **meta)
    with pytest.raises(CheckpointError, match="augmented by the loader feed"):
        train(_cifar_config(tmp_path, epochs=3), tmp_path / "old.pt", progress=False)
    train(_cifar_config(tmp_path, epochs=3, feed="loader"), tmp_path / "old.pt", progress=False)

    # without augmentation the feeds train alike, so either resumes the other's run
    plain = tmp_path / "plain.pt"
    train(_cifar_config(tmp_path, epochs=1, augment=False, feed="loader"), plain, progress=False)
    train(_cifar_config(tmp_path, epochs=2, augment=False), plain, progress=False)
