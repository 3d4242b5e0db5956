"""The command line: every command module is registered, and one that fails to import is an error."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import tui.commands
from tui import cli
from tui.cli import main
from tui.debug_log import ENV_VARIABLE


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


# --- --debug-log FILE (before or after the command) and SPECTOP_DEBUG_LOG -----------------------------------


LOG = Path(__file__).parents[1] / "telemetry" / "log_samples" / "vllm.server.log"


@pytest.mark.parametrize("where", ["before", "after", "environment"])
def test_the_option_or_the_environment_variable_writes_the_debug_log(
    tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "debug.log"
    argv = ["logs", str(LOG)]
    if where == "environment":
        monkeypatch.setenv(ENV_VARIABLE, str(target))
    else:
        option = ["--debug-log", str(target)]
        argv = [*option, *argv] if where == "before" else [*argv, *option]
    assert main(argv) == 0
    assert "debug log started" in target.read_text()


def test_an_unwritable_debug_log_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--debug-log", str(tmp_path / "missing" / "debug.log"), "logs", str(LOG)]) == 2
    assert "cannot write the debug log" in capsys.readouterr().err
