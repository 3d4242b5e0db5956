"""No import cycle between spectop's modules, and the core imports nothing from the UI. The graph is read
with `ast`, counting imports inside functions and under `if TYPE_CHECKING:` (where a cycle usually hides);
the core's modules are also imported in a fresh interpreter, which must never load textual."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

from tui_layers import CORE, ENTRY, FLOORS, UI, within

import tui

ROOT = Path(tui.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    names = {
        path: ".".join(("tui", *path.relative_to(ROOT).with_suffix("").parts)) for path in ROOT.rglob("*.py")
    }
    return {name.removesuffix(".__init__"): path for path, name in names.items()}


def _imports(
    name: str, path: Path, modules: dict[str, Path], *, type_only: bool = True, source: str | None = None
) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if (
            not type_only
            and isinstance(node, ast.If)
            and ast.unparse(node.test).split(".")[-1] == "TYPE_CHECKING"
        ):
            for child in node.orelse:
                visit(child)
            return
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

    visit(ast.parse(path.read_text(encoding="utf-8") if source is None else source))
    targets = set()
    for target in found:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target.startswith("tui") and target != name and not name.startswith(f"{target}."):
            targets.add(target)
    return targets


def _graph(*, type_only: bool = True) -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules, type_only=type_only) for name, path in modules.items()}


def _room(module: str) -> str:
    """The top-level folder or module of tui that holds `module`."""
    return module.split(".")[1]


def _folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    folders: dict[str, set[str]] = {}
    for name, targets in graph.items():
        if name == "tui":
            continue
        folders.setdefault(_room(name), set()).update(
            _room(target) for target in targets if target != "tui" and _room(target) != _room(name)
        )
    return folders


def _climbs(folders: dict[str, set[str]]) -> list[str]:
    return [
        f"{name} → {target}"
        for name, targets in sorted(folders.items())
        for target in sorted(targets)
        if FLOORS[target] > FLOORS[name]
    ]


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


def test_the_graph_is_read() -> None:
    graph = _graph()
    assert "tui.screens.dashboard" in graph["tui.ui.app"]  # a function-level import counts
    assert "tui.telemetry.recording" in graph["tui.sources.replay"]


def test_no_import_cycle_between_modules_or_folders() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])
    # Between folders, imports inside functions count; a type-only import under `if TYPE_CHECKING:` does not.
    cycle = _cycle(_folder_graph(_graph(type_only=False)))
    assert cycle is None, "import cycle between tui's folders: " + " → ".join(cycle or [])


def test_a_cycle_is_found() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def _ui_imports_of_the_core(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{name} → {target}"
        for name, targets in graph.items()
        if within(name, CORE)
        for target in targets
        if within(target, UI) or within(target, ENTRY)
    ]


def test_the_core_imports_nothing_from_the_ui_and_no_folder_from_a_higher_floor() -> None:
    assert _ui_imports_of_the_core(_graph()) == []
    assert _climbs(_folder_graph(_graph(type_only=False))) == []


def test_a_core_module_importing_a_widget_is_caught() -> None:
    graph = _graph()
    graph["tui.advice.guard"] = {*graph["tui.advice.guard"], "tui.widgets.chart"}
    assert _ui_imports_of_the_core(graph) == ["tui.advice.guard → tui.widgets.chart"]


def test_every_module_has_a_layer() -> None:
    """tui/tune once was in neither list: a module in no layer is checked by nothing."""
    placed = (*CORE, *UI, *ENTRY)
    assert [name for name in _graph() if name != "tui" and not within(name, placed)] == []


def test_the_folder_says_the_layer_and_every_folder_has_a_floor() -> None:
    """A module at the top of tui/ is core or an entry point; the UI lives in tui/ui, screens and widgets."""
    graph = _graph()
    top_level = [name for name in graph if name.count(".") == 1]
    ui_on_top = [name for name in top_level if within(name, UI) and name not in UI]
    assert ui_on_top == []
    assert all(
        prefix.count(".") == 1 and prefix.split(".")[1] in {"ui", "screens", "widgets"} for prefix in UI
    )
    assert sorted(set(_folder_graph(graph)) - set(FLOORS)) == []


def test_a_function_level_climb_is_caught() -> None:
    path = ROOT / "tune" / "plan.py"
    graph = {"tui.tune.plan": {"tui.format"}, "tui.board": {"tui.tune.plan"}}
    source = "def f():\n    from tui.board import Board\n"
    graph["tui.tune.plan"] |= _imports("tui.tune.plan", path, _modules(), type_only=False, source=source)
    assert _climbs(_folder_graph(graph)) == ["tune → board"]
    assert _cycle(_folder_graph(graph)) == ["board", "tune", "board"]


def test_a_type_only_import_is_not_an_arrow_between_folders() -> None:
    path = ROOT / "tune" / "plan.py"
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tui.board import Board\n"
    assert _imports("tui.tune.plan", path, _modules(), type_only=False, source=source) == set()


def _core_modules() -> list[str]:
    names = []
    for name in CORE:
        module = importlib.import_module(name)
        names.append(name)
        if hasattr(module, "__path__"):
            names += [info.name for info in pkgutil.walk_packages(module.__path__, prefix=f"{name}.")]
    return names


def test_core_modules_do_not_import_textual() -> None:
    modules = _core_modules()
    assert "tui.advice.guard" in modules and "tui.format" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "", f"core imported textual: {result.stdout.strip()}"


def test_package_has_version() -> None:
    assert tui.__version__
