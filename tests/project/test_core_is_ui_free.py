"""The core (every module tests/project/tui_layers.py calls core) must never import textual."""

import importlib
import pkgutil
import subprocess
import sys

from tui_layers import CORE

import tui


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
