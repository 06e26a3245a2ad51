"""The package's rooms (docs/method.md, its layer table), checked from the source's own
imports (an AST scan, lazy imports inside functions included): every import goes down a layer or
stays inside its package, so there is no circle between packages and no arrow back up; and
``gc2po/training/`` holds only the training runtime, every module of it reached from the entry
point ``gc2po.training.train``."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gc2po"
# bottom to top; a unit is a subpackage or a top-level module of gc2po
LAYERS = [
    {"core", "data", "models", "layout", "errors"},
    {"testbed"},
    {"methods"},
    {"reporting"},
    {"evaluation"},
    {"training"},
    {"audit", "workflow"},
    {"cli_results"},
    {"cli"},
]
RANK = {unit: rank for rank, layer in enumerate(LAYERS) for unit in layer}


def imported_modules(path: Path) -> list[str]:
    """The gc2po modules a file imports, at any depth of its code (``from gc2po.x import y``
    gives ``gc2po.x`` and ``gc2po.x.y``: y may be a module)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "gc2po"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "gc2po":
                found += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return found


def unit_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_unit_of_the_package_has_a_layer():
    units = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    units |= {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert units == set(RANK)


def test_every_import_goes_down_a_layer_or_stays_in_its_package():
    upward = []
    for path in PACKAGE.rglob("*.py"):
        source = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        if source == "__init__":
            continue
        for module in imported_modules(path):
            target = unit_of(module)
            if target in RANK and target != source and RANK[target] >= RANK[source]:
                upward.append(f"{path.relative_to(PACKAGE.parent)} imports {module}")
    assert not upward, upward


def test_the_training_package_holds_only_what_the_runtime_imports():
    training = PACKAGE / "training"
    reached, todo = set(), ["gc2po.training.train"]
    while todo:
        module = todo.pop()
        path = PACKAGE.parent / (module.replace(".", "/") + ".py")
        if module in reached or not path.is_file():
            continue
        reached.add(module)
        todo += [m for m in imported_modules(path) if m.startswith("gc2po.training.")]
    modules = {f"gc2po.training.{p.stem}" for p in training.glob("*.py") if p.stem != "__init__"}
    assert modules - reached == set(), "modules of gc2po/training the runtime never imports"


def is_module(name: str) -> bool:
    """Whether a dotted gc2po name is a module file or a package (``__init__.py``)."""
    path = PACKAGE.parent / name.replace(".", "/")
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def module_imports(path: Path) -> set[str]:
    """The gc2po modules a file imports, at any depth of its code: ``from gc2po.x import y``
    imports ``gc2po.x.y`` where y is a module of it (the package only leads there) and
    ``gc2po.x`` where y is a name defined in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "gc2po"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "gc2po":
                continue
            for alias in node.names:
                inner = f"{node.module}.{alias.name}"
                found.add(inner if is_module(inner) else node.module)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the gc2po modules it imports, lazy imports included."""
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        graph[module] = {m for m in module_imports(path) if m != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan): each a set of
    modules that import each other, directly or through others."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_two_modules_of_the_package_import_each_other():
    """No import circle between modules, a lazy import inside a function included (one hides a
    circle from Python's import machinery, not from a reader)."""
    assert circles(import_graph()) == []


def test_the_circle_check_finds_a_circle_through_a_lazy_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    source = "def f():\n    from gc2po.workflow.plan import training_jobs\n"
    path = PACKAGE.parent / "tests" / "__lazy_import_probe__.py"
    try:
        path.write_text(source + "from gc2po.workflow import plan, plan_summary\n")
        assert module_imports(path) == {"gc2po.workflow.plan", "gc2po.workflow.plan_summary"}
    finally:
        path.unlink()
