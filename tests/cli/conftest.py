"""Shared helpers of the command-line tests: spectop run in this process, and a config to change."""

from __future__ import annotations

import contextlib
import functools
import io
import shutil
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import NamedTuple

import pytest

from tui.cli import main
from tui.paths import sample_configs_dir


@functools.cache
def completion_script(shell: str) -> str:
    """`spectop --completion SHELL` (in this process), made once per shell for every test that reads it."""
    with contextlib.redirect_stdout(io.StringIO()) as out, pytest.raises(SystemExit) as exit_:
        main(["--completion", shell])
    assert exit_.value.code == 0
    return out.getvalue()


class Shown(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


Spectop = Callable[..., Shown]  # `spectop ARGS` -> its exit code and output


def spectop_here(capsys: pytest.CaptureFixture[str], *args: str) -> Shown:
    """`spectop ARGS` in this process (`tui.cli.main`, its sanitized stdio and exit codes as a process has
    them), for what does not need a process of its own: no interpreter started per case."""
    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as exit_:  # argparse's usage errors
        code = int(exit_.code or 0)
    shown = capsys.readouterr()
    return Shown(code, shown.out, shown.err)


@pytest.fixture
def run_spectop(capsys: pytest.CaptureFixture[str]) -> Spectop:
    return partial(spectop_here, capsys)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A copy of the sample vLLM config.toml."""
    target = tmp_path / "config.toml"
    shutil.copy(sample_configs_dir() / "config.toml", target)
    return target
