# ruff: noqa: E501  (real log lines)
"""A log line the parser could not read reaches the board as a count per endpoint (for the detail screen)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from ui_waiting import wait_for, wait_until_tailed

from tui.paths import themes_dir
from tui.settings import EndpointSettings, Settings
from tui.telemetry.logs import llamacpp
from tui.ui.app import SpectopApp

BROKEN = "0.00.674.091 I slot print_timing: id  1 | task 2 | draft acceptance = 0.50000 (   5 accepted /    10 generated)"


def _closed_port() -> int:
    with socket.socket() as probe:  # bound then closed: nothing listens there
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_board_counts_the_log_lines_the_parser_could_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(line: str, start: int) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(llamacpp, "parse_acceptance", broken)
    log = tmp_path / "server.log"
    log.write_text("")
    endpoint = EndpointSettings(name="x", url=f"http://127.0.0.1:{_closed_port()}", log_file=log)
    app = SpectopApp(
        Settings(poll_interval_s=0.25, endpoints=[endpoint]),
        theme_folders=[themes_dir()],
        remember_theme_choice=False,
    )
    async with app.run_test(size=(80, 24)) as pilot:
        before = await wait_until_tailed(pilot, log, lambda: len(app.board.log_entries("x")))
        with log.open("a") as file:
            file.write(f"{BROKEN}\nan ordinary line\n{BROKEN}\n")
        await wait_for(pilot, lambda: app.board.log_failed_lines.get("x") == 2)
        await wait_for(pilot, lambda: len(app.board.log_entries("x")) >= before + 3)  # shown, as plain lines
