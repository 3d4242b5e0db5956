"""The command line: every command module is registered, and one that fails to import is an error."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import subprocess
import sys

import pytest

import tui.commands
from tui import cli


def test_every_command_module_is_registered() -> None:
    shipped = {
        f"tui.commands.{info.name}" for info in pkgutil.iter_modules(tui.commands.__path__) if not info.ispkg
    }
    assert shipped - {"tui.commands.monitor"} == set(cli.COMMAND_MODULES)  # monitor: the default command
    names = {
        name
        for action in cli.build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    }
    assert {module.rsplit(".", 1)[1] for module in cli.COMMAND_MODULES} <= names


def test_a_command_module_that_is_missing_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, "tui.commands.not_there"))
    with pytest.raises(ModuleNotFoundError, match="not_there"):
        cli.build_parser()


def test_a_command_module_that_fails_to_import_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = importlib.import_module

    def failing(name: str, package: str | None = None):  # a command whose own import is broken
        if name == "tui.commands.logs":
            raise ModuleNotFoundError("No module named 'tui.commands.logs'", name="tui.commands.logs")
        return real_import(name, package)

    monkeypatch.setattr(cli.importlib, "import_module", failing)
    with pytest.raises(ModuleNotFoundError):
        cli.main(["logs", "--help"])


def test_the_dashboards_command_line_loads_no_other_command() -> None:
    """`spectop --endpoint URL` reaches the dashboard without importing the other commands' modules (each
    pulls in its own screens and engines, slowing the first frame); in a fresh interpreter."""
    script = (
        "import sys\n"
        "from tui import cli\n"
        "from tui.commands import monitor\n"
        "monitor.run = lambda args: 0\n"
        "assert cli.main(['--endpoint', 'http://127.0.0.1:1']) == 0\n"
        "print(sorted(name for name in cli.COMMAND_MODULES if name in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = done.stdout.strip()
    # `replay` gives the dashboard its --record options
    assert loaded == "['tui.commands.replay']", done.stderr
