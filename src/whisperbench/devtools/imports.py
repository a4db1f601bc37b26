"""The package's shape: import cycles, layer violations and over-long functions
(``python -m whisperbench.devtools.imports``).

Every ``import`` counts, at module level or inside a function: a lazy import is still a dependency.
Layers, lowest first; a module may import its own layer and lower ones only:

>>> [LAYERS[name] for name in ("types", "core", "process", "models", "store", "adapters", "harness", "reports", "cli")]
[0, 0, 0, 1, 1, 2, 3, 4, 5]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = "whisperbench"
ROOT = Path(__file__).resolve().parent.parent
LAYERS = {
    "types": 0,
    "errors": 0,
    "core": 0,  # registry, languages, option ranges, redaction, hashing, JSON files, lazy exports
    "process": 0,  # supervised children, worker start method, host facts
    "models": 1,
    "scoring": 1,
    "store": 1,  # run store, its lock and score files (reads scoring's tables)
    "adapters": 2,
    "datasets": 2,
    "harness": 3,
    "reports": 4,
    "api": 5,
    "__init__": 5,  # the public Python API (the package's top level re-exports it)
    "cli": 5,
    "devtools": 5,
    "__main__": 5,
}


def module_name(path: Path) -> str:
    """The dotted module name of a file under ``src/``."""
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {module_name(path): path for path in ROOT.rglob("*.py")}


def _resolve(current: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, path.name == "__init__.py", node)
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names
                ]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target.startswith(PACKAGE) and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(1000, 10 * len(graph)))
    for node in graph:
        if node not in index:
            visit(node)
    return sorted(found)


def layer_of(module: str) -> int:
    """The layer of a whisperbench module (ARCHITECTURE.md's numbers: higher layers may import lower ones)."""
    parts = module.split(".")
    name = parts[1] if len(parts) > 1 else "__init__"
    if name not in LAYERS:
        raise KeyError(f"{module}: give {name!r} a layer in whisperbench.devtools.imports.LAYERS")
    return LAYERS[name]


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """'a -> b' for every import of a higher layer."""
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if layer_of(b) > layer_of(a))


#: the most lines a function of the package may have (a function should be readable at once), counted in ruff
#: format's layout: 80 and 160 lines before ruff format, scaled by the factor it grew the package by
MAX_FUNCTION_LINES = 92


def long_functions(limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """'module.function: N lines' for every function (methods and nested ones included) over ``limit``."""
    found = []
    for module, path in sorted(_modules().items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if lines > limit:
                    found.append(f"{module}.{node.name}: {lines} lines")
    return found


#: the most lines a class may have (one concept; a bigger one is split)
MAX_CLASS_LINES = 184


def long_classes(limit: int = MAX_CLASS_LINES) -> list[str]:
    """'module.Class: N lines' for every class over ``limit``."""
    found = []
    for module, path in sorted(_modules().items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and (lines := node.end_lineno - node.lineno + 1) > limit:  # type: ignore[operator]
                found.append(f"{module}.{node.name}: {lines} lines")
    return found


def undocumented() -> list[str]:
    """Every public function, class and method of the package without a docstring (imported and read with
    ``inspect.getdoc``, so an override documented by the method it overrides counts as documented)."""
    import importlib
    import inspect

    found = []
    for module in sorted(_modules()):
        if module.endswith("__main__"):
            continue
        namespace = importlib.import_module(module)
        for name, obj in vars(namespace).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module:
                continue
            if (inspect.isfunction(obj) and not inspect.getdoc(obj)) or (inspect.isclass(obj) and not _own_doc(obj)):
                found.append(f"{module}.{name}")
            if inspect.isclass(obj):
                found += [
                    f"{module}.{name}.{attr}"
                    for attr, value in vars(obj).items()
                    if not attr.startswith("_")
                    and _callable_or_property(value)
                    and not inspect.getdoc(value if isinstance(value, property) else getattr(obj, attr))
                ]
    return found


def _own_doc(cls: type) -> bool:
    """Whether a class says what it holds in a docstring of its own: not one inherited from a base class, nor the
    signature ``dataclasses`` writes for a class without one (``Comparison(reference: StoredRun, …)``)."""
    doc = cls.__dict__.get("__doc__")
    return isinstance(doc, str) and bool(doc.strip()) and not doc.startswith(f"{cls.__name__}(")


def _callable_or_property(value: object) -> bool:
    import inspect

    return inspect.isfunction(value) or isinstance(value, (classmethod, staticmethod, property))


def main() -> int:
    """Check every import of the package, function and class sizes and docstrings; print the problems and return
    1 when there is one, else 0."""
    graph = import_graph()
    problems = [f"cycle: {' <-> '.join(c)}" for c in cycles(graph)]
    problems += [f"upward import: {v}" for v in layer_violations(graph)]
    problems += [f"function over {MAX_FUNCTION_LINES} lines: {f}" for f in long_functions()]
    problems += [f"class over {MAX_CLASS_LINES} lines: {c}" for c in long_classes()]
    problems += [f"no docstring: {name}" for name in undocumented()]
    print(
        "\n".join(problems)
        or f"{len(graph)} modules: no import cycles, no upward imports, no function over "
        f"{MAX_FUNCTION_LINES} lines, no class over {MAX_CLASS_LINES}, every public "
        "function documented"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
