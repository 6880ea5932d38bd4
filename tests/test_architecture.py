"""The package tree's layers (docs/architecture.md): imports run one way, down the layers, never
between two packages of one layer, and no module imports itself back through another, typing-only
imports included."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
#: the layers, top to bottom: a module may import its own package and the packages of the layers below
#: its own, not another package of its layer (jobs, training and the published logs stand side by side)
LAYERS = [
    {"cli"},
    {"pipeline"},
    {"published", "jobs", "training"},
    {"analysis", "models"},
    {"logs", "data", "methods"},
    {"core"},
]
#: each package's layer, counted from the top
LAYER_OF = {package: floor for floor, packages in enumerate(LAYERS) for package in packages}
#: the floor every layer may use: errors and atomic file output
FLOOR = {"errors", "io"}


def _modules() -> dict[str, Path]:
    modules = {}
    for path in (SRC / "ddrs").rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    return modules


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The ddrs modules ``path`` imports anywhere (functions and ``TYPE_CHECKING`` blocks included);
    ``from package import submodule`` names the submodule."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("ddrs")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ddrs"):
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
    return found


def _layer(module: str) -> str:
    return module.split(".")[1] if module.count(".") else "ddrs"


def test_imports_run_down_the_layers():
    modules = _modules()
    upward = []
    for module, path in modules.items():
        own = _layer(module)
        for imported in _imports(path, modules):
            target = _layer(imported)
            if own in FLOOR or target in FLOOR or target == own or own == "ddrs":
                if own in FLOOR and target not in FLOOR:
                    upward.append(f"{module} -> {imported}")
                continue
            if LAYER_OF[target] <= LAYER_OF[own]:
                upward.append(f"{module} -> {imported}")
    assert not upward, f"imports up or across the layers {LAYERS}: {upward}"


def test_no_import_cycle():
    modules = _modules()
    graph = {module: _imports(path, modules) - {module} for module, path in modules.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for imported in sorted(graph.get(module, ())):
            if state.get(imported) == 1:
                cycles.append(path[path.index(imported) :] + [imported])
            elif imported not in state:
                visit(imported, [*path, imported])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, f"import cycles: {cycles}"


def test_every_layer_is_a_package_of_the_tree():
    """The layers the tests enforce are the packages there are: a new package takes its place in
    :data:`LAYERS` (and docs/architecture.md) rather than escaping the check."""
    packages = {path.parent.name for path in (SRC / "ddrs").glob("*/__init__.py")}
    top = {path.stem for path in (SRC / "ddrs").glob("*.py")} - {"__init__"}
    assert packages == set(LAYER_OF) and top == FLOOR


def test_the_runtime_package_never_imports_the_maintainers_tools():
    """scripts/ holds what only maintainers run (the published-log registry's parse rules and scan of
    mirrors, scripts/published_registry/): nothing in src/ddrs imports it, so a user's run never needs it."""
    tools = {path.stem for path in (SRC.parent / "scripts").iterdir() if path.suffix == ".py" or path.is_dir()}
    assert "published_registry" in tools
    found = []
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            names += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            found += [f"{module} -> {name}" for name in names if name.split(".")[0] in tools]
    assert not found, f"the runtime package imports the maintainers' tools: {found}"


def test_the_road_of_sigma_counts_what_the_files_hold():
    """docs/architecture.md's count of σ's names on its road, from config to the noise draw, is the
    files' own: rerunning its grep gives its numbers."""
    doc = (SRC.parent / "docs" / "architecture.md").read_text()
    road = doc[doc.index("## The road of σ") :]
    command = road[road.index("grep -ohwE") : road.index("| sort")]
    pattern, *globs = command.replace("\\\n", " ").split()[2:]
    paths = [SRC.parent / expanded for spelled in globs for expanded in _brace_expansion(spelled)]
    text = "\n".join(path.read_text() for path in paths)
    counted = Counter(re.findall(rf"\b(?:{pattern.strip(chr(39))})\b", text))
    stated = dict(re.findall(r"`(\w+)` (\d+)", road[road.index("gives ") : road.index("1. `config")]))
    assert counted == {name: int(count) for name, count in stated.items()}
    assert f"the {len(paths)} files below" in road


def _brace_expansion(spelled: str) -> list[str]:
    """The shell's ``a/{b,c}.py`` (the doc's command has no other glob)."""
    match = re.fullmatch(r"(.*)\{(.*)\}(.*)", spelled)
    if not match:
        return [spelled]
    head, options, tail = match.groups()
    return [f"{head}{option}{tail}" for option in options.split(",")]


#: The house's longest function, in lines from ``def`` to its last line (docstring included, decorators not).
MAX_FUNCTION_LINES = 60
#: The functions of src/ddrs allowed past :data:`MAX_FUNCTION_LINES`, each with why; one that shrinks leaves the list.
LONG_FUNCTIONS: dict[str, str] = {}


def _function_lengths(node: ast.AST, prefix: str) -> dict[str, int]:
    """Every function at or under ``node`` by qualified name (``module.Class.method``), with its length."""
    lengths = {}
    for child in ast.iter_child_nodes(node):
        name = f"{prefix}.{child.name}" if isinstance(child, ast.FunctionDef | ast.ClassDef) else prefix
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            lengths[name] = child.end_lineno - child.lineno + 1
        lengths |= _function_lengths(child, name)
    return lengths


def test_no_function_is_longer_than_the_house_allows():
    """A function of src/ddrs reads on one screen: at most 60 lines, but for :data:`LONG_FUNCTIONS`,
    each of which is still that long (so the list cannot outlive its reasons)."""
    lengths = {}
    for module, path in _modules().items():
        lengths |= _function_lengths(ast.parse(path.read_text()), module)
    long = {name: length for name, length in lengths.items() if length > MAX_FUNCTION_LINES}
    assert not set(long) - set(LONG_FUNCTIONS), f"functions over {MAX_FUNCTION_LINES} lines: {long}"
    assert not set(LONG_FUNCTIONS) - set(long), (
        f"no longer over {MAX_FUNCTION_LINES} lines: {set(LONG_FUNCTIONS) - set(long)}"
    )


#: The most parameters a function on the draw path takes (keyword-only ones counted, ``self`` and ``cls`` not).
MAX_DRAW_PATH_PARAMETERS = 5
#: The draw path: every function a certification setting passes through from the job document to the
#: noise draw, in order (docs/architecture.md, "The road of a certification setting (n0)"), fixed and
#: sequential modes alike.
DRAW_PATH = (
    "ddrs.jobs.runner.run_certification",
    "ddrs.core.settings.certify_from_parts",
    "ddrs.jobs.runner.certify_logs",
    "ddrs.core.device.prepare_certification",
    "ddrs.jobs.certification.certify_dataset",
    "ddrs.jobs.certification._certify_in_groups",
    "ddrs.jobs.certification._certify_in_pool",
    "ddrs.core.smoothing.certify_batch",
    "ddrs.core.sequential_pool.certify_sequentially",
    "ddrs.core.smoothing.NoiseDraws.certifying",
    "ddrs.core.smoothing.NoiseDraws.counts",
    "ddrs.core.smoothing.NoiseDraws.predictions",
    "ddrs.core.smoothing._noisy_argmax",
    "ddrs.core.streams.SharedGenerator.draw",
    "ddrs.core.streams.GeneratorStreams.draw",
    "ddrs.core.streams.PhiloxStreams.draw",
)


def test_the_functions_on_the_draw_path_take_at_most_five_parameters():
    """A setting reaches its draw inside the records it belongs to (CertifySettings, the prepared
    BaseClassifier, NoiseDraws, the log's inputs and file), never as a sixth loose argument."""
    import importlib
    import inspect

    counts = {}
    for name in DRAW_PATH:
        package, layer, module, *qualified = name.split(".")  # every module of the path is ddrs.<layer>.<module>
        function = importlib.import_module(f"{package}.{layer}.{module}")
        for attribute in qualified:
            function = getattr(function, attribute)
        parameters = inspect.signature(function).parameters
        counts[name] = len([parameter for parameter in parameters if parameter not in ("self", "cls")])
    too_many = {name: count for name, count in counts.items() if count > MAX_DRAW_PATH_PARAMETERS}
    assert not too_many, f"functions on the draw path with over {MAX_DRAW_PATH_PARAMETERS} parameters: {too_many}"
