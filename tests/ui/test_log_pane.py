"""The log pane at 80 columns: stats figures readable (wrapped, no prefix), access lines hidden until `h`."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App

from tui.board import LogEntry
from tui.telemetry.logs.display import display_line, figure_spans, is_access
from tui.widgets.log_pane import LogPane

STATS = (
    "(APIServer pid=1) INFO 08-20 14:03:20 [loggers.py:257] Engine 000: "
    "Avg prompt throughput: 112.0 tokens/s, "
    "Avg generation throughput: 181.2 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 2.1%, "
    "Prefix cache hit rate: 0.0%"
)
ACCESS = '(APIServer pid=1) INFO:     127.0.0.1:54321 - "GET /metrics HTTP/1.1" 200 OK'


def _text(pane: LogPane) -> str:
    return "\n".join(strip.text for strip in pane.lines)


async def test_stats_readable_at_80_columns_access_lines_hide_lines_rewrap_and_figures_stand_out() -> None:
    app: App[None] = App()
    async with app.run_test(size=(80, 24)) as pilot:
        await app.mount(pane := LogPane(id="log"))
        pane.focus()
        pane.show(
            [LogEntry(0.0, STATS, "stats"), LogEntry(0.0, ACCESS, "plain"), LogEntry(0.0, ACCESS, "plain")]
        )
        await pilot.pause()
        text = _text(pane)
        assert all(len(strip.text) <= 78 for strip in pane.lines)
        assert text.startswith("14:03:20 Engine 000: Avg prompt throughput: 112.0 tokens/s")
        for figure in ("181.2 tokens/s", "4 reqs", "2.1%", "0.0%"):
            assert figure in text.replace("\n", " ")
        assert "pid=" not in text and "GET /metrics" not in text
        assert "2 access lines hidden" in str(pane.border_subtitle)

        await pilot.press("h")

        await pilot.pause()
        assert _text(pane).count('"GET /metrics HTTP/1.1" 200') == 2

        await pilot.press("h")
        pane.add(LogEntry(0.0, ACCESS, "plain"))
        await pilot.pause()
        assert "GET /metrics" not in _text(pane)
        assert "3 access lines hidden" in str(pane.border_subtitle)
        narrow = len(pane.lines)
        await pilot.resize_terminal(200, 24)  # the lines wrap again
        await pilot.pause()
        assert len(pane.lines) < narrow
        error = "ERROR 08-20 14:03:21 [core.py:1] CUDA out of memory"
        pane.show([LogEntry(0.0, STATS, "stats"), LogEntry(0.0, error, "error")])  # figures bold, errors too
        await pilot.pause()
        stats = pane.lines[0]
        figure = [segment for segment in stats if segment.text == "112.0 tokens/s"]
        plain = [segment for segment in stats if "Engine 000" in segment.text]
        assert figure and figure[0].style is not None and figure[0].style.bold
        assert plain and not (plain[0].style and plain[0].style.bold)
        error_line = next(strip for strip in pane.lines if "CUDA out of memory" in strip.text)
        assert error_line.text.startswith("14:03:21 ERROR CUDA")
        assert any(segment.style and segment.style.bold for segment in error_line if "CUDA" in segment.text)


SAMPLES = Path(__file__).parents[1] / "telemetry" / "log_samples"

LLAMA_TIMING = (  # llama.cpp's print_timing line after its prefix
    "id  1 | task 2 | draft acceptance = 1.00000 (   56 accepted /    56 generated), mean len =  9.00"
)


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (STATS, "14:03:20 " + STATS.split("] ", 1)[1]),
        (
            "(EngineCore_DP0 pid=243) WARNING 08-20 14:02:14 [speculative.py:975] Enabling many tokens",
            "14:02:14 WARNING Enabling many tokens",
        ),
        (
            "INFO 10-16 19:05:47 metrics.py:367] Avg prompt throughput: 1.0 tokens/s",
            "19:05:47 Avg prompt throughput: 1.0 tokens/s",
        ),
        (
            "[2026-07-20 09:50:00.123 TP0] Decode batch, #running-req: 3",
            "09:50:00 Decode batch, #running-req: 3",
        ),
        ("[2026-07-20 09:50:00] Decode batch, accept len: 1.67", "09:50:00 Decode batch, accept len: 1.67"),
        ("[10:00:00 TP0] Prefill batch", "10:00:00 Prefill batch"),
        (
            "2026-07-20T09:50:00.123456789Z stdout F "
            "(APIServer pid=1) INFO 08-20 14:02:14 [api.py:1] Started",
            "14:02:14 Started",
        ),
        ("Traceback (most recent call last):", "Traceback (most recent call last):"),
        # llama.cpp: its uptime and source tag go
        (f"0.00.674.091 I slot print_timing: {LLAMA_TIMING}", LLAMA_TIMING),
        ("0.00.003.748 W srv  llama_server: security: no API key", "WARNING security: no API key"),
        # uvicorn's level prefix is read as the level
        ("(APIServer pid=1) ERROR:    Exception in ASGI application", "ERROR Exception in ASGI application"),
    ],
)
def test_known_prefixes_give_way_to_a_short_time(raw: str, text: str) -> None:
    shown = display_line(raw)
    assert shown.text == text and not is_access(shown.message)


@pytest.mark.parametrize(
    "raw",
    [
        '(APIServer pid=1) INFO:     127.0.0.1:54321 - "GET /metrics HTTP/1.1" 200 OK',
        'INFO:     127.0.0.1:54321 - "GET /metrics HTTP/1.1" 200 OK',
        '[2026-07-20 09:15:12] INFO:     10.0.3.17:41876 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        "0.01.258.720 I srv  log_server_r: request: GET /metrics 127.0.0.1 200",
        "request: GET /health 127.0.0.1 200",
    ],
)
def test_access_lines_are_flagged(raw: str) -> None:
    assert display_line(raw).access


def test_the_sample_logs_stats_lines_are_not_access_lines() -> None:
    for sample in SAMPLES.glob("*.log"):
        for raw in sample.read_text(encoding="utf-8").splitlines():
            shown = display_line(raw)
            if shown.access:
                assert "HTTP/1.1" in raw or "request: " in raw
            if "throughput" in raw or "Decode batch" in raw or "print_timing" in raw:
                assert not shown.access
                assert "pid=" not in shown.head


def test_figures_are_numbers_with_units_and_named_figures_in_stats() -> None:
    message = display_line(STATS).message
    figures = [message[start:end] for start, end in figure_spans(message, named=True)]
    assert figures == ["112.0 tokens/s", "181.2 tokens/s", "4 reqs", "0 reqs", "2.1%", "0.0%"]
    sglang = (
        "Decode batch, #running-req: 3, #token: 266624, accept len: 1.67, gen throughput (token/s): 183.10"
    )
    assert [sglang[a:b] for a, b in figure_spans(sglang, named=True)] == ["3", "266624", "1.67", "183.10"]
    assert [sglang[a:b] for a, b in figure_spans(sglang)] == []
    size = "GPU KV cache size: 758,224 tokens, Maximum concurrency: 23.14x"
    assert [size[a:b] for a, b in figure_spans(size)] == ["758,224 tokens", "23.14x"]
