"""The config's refusals name what a user must edit: the file that set the key, the key, the closest
allowed name; and a target read as a config file is named with the fix (ddrs.pipeline.validation).
The whole message of a refused dry run is in test_workflow_dag.py."""

import pytest
from workflow_helpers import REPO, load_config

from ddrs.pipeline.validation import ConfigError, ConfigSources, check_references, configfile_problem, schema_problems

SCHEMA_PATH = REPO / "config" / "schema" / "config.schema.yaml"


def sources(tmp_path, **files: str) -> list:
    """Config files written under ``tmp_path``, in the order given."""
    paths = []
    for name, text in files.items():
        (path := tmp_path / f"{name}.yaml").write_text(text)
        paths.append(path)
    return paths


def test_a_key_is_named_by_the_last_source_that_sets_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = sources(tmp_path, base="methods: [cohen]\ncertify: {n0: 100}\n", overlay="certify: {n: 50}\ndatasets: {}\n")
    given = ConfigSources.read(files, {"seed": 3})
    assert given.holding(("methods", 0)) == "base.yaml"  # a list comes whole from one file
    assert given.holding(("certify", "n0")) == "base.yaml"
    assert given.holding(("certify", "n")) == given.holding(("certify",)) == "overlay.yaml"
    assert given.holding(("seed",)) == "--config"
    assert given.holding(()) == given.holding(("train", "lr")) == "base.yaml, overlay.yaml, --config"
    # Snakemake hands the files over absolute: named as given, relative to the working directory
    assert ConfigSources.read([path.resolve() for path in files]).named(("datasets",), "x") == "overlay.yaml: x"


def test_a_schema_problem_starts_with_the_file_that_set_its_key(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config()
    config["methods"] = ["cohn"]
    config["certify"]["n00"] = 100
    files = sources(tmp_path, base="certify: {n00: 100}\n", overlay="methods: [cohn]\n")
    lines = schema_problems(config, SCHEMA_PATH, ConfigSources.read(files))
    assert len(lines) == 2, lines
    assert any(line.startswith("base.yaml: config key certify.n00: unknown key (did you mean n0?)") for line in lines)
    (method,) = [line for line in lines if line.startswith("overlay.yaml: config key methods[0]: 'cohn'")]
    assert method.endswith("(did you mean cohen?)"), method


def test_a_name_far_from_every_allowed_one_gets_no_guess():
    config = load_config()
    config["methods"] = ["zzz"]
    (line,) = schema_problems(config, SCHEMA_PATH)
    assert "'zzz' is not one of: cohen," in line and "did you mean" not in line


def test_more_selection_than_estimation_draws_is_refused_naming_both_keys():
    config = load_config()
    config["certify"].update(n0=200, n=100)
    with pytest.raises(ConfigError) as refused:
        check_references(config)
    assert refused.value.key == ("certify",)
    assert str(refused.value).startswith("certify.n0 = 200 is more than certify.n = 100")
    config["certify"].update(n0=100)  # as many selection as estimation draws is allowed
    check_references(config)


def test_a_target_read_as_a_config_file_is_named_with_both_fixes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert configfile_problem(["config.yaml", "overlay.yml", "c.json"], "results") is None
    problem = configfile_problem(["config.yaml", "tables/table1.csv"], "results")
    assert problem.startswith("--configfile tables/table1.csv: not a .yaml, .yml or .json file")
    assert "(snakemake tables/table1.csv --configfile config.yaml)" in problem
    assert "(snakemake --configfile config.yaml -- tables/table1.csv)" in problem
    output = configfile_problem(["config.yaml", "out/data/digits.json"], "out")
    assert output.startswith("--configfile out/data/digits.json: a file under out/ (a workflow output)")
    # a results folder around the working directory holds the config files too: no output guess
    assert configfile_problem(["config.yaml", "c.json"], ".") is None
    assert configfile_problem(["config.yaml"], "") is None


def test_a_reference_to_a_name_the_config_does_not_define_gets_the_closest_one():
    config = load_config()
    config["grid_search"]["datasets"] = ["digts"]
    with pytest.raises(ConfigError) as refused:
        check_references(config)
    assert refused.value.key == ("grid_search", "datasets")
    assert str(refused.value).startswith(
        "grid_search.datasets: ['digts'] not among the config's ['digits'] (did you mean digits?)"
    )
