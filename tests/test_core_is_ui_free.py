"""The core (telemetry, configs, bench, sim, sources, board, settings) must never import textual."""

import pkgutil
import subprocess
import sys

import tui

CORE_PACKAGES = (
    "tui.telemetry",
    "tui.configs",
    "tui.bench",
    "tui.sim",
    "tui.sources",
    "tui.gpu",
    "tui.fleet",
)


def _core_modules() -> list[str]:
    names = ["tui.settings", "tui.paths", "tui.validators", "tui.board"]
    for package_name in CORE_PACKAGES:
        package = __import__(package_name, fromlist=["_"])
        names.append(package_name)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package_name}."):
            names.append(info.name)
    return names


def test_core_modules_do_not_import_textual() -> None:
    modules = _core_modules()
    assert len(modules) > 4
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
