# ruff: noqa: E501  (real log lines)
"""Garbled lines (`unread`) and lines the parser raised on (`failed_lines`): dropped, counted, reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_tailer import followed_events

from tui.cli import main
from tui.telemetry.events import SpecDecodeEvent, StatsEvent
from tui.telemetry.logs import LogParser, llamacpp, parse_events

SAMPLES = Path(__file__).parent / "log_samples"

VLLM_SPEC = "(APIServer pid=1) INFO 08-20 14:04:17 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.42, Accepted throughput: 39.17 tokens/s, Drafted throughput: 55.20 tokens/s, Accepted: 1629 tokens, Drafted: 2296 tokens, Per-position acceptance rate: 0.807, 0.612, Avg Draft acceptance rate: 70.9%"
VLLM_STATS = "(APIServer pid=1) INFO 08-20 14:04:17 [loggers.py:310] Engine 000: Avg prompt throughput: 12.0 tokens/s, Avg generation throughput: 277.9 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.7%, Prefix cache hit rate: 34.6%"
SGLANG_DECODE = "[2026-07-20 09:50:00 TP0] Decode batch, #running-req: 3, #token: 512, token usage: 0.05, accept len: 2.53, accept rate: 0.51, cuda graph: True, gen throughput (token/s): 187.20, #queue-req: 0"
BROKEN = "0.00.674.091 I slot print_timing: id  1 | task 2 | draft acceptance = 0.50000 (   5 accepted /    10 generated)"
LLAMACPP = "0.00.640.963 I slot print_timing: id  0 | task 2 | draft acceptance = 0.57576 (   19 accepted /    33 generated), mean len =  2.10"

# Each mutation keeps the line's shape (a grammar still reads it) but prints a value no server can.
GARBLED = [
    VLLM_SPEC.replace("rate: 70.9%", "rate: 7151.7%"),  # acceptance 71.5
    VLLM_SPEC.replace("rate: 70.9%", "rate: -81.0%"),
    VLLM_SPEC.replace("length: 2.42", "length: -2.42"),  # mean < 1 (even after the old-convention +1)
    VLLM_SPEC.replace("length: 2.42", "length: 0.50"),  # the current format is never read as the old one
    VLLM_SPEC.replace("0.807, 0.612", "0.807, 6.12"),  # a per-position rate above 1
    VLLM_SPEC.replace("Accepted: 1629", "Accepted: 91629"),  # more accepted than drafted
    VLLM_SPEC.replace("Accepted throughput: 39.17", "Accepted throughput: -39.17"),
    VLLM_STATS.replace("generation throughput: 277.9", "generation throughput: -277.9"),
    VLLM_STATS.replace("usage: 0.7%", "usage: 170.0%"),
    VLLM_STATS.replace("hit rate: 34.6%", "hit rate: -34.6%"),
    VLLM_STATS.replace("Running: 3", "Running: -3"),
    LLAMACPP.replace("0.57576", "5.7576"),
    LLAMACPP.replace("mean len =  2.10", "mean len =  0.10"),
]


def _figures(event: object) -> dict[str, object]:
    assert isinstance(event, StatsEvent | SpecDecodeEvent)
    return event.model_dump(exclude={"line", "time", "kind", "backend", "engine", "extra", "scope"})


@pytest.mark.parametrize("line", GARBLED)
def test_an_impossible_figure_drops_the_event_and_counts_it_unread(line: str) -> None:
    parser = LogParser()
    assert parser.feed(line) == []
    assert parser.unread == 1
    assert parse_events(line) == []


def test_sglang_bad_accept_rate_drops_the_spec_event_only() -> None:
    parser = LogParser()
    events = parser.feed(SGLANG_DECODE.replace("accept rate: 0.51", "accept rate: 71.51"))
    assert [event.kind for event in events] == ["stats"]
    assert parser.unread == 1
    events = parser.feed(SGLANG_DECODE.replace("accept len: 2.53", "accept len: -2.53"))
    assert [event.kind for event in events] == ["stats"]
    assert parser.unread == 2


@pytest.mark.parametrize("line", [VLLM_SPEC, VLLM_STATS, SGLANG_DECODE, LLAMACPP])
def test_real_lines_are_kept(line: str) -> None:
    parser = LogParser()
    assert parser.feed(line)
    assert parser.unread == 0


def test_spectop_logs_json_and_text_leave_them_out_and_report_the_unread_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join([VLLM_SPEC, GARBLED[0], GARBLED[1], VLLM_STATS]) + "\n")
    assert main(["logs", str(log), "--json"]) == 0
    captured = capsys.readouterr()
    records = [json.loads(line) for line in captured.out.splitlines()]
    assert [record["kind"] for record in records] == ["spec_decode", "stats"]
    assert all(0.0 <= record.get("acceptance_rate", 0.0) <= 1.0 for record in records)
    assert "2 events unread" in captured.err
    # the readable text never shows an impossible percentage
    log.write_text("\n".join(GARBLED) + "\n")
    assert main(["logs", str(log)]) == 0
    captured = capsys.readouterr()
    assert "7151.7%" not in captured.out and "-81.0%" not in captured.out
    assert captured.out == ""
    assert f"{len(GARBLED)} events unread" in captured.err


@pytest.fixture
def broken_acceptance_grammar(monkeypatch: pytest.MonkeyPatch) -> None:
    """llama.cpp's `draft acceptance` grammar with a bug: it raises."""

    def broken(line: str, start: int) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(llamacpp, "parse_acceptance", broken)


@pytest.mark.parametrize("json_flag", [["--json"], []])
def test_spectop_logs_reports_the_lines_it_could_not_read(
    broken_acceptance_grammar: None, json_flag: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join([VLLM_STATS, BROKEN, BROKEN, BROKEN, VLLM_STATS]) + "\n")
    assert main(["logs", str(log), *json_flag]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2  # both stats lines
    if json_flag:
        assert [json.loads(line)["kind"] for line in captured.out.splitlines()] == ["stats", "stats"]
    assert "3 lines unreadable" in captured.err and "ZeroDivisionError: division by zero" in captured.err


async def test_follow_events_counts_a_line_it_could_not_read_and_goes_on(
    broken_acceptance_grammar: None, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    log.write_text(f"{BROKEN}\n{VLLM_STATS}\n")
    parser = LogParser()
    received = await followed_events(log, parser, lambda received: len(received) >= 2)
    assert [(line, len(events)) for line, events in received[:2]] == [(BROKEN, 0), (VLLM_STATS, 1)]
    assert parser.failed_lines == 1
