"""The shape of the code, checked: what a reviewer would otherwise have to remember."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "curation"


def _modules() -> dict[str, ast.Module]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = ast.parse(path.read_text(), filename=str(path))
    return found


MODULES = _modules()


def _is_package(name: str) -> bool:
    return (ROOT / Path(*name.split(".")) / "__init__.py").exists()


def _imports(name: str, node: ast.AST) -> list[tuple[str, list[str], ast.stmt]]:
    """(module imported, names taken from it, the statement) for every import statement below `node`."""
    found = []
    base = name if _is_package(name) else name.rpartition(".")[0]
    for stmt in ast.walk(node):
        if isinstance(stmt, ast.Import):
            found += [(alias.name, [], stmt) for alias in stmt.names]
        elif isinstance(stmt, ast.ImportFrom):
            if stmt.level:
                anchor = base.split(".")
                anchor = anchor[: len(anchor) - (stmt.level - 1)]
                target = ".".join(anchor + ([stmt.module] if stmt.module else []))
            else:
                target = stmt.module
            names = [alias.name for alias in stmt.names]
            # `from pkg import module` imports the module itself
            submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
            found += [(target, names, stmt)] + [(sub, [], stmt) for sub in submodules]
    return [item for item in found if item[0] in MODULES or item[0].startswith("curation.")]


def _top_level_imports(name: str, tree: ast.Module) -> set[str]:
    graph = set()
    for stmt in tree.body:  # module level, including inside `if`/`try` at the top
        for target, _, _ in _imports(name, stmt):
            if target in MODULES and target != name:
                graph.add(target)
    return graph


def test_no_import_cycles_in_curation():
    graph = {name: _top_level_imports(name, tree) for name, tree in MODULES.items()}
    # A package's __init__ importing its own submodules is how a package exposes them, not a cycle.
    for name in graph:
        graph[name] = {t for t in graph[name] if not (t.startswith(name + ".") and _is_package(name))}
    cycles = []
    state: dict[str, int] = {}

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_no_import_of_curation_inside_a_function():
    """An import inside a function hides a cycle; the only one allowed is AppConfig.ready, which Django
    calls once the models are loaded."""
    found = []
    for name, tree in MODULES.items():
        for func in ast.walk(tree):
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) and func.name != "ready":
                found += [f"{name}.{func.name} imports {target}" for target, _, _ in _imports(name, func)]
    assert found == []


def test_no_module_imports_another_modules_private_names():
    found = []
    for name, tree in MODULES.items():
        for target, names, stmt in _imports(name, tree):
            found += [f"{name} imports {target}.{n}" for n in names if n.startswith("_") and target != name]
    assert found == []


# The sweeps package's modules that are not sweeps: the engine, the run record and lock, the list of sweeps,
# and the SQL expressions sweeps share.
SWEEP_MACHINERY = {
    "curation.sweeps.engine",
    "curation.sweeps.runs",
    "curation.sweeps.registry",
    "curation.sweeps.expressions",
}


@pytest.mark.parametrize("name", ["curation.sweeps.engine", "curation.sweeps.runs"])
def test_the_sweep_engine_knows_no_sweep(name):
    """A sweep builds on the engine; the engine never imports a sweep (the registry lists them)."""
    assert SWEEP_MACHINERY <= set(MODULES)  # an exemption for a module that is gone would hide nothing
    sweeps = {m for m in MODULES if m.startswith("curation.sweeps.")} - SWEEP_MACHINERY
    assert not _top_level_imports(name, MODULES[name]) & sweeps


# The rules layer of ARCHITECTURE.md is the curation/rules/ package: pure functions and constants (and the
# redacting column types), below models.py, which builds its tables on them.
RULES = {m for m in MODULES if m.startswith("curation.rules.")}


def test_the_layers_are_folders():
    """The rules are one package and the infrastructure another: nothing of either is left at the top."""
    assert {"curation.rules.lifecycle", "curation.rules.transitions", "curation.rules.vocabulary"} <= RULES
    assert "curation.infra.db_router" in MODULES and "curation.infra.middleware" in MODULES
    top = {m for m in MODULES if m.count(".") == 1}
    assert top <= {
        "curation.admin",
        "curation.apps",
        "curation.models",
        "curation.roles",
        "curation.tasks",
        "curation.urls",
        "curation.rules",
        "curation.infra",
        "curation.api",
        "curation.demo",
        "curation.management",
        "curation.migrations",
        "curation.replay",
        "curation.selectors",
        "curation.services",
        "curation.sweeps",
        "curation.templatetags",
        "curation.views",
    }, top


@pytest.mark.parametrize("name", sorted(RULES | {"curation.models"}))
def test_the_models_and_the_rules_import_only_rules(name):
    """models.py imports rules (the clock, the confidence rule, the scope validator, the redacting fields,
    the skill format's lengths); a rule imports only other rules, never a model, a service or a selector."""
    assert RULES <= set(MODULES)
    imported = {t for t in _top_level_imports(name, MODULES[name]) if t not in ("curation", "curation.rules")}
    assert imported - RULES == set()


def test_time_comes_from_the_one_clock():
    """A replay (and `run_lifecycle --at`) moves the product's time through `curation.rules.clock`; a direct read
    of the wall clock would stamp one row with real time and its neighbour with the replayed time."""
    offenders = []
    for name, tree in _modules().items():
        if name == "curation.rules.clock":
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "now"
                and isinstance(node.value, ast.Name)
                and node.value.id in {"timezone", "datetime"}
            ):
                offenders.append(f"{name}:{node.lineno}")
    assert offenders == [], "read the time through curation.rules.clock: " + ", ".join(offenders)
