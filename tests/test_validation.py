"""The config's refusals name what a user must edit: the file that set the key, the key, the closest
allowed name (ddrs.pipeline.validation); and a target read as a config file is named with the fix,
a config file Snakemake cannot read with its line (ddrs.pipeline.config_files). The whole message of
a refused dry run is in test_workflow_dag.py."""

import pytest
import yaml
from workflow_helpers import REPO, load_config

from ddrs.pipeline.config_files import command_line_problem, configfile_problem, configfiles_given, read_config_file
from ddrs.pipeline.validation import ConfigError, ConfigSources, check_references, schema_problems

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


def test_keys_that_disagree_are_blamed_on_the_one_the_latest_source_sets(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = sources(tmp_path, base="grid_search: {budget: 200}\noptimize_sigma: {k: [50]}\n", overlay="seed: 1\n")
    error = ConfigError(("grid_search", "budget"), "budget first", others={("optimize_sigma", "k"): "k first"})
    assert ConfigSources.read(files).refusal(error) == "base.yaml: budget first"  # one file sets both: the first
    (tmp_path / "overlay.yaml").write_text("optimize_sigma: {k: [200, 50]}\n")
    assert ConfigSources.read(files).refusal(error) == "overlay.yaml: k first"
    assert ConfigSources.read(files, {"grid_search": {"budget": 300}}).refusal(error) == "--config: budget first"


def test_the_config_files_of_a_command_line_are_the_words_configfile_takes():
    argv = ["-n", "--configfile", "a.yaml", "b.yml", "t.csv", "--cores", "1", "x.csv", "--configfile=c.json", "--"]
    assert configfiles_given([*argv, "d.yaml"]) == ["a.yaml", "b.yml", "t.csv", "c.json"]
    assert configfiles_given(["--configfiles", "a.yaml", "--", "t.csv"]) == ["a.yaml"]
    assert configfiles_given(["t.csv", "--config", "seed=1"]) == []


def test_a_config_file_snakemake_cannot_read_is_named_with_its_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "indented.yaml").write_text("seed: 0\n  device: auto\n")
    (tmp_path / "list.yaml").write_text("- 1\n")
    (tmp_path / "binary.yaml").write_bytes(b"\x89PNG\r\n\x1a\n\xff")
    (tmp_path / "good.yaml").write_text("results: out\n")
    assert read_config_file("indented.yaml").startswith("indented.yaml, line 2, column 9: not valid YAML: ")
    assert read_config_file("list.yaml") == "config file list.yaml holds list, not a mapping of key: value"
    assert read_config_file("binary.yaml") == "config file binary.yaml is not a text file"
    assert read_config_file("gone.yaml") == "config file gone.yaml does not exist"
    assert read_config_file("good.yaml") == {"results": "out"}
    # a target is named before the files are read, under the results folder the readable ones give
    assert command_line_problem(["--configfile", "good.yaml", "out/x.json"]).startswith(
        "--configfile out/x.json: a file under out/ (a workflow output)"
    )
    assert command_line_problem(["--configfile", "good.yaml", "list.yaml"]).startswith("config file list.yaml holds")
    assert command_line_problem(["out/x.json", "--configfile", "good.yaml"]) is None


def test_every_pattern_of_the_schema_says_what_it_allows():
    """A pattern's refusal lists its schema's x-allowed, never the regular expression."""

    def patterns(node):
        if isinstance(node, dict):
            if "pattern" in node and isinstance(node["pattern"], str):
                yield node
            for value in node.values():
                yield from patterns(value)
        elif isinstance(node, list):
            for value in node:
                yield from patterns(value)

    found = list(patterns(yaml.safe_load(SCHEMA_PATH.read_text())))
    assert len(found) >= 4 and all(node.get("x-allowed") for node in found), found
    config = load_config()
    config["device"] = "gpu"
    (line,) = schema_problems(config, SCHEMA_PATH)
    assert line == "config key device: 'gpu' is not allowed; it takes auto, cpu, cuda or cuda:<index>"


def test_a_reference_to_a_name_the_config_does_not_define_gets_the_closest_one():
    config = load_config()
    config["grid_search"]["datasets"] = ["digts"]
    with pytest.raises(ConfigError) as refused:
        check_references(config)
    assert refused.value.key == ("grid_search", "datasets")
    assert str(refused.value).startswith(
        "grid_search.datasets: ['digts'] not among the config's ['digits'] (did you mean digits?)"
    )


def test_ablation_rows_must_be_variants_of_a_configured_method_and_keep_the_full_one():
    """sun2024.ablation_variants (a cheaper run's rows of Sun et al.'s Table 3) names variants the
    config's methods have, and keeps the full method, the baseline the other rows are compared with."""
    config = load_config("config.yaml")
    config["sun2024"]["ablation_variants"] = ["easy_focus.none", "easy_focus.discrad"]
    with pytest.raises(
        ConfigError, match=r"\['easy_focus.discrad'\] not among .* \(did you mean easy_focus.discard\?\)"
    ):
        check_references(config)
    config["sun2024"]["ablation_variants"] = ["easy_focus.none"]
    with pytest.raises(ConfigError) as refused:
        check_references(config)
    assert refused.value.key == ("sun2024", "ablation_variants")
    assert "easy_focus.discard+reweigh+attack, easy_focus with every component on, is the baseline" in str(
        refused.value
    )
    config["sun2024"]["ablation_variants"] = ["easy_focus.none", "easy_focus.discard+reweigh+attack"]
    check_references(config)
