"""An exception inside a background worker is reported once and never takes the app down."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_waiting import spectop, wait_for

from tui.ui.editor_app import EditorApp


async def test_the_dashboard_reports_a_failing_poll_and_keeps_polling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tui.settings import endpoint_from_url
    from tui.telemetry.monitor import EndpointMonitor

    calls = 0

    async def broken_poll(self: EndpointMonitor, client: object) -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("monitor bug")

    monkeypatch.setattr(EndpointMonitor, "poll", broken_poll)
    app = spectop(endpoint_from_url("http://127.0.0.1:9"), poll_interval_s=0.05)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: any("monitor bug" in n.message for n in app._notifications))
        polls_then = calls
        await wait_for(pilot, lambda: calls > polls_then)  # the next ticks poll again
        assert app.is_running


async def test_the_editor_reports_a_failing_load_keeps_running_and_logs_the_traceback(
    tmp_path: Path, config_toml: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tui.debug_log import start_debug_log, stop_debug_log

    async def broken_open(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("tui.screens.editor_saving.open_config_async", broken_open)
    log = tmp_path / "debug.log"
    start_debug_log(log)
    try:
        app = EditorApp(config_toml)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: any("disk on fire" in n.message for n in app._notifications))
            assert app.is_running and app.return_code is None
    finally:
        stop_debug_log()
    text = log.read_text()
    assert "load_file failed" in text and "Traceback" in text and "RuntimeError: disk on fire" in text
