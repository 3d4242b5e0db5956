"""`--debug-log FILE` (before or after the command) and SPECTOP_DEBUG_LOG turn the debug log on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.cli import main
from tui.debug_log import ENV_VARIABLE

LOG = Path(__file__).parents[1] / "telemetry" / "log_samples" / "vllm.server.log"


@pytest.mark.parametrize("where", ["before", "after"])
def test_the_option_writes_the_debug_log(
    tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "debug.log"
    option = ["--debug-log", str(target)]
    argv = [*option, "logs", str(LOG)] if where == "before" else ["logs", str(LOG), *option]
    assert main(argv) == 0
    assert "debug log started" in target.read_text()


def test_the_environment_variable_writes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "env.log"
    monkeypatch.setenv(ENV_VARIABLE, str(target))
    assert main(["logs", str(LOG)]) == 0
    assert "debug log started" in target.read_text()


def test_an_unwritable_debug_log_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--debug-log", str(tmp_path / "missing" / "debug.log"), "logs", str(LOG)]) == 2
    assert "cannot write the debug log" in capsys.readouterr().err
