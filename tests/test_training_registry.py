"""The method registry: every entry's loss (and epoch plan) imports and trains a step, every
hyper-parameter dataclass refuses bad values naming them, and ``ddrs train`` runs every new method
from the command line in both training modes."""

from __future__ import annotations

import dataclasses
import typing

import pandas as pd
import pytest
import torch

from ddrs.cli import main
from ddrs.methods import METHODS, get_method
from ddrs.models import build_model, load_checkpoint


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_loss_imports_and_gives_a_finite_differentiable_scalar(name):
    method = get_method(name)
    params = method.make_params({"m": 2} if any(f.name == "m" for f in dataclasses.fields(method.params)) else {})
    model = build_model("mlp", "digits").train()
    x, y = torch.rand(8, 1, 8, 8), torch.arange(8) % 10
    loss = method.load_loss()(model, x, y, torch.full((8,), 0.25), torch.Generator().manual_seed(0), params, 0)
    loss.backward()
    assert loss.ndim == 0 and torch.isfinite(loss)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())
    if method.epoch_plan:
        assert callable(method.load_epoch_plan())
    else:
        assert method.load_epoch_plan() is None


def _numeric_fields(name: str) -> list[str]:
    params = get_method(name).params
    hints = typing.get_type_hints(params)
    return [f.name for f in dataclasses.fields(params) if hints[f.name] in (int, float)]


@pytest.mark.parametrize(
    ("name", "field"), [(name, field) for name in sorted(METHODS) for field in _numeric_fields(name)]
)
def test_every_numeric_hyper_parameter_refuses_a_negative_value_naming_it(name, field):
    with pytest.raises(ValueError, match=rf"^{field} must"):
        get_method(name).make_params({field: -1})


@pytest.mark.parametrize(
    ("name", "values", "message"),
    [
        ("consistency", {"m": 1}, "m must be >= 2"),
        (
            "consistency",
            {"divergence": "js"},
            r"divergence must be one of \['mean_kl', 'mean_cross_entropy', 'pairwise_mse'\], got 'js'",
        ),
        ("consistency", {"divergence": "kl"}, r"divergence 'kl' was renamed 'mean_kl' \(the same term"),
        ("smoothadv_consistency", {"divergence": "ce"}, r"divergence 'ce' was renamed 'mean_cross_entropy'"),
        ("smoothadv_consistency", {"steps": 0}, "steps must be >= 1"),
        ("smoothadv_consistency", {"m": 1}, "m must be >= 2"),
        ("easy_focus", {"threshold": 1.5}, r"threshold must lie in \[0, 1\]"),
        ("easy_focus", {"reweigh_alpha": 0.0}, r"reweigh_alpha must lie in \(0, 1\)"),
        ("easy_focus", {"p_min": 0.5}, r"p_min must lie in \(0.5, 1\]"),
        ("easy_focus", {"epsilon": 0.0}, "epsilon must be > 0"),
        ("easy_focus", {"reweigh_every": 0}, "reweigh_every must be >= 1"),
        ("easy_focus", {"gamma": 1.0}, r"unknown easy_focus option\(s\) \['gamma'\]"),
    ],
)
def test_bad_hyper_parameters_fail_clearly(name, values, message):
    with pytest.raises(ValueError, match=message):
        get_method(name).make_params(values)


def test_defaults_are_the_papers():
    assert get_method("consistency").make_params() == get_method("consistency").params(
        m=2, lam=10.0, eta=0.5, divergence="mean_kl"
    )
    easy = get_method("easy_focus").make_params()
    assert (easy.m, easy.start_epoch, easy.threshold, easy.steps, easy.epsilon) == (4, 70, 0.4, 6, 0.25)
    assert (easy.discard_draws, easy.reweigh_draws, easy.reweigh_alpha, easy.p_min, easy.reweigh_every) == (
        100,
        16,
        0.1,
        0.75,
        10,
    )
    assert get_method("stability").make_params().gamma == 2.0


# per method: flags of ``ddrs train`` that make one tiny epoch exercise the method's every part
FLAGS = {
    "consistency": ["--consistency-m", "3", "--consistency-lam", "5", "--consistency-divergence", "pairwise_mse"],
    "smoothadv_consistency": ["--smoothadv-consistency-steps", "1", "--smoothadv-consistency-epsilon", "0.5"],
    "stability": ["--stability-gamma", "1.5"],
    # E_t = 1 counted from 1 (Algorithm 2) with p_t = 0: discard (nothing), reweigh and attack all run
    # in the one epoch
    "easy_focus": [
        "--easy-focus-schedule",
        "paper",
        "--easy-focus-start-epoch",
        "1",
        "--easy-focus-threshold",
        "0",
        "--easy-focus-m",
        "2",
        "--easy-focus-steps",
        "2",
        "--easy-focus-discard-draws",
        "10",
    ],
}


@pytest.mark.parametrize("mode", ["fs", "ds"])
@pytest.mark.parametrize("name", sorted(FLAGS))
def test_cli_trains_every_new_method_in_both_modes(tmp_path, name, mode):
    out, log = tmp_path / f"{name}.pt", tmp_path / f"{name}.csv"
    common = ["--dataset", "digits", "--arch", "mlp", "--epochs", "1", "--eval-max", "50", "--sigma", "0.25"]
    flags = ["train", *common, "--method", name, "--train-mode", mode, "--device", "cpu", "--no-progress"]
    assert main([*flags, *FLAGS[name], "--out", str(out), "--log", str(log)]) == 0

    _, meta = load_checkpoint(out)
    assert meta["method"] == name and meta["train_mode"] == mode
    given = dict(zip(FLAGS[name][::2], FLAGS[name][1::2], strict=True))
    prefix = f"--{name.replace('_', '-')}-"
    for flag, value in given.items():
        saved = meta["config"]["params"][flag.removeprefix(prefix).replace("-", "_")]
        assert str(saved) == value or float(saved) == float(value)
    row = pd.read_csv(log).iloc[0]
    assert pd.notna(row["loss"]) and row["loss"] > 0
    if name == "easy_focus":  # |D| draws with replacement, by weight: many inputs drawn twice
        assert meta["epoch_plan"]["kept"].all() and row["distinct_inputs"] < 1257
        assert (meta["epoch_plan"]["weights"] >= 1).all()
    else:
        assert "epoch_plan" not in meta and row["distinct_inputs"] == 1257


def test_ablation_variants_name_every_combination_and_set_only_their_switches():
    from ddrs.methods import METHODS, get_method, variant_params

    variants = METHODS["easy_focus"].variants()
    assert (
        len(variants) == 8 and variants[0] == "easy_focus.none" and variants[-1] == "easy_focus.discard+reweigh+attack"
    )
    assert variant_params("easy_focus.reweigh") == {"discard": False, "reweigh": True, "attack": False}
    assert variant_params("easy_focus") == {} and get_method("easy_focus.none") is METHODS["easy_focus"]
    assert METHODS["cohen"].variants() == []
    with pytest.raises(ValueError, match="ablation components are"):
        variant_params("easy_focus.dropout")


def test_a_train_config_names_the_method_not_a_variant():
    from ddrs.training import TrainConfig

    for variant, method in (("easy_focus.none", "easy_focus"), ("smoothadv@smoothadv_consistency", "smoothadv")):
        with pytest.raises(ValueError, match=f"a variant of '{method}'; train '{method}' with the variant's options"):
            TrainConfig(dataset="digits", arch="mlp", method=variant, sigma=0.25)


def test_a_matched_variant_shares_the_other_methods_resolved_values_and_keeps_its_own_rest():
    """Jeong & Shin's SmoothAdv baseline runs SmoothAdv+Consistency's attack (supplement A.3, App. B),
    per-σ overrides included; Sun et al.'s Gaussian baseline the m of their method (§6)."""
    from ddrs.methods import METHODS, variant_options
    from ddrs.training import TrainConfig

    train = {
        "smoothadv": {"steps": 2, "epsilon": 0.25, "m": 1, "warmup": 3},
        "smoothadv_consistency": {"epsilon": 0.99609375, "m": 4, "lam": 2.0},  # steps, warm-up: its defaults
        "easy_focus": {"m": 4, "start_epoch": 5},
    }
    shared = variant_options("smoothadv@smoothadv_consistency", train)
    assert shared == {"steps": 10, "epsilon": 0.99609375, "m": 4, "warmup": 10}
    assert variant_options("smoothadv", train) == train["smoothadv"]  # the DDRS tables keep §4.2's attack
    assert variant_options("cohen@easy_focus", train) == {"m": 4}
    assert variant_options("cohen@easy_focus", {}) == {"m": 4}  # EasyFocus's default m
    assert variant_options("easy_focus.attack", train) == {
        "m": 4,
        "start_epoch": 5,
        "discard": False,
        "reweigh": False,
        "attack": True,
    }
    assert METHODS["smoothadv"].matched_variants() == ["smoothadv@smoothadv_consistency"]
    assert METHODS["cohen"].matched_variants() == ["cohen@easy_focus"]
    assert METHODS["smoothadv"].variants() == []  # not an ablation: Sun et al.'s Table 3 stays as it is
    built = TrainConfig(dataset="digits", arch="mlp", method="smoothadv", sigma=0.25, params=shared)
    assert (built.params.steps, built.params.m) == (10, 4)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("macer@consistency", r"'macer@consistency': macer is matched to no method, not 'consistency'"),
        ("smoothadv@easy_focus", r"smoothadv is matched to \['smoothadv_consistency'\], not 'easy_focus'"),
        ("smoothadv@nothing", r"smoothadv is matched to \['smoothadv_consistency'\], not 'nothing'"),
        ("easy_focus.attack@cohen", "a matched variant combines a plain method name"),
        ("gaussian@easy_focus", "unknown training method 'gaussian@easy_focus'"),
    ],
)
def test_bad_matched_variants_fail_naming_the_choices(name, message):
    from ddrs.methods import variant_options

    with pytest.raises(ValueError, match=message):
        variant_options(name, {})


def test_a_matched_variant_checks_the_other_methods_section():
    from ddrs.methods import variant_options

    with pytest.raises(ValueError, match=r"smoothadv@smoothadv_consistency: smoothadv_consistency: unknown"):
        variant_options("smoothadv@smoothadv_consistency", {"smoothadv_consistency": {"attack_steps": 3}})
