"""No import cycle between spectop's modules, and the core imports nothing from the UI.

The graph is read from the source with `ast`: every `import` and `from … import` of a `tui` module,
at module level, inside functions (a function-level import is how a cycle usually hides) and under
`if TYPE_CHECKING:` (a type-only cycle is still two modules that need each other: the screens once
cast the app they were shown by). `from package import name` counts as an import of
`package.name` when that is a module, else of `package`. A package's `__init__` is not counted as
imported by its own submodules (Python runs it first anyway).
"""

from __future__ import annotations

import ast
from pathlib import Path

import tui

ROOT = Path(tui.__file__).resolve().parent
CORE = ("tui.telemetry", "tui.configs", "tui.bench", "tui.sim", "tui.sources", "tui.board", "tui.settings")
UI = ("tui.app", "tui.screens", "tui.widgets", "tui.messages", "tui.editor_app", "tui.worker_errors")


def _modules() -> dict[str, Path]:
    modules = {}
    for path in ROOT.rglob("*.py"):
        parts = ("tui", *path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    targets = set()
    for target in found:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target.startswith("tui") and target != name and not name.startswith(f"{target}."):
            targets.add(target)
    return targets


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := walk(target)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := walk(node)) is not None:
            return found
    return None


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(f"{prefix}.") for prefix in prefixes)


def test_the_graph_is_read() -> None:
    graph = _graph()
    assert "tui.screens.dashboard" in graph["tui.app"]  # a function-level import counts
    assert "tui.telemetry.recording" in graph["tui.sources.replay"]


def test_no_import_cycle() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


def test_a_cycle_is_found() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_core_imports_nothing_from_the_ui() -> None:
    bad = [
        f"{name} → {target}"
        for name, targets in _graph().items()
        if _within(name, CORE)
        for target in targets
        if _within(target, UI)
    ]
    assert bad == []
