"""The config files of a ``snakemake`` command line, checked before Snakemake reads them.

Snakemake reads every ``--configfile`` before the Snakefile, and fails there in its own words: a
YAML mistake as "Config file is not valid JSON or YAML", naming neither the file nor the line, and a
target given after ``--configfile`` (which takes every word after it) as a traceback ending in
``FileNotFoundError``, or, once the run has made the target, "keys at top level". The workflow
profile (``profiles/default/config.yaml``, which Snakemake reads before any config file: a YTE
template that sets no option) calls :func:`refuse_misread_configfiles`, which names the problem in
one line and stops. The Snakefile checks its embedded default (``config/config.yaml``) with
:func:`config_file_problem` before it reads it, and :func:`configfile_problem` again once the
config is read, for a run whose ``--workflow-profile`` replaces the default one.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

#: the endings of the config files Snakemake reads (YAML, or JSON, which YAML reads)
CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
#: Snakemake's spellings of the option that takes the config files
CONFIGFILE_OPTIONS = ("--configfile", "--configfiles")


def shown(path: str | Path) -> str:
    """``path`` as the user gave it: relative to the working directory when it lies under it
    (Snakemake makes every config file's path absolute)."""
    path = Path(path)
    return str(path.relative_to(Path.cwd()) if path.is_absolute() and path.is_relative_to(Path.cwd()) else path)


def configfiles_given(argv: Sequence[str]) -> list[str]:
    """The words a ``snakemake`` command line ``argv`` gives ``--configfile``: every word after it up
    to the next option or ``--`` (as Snakemake's parser takes them), and its ``--configfile=FILE``."""
    words, taking = [], False
    for word in argv:
        if word == "--":
            break  # every word after it is a target
        option, equals, value = word.partition("=")
        if option in CONFIGFILE_OPTIONS:
            taking = not equals
            words += [value] if equals else []
        elif word.startswith("-"):
            taking = False
        elif taking:
            words.append(word)
    return words


def read_config_file(path: str | Path) -> Mapping[str, Any] | str:
    """The mapping a config file holds, or why Snakemake could not read it as one, in one line that
    names the file: missing, not text, a YAML mistake (with its line and column), or no mapping."""
    path = Path(path)
    if not path.is_file():
        return f"config file {shown(path)} does not exist"
    try:
        content = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        return f"config file {shown(path)} is not a text file"
    except yaml.YAMLError as error:
        mark, context = getattr(error, "problem_mark", None), getattr(error, "context_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        since = f" ({error.context} from line {context.line + 1})" if context and error.context else ""
        return f"{shown(path)}{where}: not valid YAML: {getattr(error, 'problem', None) or error}{since}"
    if not isinstance(content, dict):
        return f"config file {shown(path)} holds {type(content).__name__}, not a mapping of key: value"
    return content


def config_file_problem(path: str | Path) -> str | None:
    """Why Snakemake could not read the config file at ``path`` as a mapping (:func:`read_config_file`), or None."""
    content = read_config_file(path)
    return content if isinstance(content, str) else None


def configfile_problem(configfiles: Sequence[str | Path], results: Any) -> str | None:
    """Why a ``--configfile`` looks like a target, or None: Snakemake's ``--configfile`` takes every
    word after it, so ``--configfile config/digits.yaml results/tables/table1.csv`` reads the table as
    one more config file. A file not named .yaml, .yml or .json, or one of the workflow's outputs
    (under the config's ``results``, unless that holds the working directory), is a target."""
    outputs = Path(results).resolve() if isinstance(results, str) and results else None
    if outputs is not None and Path.cwd().is_relative_to(outputs):
        outputs = None  # a results folder around the working directory holds the config files too
    for path in map(Path, configfiles):
        output = outputs is not None and path.resolve().is_relative_to(outputs)
        if path.suffix in CONFIG_SUFFIXES and not output:
            continue
        given = " ".join(shown(file) for file in configfiles if Path(file) != path) or "CONFIG"
        reason = f"a file under {results}/ (a workflow output)" if output else "not a .yaml, .yml or .json file"
        return (
            f"--configfile {shown(path)}: {reason}, read as a config file since --configfile takes every word after "
            f"it; name a target before --configfile (snakemake {shown(path)} --configfile {given}) or end the config "
            f"files with -- (snakemake --configfile {given} -- {shown(path)})"
        )
    return None


def command_line_problem(argv: Sequence[str]) -> str | None:
    """What stops Snakemake from reading the config files of the command line ``argv``, in one line,
    or None: a target among them (:func:`configfile_problem`, the outputs' folder read from the config
    files that are readable), else the first one it cannot read as a mapping (:func:`read_config_file`)."""
    configfiles = configfiles_given(argv)
    contents = [read_config_file(path) for path in configfiles]
    mappings = [content for content in contents if not isinstance(content, str)]
    results = next((mapping["results"] for mapping in reversed(mappings) if "results" in mapping), "results")
    return configfile_problem(configfiles, results) or next((c for c in contents if isinstance(c, str)), None)


def refuse_misread_configfiles(argv: Sequence[str] | None = None) -> None:
    """Stop with :func:`command_line_problem`'s line on stderr (exit status 1) if the command line
    ``argv`` (default: this process's) gives one: what the workflow profile runs before Snakemake
    reads any config file."""
    problem = command_line_problem(sys.argv[1:] if argv is None else argv)
    if problem:
        print(problem, file=sys.stderr)
        sys.exit(1)
