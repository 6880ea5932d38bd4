"""The `ddrs` entry point: sub-command discovery, start-up without torch, and the options every command shares."""

import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
import torch

from ddrs.cli import INTERNAL, THREAD_VARIABLES, build_parser, command_modules, main, plain_text
from ddrs.data import load_labels
from ddrs.logs.work_time import WORK_LINE, work_seconds


def run_ddrs(*argv: str, after: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    """``ddrs argv`` in a fresh interpreter; ``after`` runs once main returned or exited (e.g. prints state)."""
    code = (
        "import sys\nfrom ddrs.cli import main\n"
        f"try:\n    code = main({list(argv)!r})\nexcept SystemExit as exit_:\n    code = exit_.code\n"
        f"{after}\nsys.exit(code)"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_every_pipeline_step_is_a_command():
    commands = build_parser(command_modules())._subparsers._group_actions[0].choices
    assert set(commands) == {
        "prepare-data", "train", "import-checkpoint", "certify", "optimize-sigma", "memory", "table", "plot", "batch",
        "gradient-norms", "logs", "job", "build", "provenance", "show", "audit",
    }  # fmt: skip


def test_command_names_are_module_names():
    assert command_modules()["import-checkpoint"] == "ddrs.cli.import_checkpoint"
    for name in ("table", "memory", "plot"):
        assert set(build_parser([name])._subparsers._group_actions[0].choices) == {name}


def test_help_lists_the_users_commands_and_the_internal_ones_still_run(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    listing = capsys.readouterr().out
    for command in ("certify", "train", "table", "plot", "optimize-sigma", "memory", "logs", "provenance"):
        assert f"\n    {command} " in listing, listing
    assert INTERNAL == {"batch", "build", "job"}
    for command in INTERNAL:
        assert f" {command} " not in listing and f"'{command}'" not in listing, listing
    with pytest.raises(SystemExit):
        main(["no-such-command"])
    assert "'certify'" in (error := capsys.readouterr().err) and "'job'" not in error, error
    for command in INTERNAL:  # named, each runs as before
        with pytest.raises(SystemExit) as exit_:
            main([command, "--help"])
        assert exit_.value.code == 0 and f"usage: ddrs {command}" in capsys.readouterr().out


#: what Sphinx markup looks like in printed text: ``code`` and :role:`target`
SPHINX_MARKUP = re.compile(r"``|:[a-z]+(?::[a-z]+)?:`")


def every_parser() -> dict[str, argparse.ArgumentParser]:
    """The parser of ``ddrs`` and of each command, sub-commands (``ddrs logs fetch``) included, by command line."""
    parsers = {}

    def walk(parser, words):
        parsers[" ".join(words)] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, subparser in action.choices.items():
                    walk(subparser, [*words, name])

    walk(build_parser(command_modules()), ["ddrs"])
    return parsers


def every_help() -> dict[str, str]:
    """``ddrs --help`` and each command's, every option group shown, by command line."""
    return {words: parser.format_help() for words, parser in every_parser().items()}


def test_help_texts_are_plain_text():
    helps = every_help()
    assert {"ddrs", "ddrs certify", "ddrs job", "ddrs logs fetch"} <= set(helps)
    marked = {words: SPHINX_MARKUP.findall(text) for words, text in helps.items() if SPHINX_MARKUP.search(text)}
    assert not marked, marked
    # the docstrings behind them keep their markup, printed plain, a cross-reference as its last name
    assert "(job_plan), files on the command line" in " ".join(helps["ddrs job"].split())
    assert plain_text(":class:`~ddrs.core.settings.CertifySettings` and ``--out``") == "CertifySettings and --out"
    assert plain_text("(:func:`ddrs.logs.certification_log.kept_partials`)") == "(kept_partials)"


#: a dotted path into the package, as a help text must not name one
MODULE_PATH = re.compile(r"\bddrs(?:\.\w+)+")


def every_option() -> dict[str, list[argparse.Action]]:
    """The options of ``ddrs`` and of each command (help and sub-command actions left out), by command line."""
    return {
        words: [
            action
            for action in parser._actions
            if not isinstance(action, (argparse._SubParsersAction, argparse._HelpAction)) and action.option_strings
        ]
        for words, parser in every_parser().items()
    }


def test_every_option_of_every_command_has_a_help_line_and_no_help_names_a_module_path():
    options = every_option()
    assert {"ddrs certify", "ddrs logs rank", "ddrs train"} <= set(options)
    bare = {
        f"{words} {action.option_strings[0]}"
        for words, actions in options.items()
        for action in actions
        if not re.sub(r"\(default: [^)]*\)", "", action.help or "").strip()
    }
    assert not bare, bare
    named = {words: MODULE_PATH.findall(text) for words, text in every_help().items() if MODULE_PATH.search(text)}
    assert not named, named
    assert MODULE_PATH.findall("see ddrs.logs.certification_log.kept_partials") == [
        "ddrs.logs.certification_log.kept_partials"
    ]


def ddrs_command(*argv: str) -> subprocess.CompletedProcess:
    """``ddrs argv`` as a user types it (the venv's console script), on an 80-column terminal."""
    ddrs = os.path.join(os.path.dirname(sys.executable), "ddrs")
    return subprocess.run([ddrs, *argv], capture_output=True, text=True, env={**os.environ, "COLUMNS": "80"})


def test_train_help_groups_its_options_and_folds_each_methods_own_away():
    default, every, macer = (
        ddrs_command("train", *flags) for flags in (["--help"], ["--help-all"], ["--help-method", "macer"])
    )
    assert default.returncode == every.returncode == macer.returncode == 0, default.stderr
    assert len(default.stdout.splitlines()) <= 120 < len(every.stdout.splitlines())
    for group in ("the run", "optimiser and schedule", "Algorithm 2"):
        assert f"\n{group}" in default.stdout, group
    assert (
        "--lr-drop" in default.stdout and "--macer-lam" not in default.stdout and "--num-workers" not in default.stdout
    )
    assert (
        "\nmacer options" in every.stdout and "\nsmoothadv options" in every.stdout and "--num-workers" in every.stdout
    )
    assert "--macer-lam" in macer.stdout and "--smoothadv-steps" not in macer.stdout
    assert "--lr-drop" in macer.stdout


def test_certify_has_no_scale_flag(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(
            ["certify", "--checkpoint", "m.pt", "--dataset", "digits", "--out", "a.tsv", "--sigma", "1", "--scale", "1"]
        )
    assert exit_.value.code == 2
    assert "unrecognized arguments: --scale 1" in capsys.readouterr().err
    assert "--scale" not in every_help()["ddrs certify"]


@pytest.mark.parametrize("command", ["table", "memory", "plot", "show", "build"])
def test_analysis_commands_start_without_torch(command):
    done = run_ddrs(command, "--help", after="print('torch imported:', 'torch' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert f"usage: ddrs {command}" in done.stdout
    assert done.stdout.endswith("torch imported: False\n")


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "in_a_batch"])
def test_memory_on_digits_runs_without_torch_on_the_threads_given(tmp_path, batched):
    rng = np.random.default_rng(0)
    label = load_labels("digits", "test", seed=0)[:50]  # Algorithm 3 refuses labels that are not the split's
    pd.DataFrame({"idx": range(50), "label": label, "predict": label, "radius": rng.random(50), "correct": 1}).assign(
        time=1.0, noise="gaussian"
    ).to_csv(tmp_path / "certify.tsv", sep="\t", index=False)
    done = run_ddrs(
        *("--threads", "1", *(["batch"] if batched else []), "memory"),
        *("--log", str(tmp_path / "certify.tsv"), "--dataset", "digits"),
        *("--out", str(tmp_path / "memory.tsv")),
        after="import threadpoolctl\n"
        "print('torch imported:', 'torch' in sys.modules)\n"
        "print('threads:', {pool['num_threads'] for pool in threadpoolctl.threadpool_info()})",
        env={**os.environ, **dict.fromkeys(THREAD_VARIABLES, "2")},  # without --threads: 2 per pool
    )
    assert done.returncode == 0, done.stderr
    assert "torch imported: False\nthreads: {1}\n" in done.stdout
    assert (tmp_path / "memory.tsv").exists()
    jobs = [match["job"] for match in WORK_LINE.finditer(done.stderr)]
    assert jobs == (["ddrs memory", "ddrs batch"] if batched else ["ddrs memory"]), done.stderr


def test_memory_of_a_log_cut_mid_row_is_a_clear_error(tmp_path, capsys):
    log = tmp_path / "certify.tsv"
    log.write_text(
        "idx\tlabel\tpredict\tradius\tcorrect\ttime\tnoise\tprecision\n"
        "0\t1\t1\t0.5\t1\t0.2\tgaussian\tfp32\n"
        "2\t1\t1\t0.5\t1\t0.2\tgau"
    )
    out = tmp_path / "memory.tsv"
    assert main(["memory", "--log", str(log), "--dataset", "digits", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"ddrs memory: error: {log}: line 3 has 7 of the header's 8 fields: an incomplete log" in err
    assert not out.exists()


def test_every_command_reports_its_work_seconds_on_stderr(tmp_path, capsys):
    started = time.perf_counter()
    assert (
        main(["prepare-data", "--dataset", "digits", "--data-root", str(tmp_path), "--out", str(tmp_path / "d.json")])
        == 0
    )
    elapsed = time.perf_counter() - started
    err = capsys.readouterr().err
    assert WORK_LINE.fullmatch(err.strip())["job"] == "ddrs prepare-data"
    assert 0 < work_seconds(err) <= elapsed + 5e-4  # seconds of this call (printed to 3 decimals), at any speed
    assert main(["prepare-data", "--dataset", "svhn", "--out", str(tmp_path / "x.json")]) == 2
    assert work_seconds(capsys.readouterr().err) is None  # a failed command did no work to report


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "in_a_batch"])
def test_threads_sets_torchs_cpu_threads(tmp_path, batched):
    before = torch.get_num_threads()
    try:
        args = ["prepare-data", "--dataset", "digits", "--data-root", str(tmp_path), "--out", str(tmp_path / "d.json")]
        assert main(["--threads", "1", *(["batch"] if batched else []), *args]) == 0
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_threads_must_be_positive(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--threads", "0", "prepare-data", "--dataset", "digits", "--out", "x.json"])
    assert exit_.value.code == 2
    assert "--threads must be >= 1, got 0" in capsys.readouterr().err


def test_prepare_data_summarises_the_dataset_and_saves_its_split(tmp_path, capsys):
    out = tmp_path / "digits.json"
    assert (
        main(["prepare-data", "--dataset", "digits", "--data-root", str(tmp_path), "--seed", "3", "--out", str(out)])
        == 0
    )
    assert '"sizes": {\n    "train": 1257,\n    "test": 540\n  }' in out.read_text()
    assert "1257 training and 540 test images" in capsys.readouterr().out
    assert json.loads(out.read_text())["saved_split"] == str(tmp_path / "digits" / "split_seed3.npz")


def test_prepare_data_names_an_unknown_dataset(tmp_path, capsys):
    assert main(["prepare-data", "--dataset", "svhn", "--out", str(tmp_path / "x.json")]) == 2
    assert "ddrs prepare-data: error: unknown dataset 'svhn'" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_train_speed_takes_only_what_changes_how_fast_a_model_trains():
    from ddrs.cli.train import speed_options

    assert speed_options('{"num_workers": 3, "activation_checkpoints": 2}') == {
        "num_workers": 3,
        "activation_checkpoints": 2,
    }
    with pytest.raises(ValueError, match=r"\['epochs'\] change what is trained"):
        speed_options('{"epochs": 3}')
