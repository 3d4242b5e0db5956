# ruff: noqa: E501  (real log lines)
"""The one safety net between a log file and the parser: a line the parser raises on gives no events and is
counted (`LogParser.failed_lines`), shown by `spectop logs` and kept per endpoint for the detail screen."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tui.cli import main
from tui.telemetry.logs import LogParser, llamacpp
from tui.telemetry.logs.follow import follow_events

SAMPLES = Path(__file__).parent / "log_samples"
BROKEN = "0.00.674.091 I slot print_timing: id  1 | task 2 | draft acceptance = 0.50000 (   5 accepted /    10 generated)"
STATS = (
    "(APIServer pid=1) INFO 08-20 14:04:17 [loggers.py:310] Engine 000: Avg prompt throughput: 387.9 tokens/s, "
    "Avg generation throughput: 277.9 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.7%, "
    "Prefix cache hit rate: 34.6%"
)


@pytest.fixture
def broken_acceptance_grammar(monkeypatch: pytest.MonkeyPatch) -> None:
    """llama.cpp's `draft acceptance` grammar with a bug: it raises."""

    def broken(line: str, start: int) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(llamacpp, "parse_acceptance", broken)


def test_feed_raises_and_feed_guarded_counts(broken_acceptance_grammar: None) -> None:
    parser = LogParser()
    with pytest.raises(ZeroDivisionError):
        parser.feed(BROKEN)
    assert parser.feed_guarded(BROKEN) == [] and parser.feed_guarded(BROKEN) == []
    assert [event.kind for event in parser.feed_guarded(STATS)] == ["stats"]  # the next line still parses
    assert (parser.failed_lines, parser.last_failure) == (2, "ZeroDivisionError: division by zero")


@pytest.mark.parametrize("json_flag", [["--json"], []])
def test_spectop_logs_reports_the_lines_it_could_not_read(
    broken_acceptance_grammar: None, json_flag: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join([STATS, BROKEN, BROKEN, BROKEN, STATS]) + "\n")
    assert main(["logs", str(log), *json_flag]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2  # both stats lines
    if json_flag:
        assert [json.loads(line)["kind"] for line in captured.out.splitlines()] == ["stats", "stats"]
    assert "3 lines unreadable" in captured.err and "ZeroDivisionError: division by zero" in captured.err


def test_spectop_logs_says_nothing_when_every_line_was_read(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["logs", str(SAMPLES / "llamacpp.server.log"), "--json"]) == 0
    assert "unreadable" not in capsys.readouterr().err


async def _until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(400):
        if condition():
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"timed out waiting for {what}")


async def test_follow_events_counts_a_line_it_could_not_read_and_goes_on(
    broken_acceptance_grammar: None, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    log.write_text(f"{BROKEN}\n{STATS}\n")
    parser = LogParser()
    received: list[tuple[str | None, list[object]]] = []

    async def consume() -> None:
        async for line, events in follow_events(log, parser, from_start=True, poll_interval_s=0.02):
            received.append((line, list(events)))

    task = asyncio.create_task(consume())
    try:
        await _until(lambda: len(received) >= 2, "both lines")
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert [(line, len(events)) for line, events in received[:2]] == [(BROKEN, 0), (STATS, 1)]
    assert parser.failed_lines == 1
