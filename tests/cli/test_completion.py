"""`spectop --completion SHELL` and `--version`; bash completes with the script as a user's shell would."""

from __future__ import annotations

import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.cli.conftest import Spectop, completion_script
from tui.cli import COMMAND_MODULES


def test_version_is_the_installed_packages(run_spectop: Spectop) -> None:
    result = run_spectop("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"spectop {version('spectop')}"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script_names_every_command(shell: str) -> None:
    script = completion_script(shell)
    for command in [name.rsplit(".", 1)[1] for name in COMMAND_MODULES] + ["launch"]:  # and an action
        assert command in script
    assert "--flavor" in script or "-l flavor" in script


def test_unknown_shell_is_a_usage_error(run_spectop: Spectop) -> None:
    result = run_spectop("--completion", "tcsh")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


BASH_DRIVER = """
source "$1"
complete_for() {
    COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
    _shtab_spectop
    echo "${COMPREPLY[*]}"
}
shift
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["spectop", ""], "demo snapshot logs sim config edit bench tune replay autopilot"),
        (["spectop", "si"], "sim"),
        (["spectop", "sim", "--flavor", ""], "vllm sglang llamacpp"),
        (["spectop", "config", ""], "show get set lint launch example"),
        (["spectop", "config", "example", ""], "vllm vllm-off sglang client spectop"),
        (["spectop", "config", "example", "s"], "sglang spectop"),
        (["spectop", "config", "launch", "--format", "y"], "yaml"),
        (["spectop", "--completion", "f"], "fish"),
        (["spectop", "bench", "--max-c"], "--max-concurrency"),
        (["spectop", "sim", "--garb"], "--garbage-metrics"),
        (["spectop", "tune", "--health-t"], "--health-timeout"),
    ],
)
def test_bash_completes_commands_options_and_choices(
    bash_script: Path, words: list[str], expected: str
) -> None:
    assert _bash_complete(bash_script, words) == expected


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bash completion script, made once for every case (each `spectop` run loads every command)."""
    script = tmp_path_factory.mktemp("completion") / "spectop.bash"
    script.write_text(completion_script("bash"), encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    return script


def _bash_complete(script: Path, words: list[str]) -> str:
    driver = BASH_DRIVER + 'complete_for "$@"\n'
    result = subprocess.run(
        ["bash", "-c", driver, "bash", str(script), *words],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


FILE_ARGUMENTS = ["logs", "edit", "config lint", "sim --config", "bench --json", "tune --prompts"]
FILE_ARGUMENTS += ["--record", "demo --debug-log"]  # the dashboard's, and one every command has


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
@pytest.mark.parametrize("words", FILE_ARGUMENTS)
def test_file_arguments_complete_file_names(bash_script: Path, tmp_path: Path, words: str) -> None:
    (tmp_path / "server.log").write_text("", encoding="utf-8")
    typed = ["spectop", *words.split(), str(tmp_path / "serv")]
    assert _bash_complete(bash_script, typed) == str(tmp_path / "server.log")
