"""The log pane's core: known logger prefixes cut to HH:MM:SS, access lines told apart, figures found."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.telemetry.logs.display import display_line, figure_spans, is_access

SAMPLES = Path(__file__).parents[1] / "telemetry" / "log_samples"

VLLM_STATS = (
    "(APIServer pid=1) INFO 08-20 14:03:20 [loggers.py:257] Engine 000: "
    "Avg prompt throughput: 112.0 tokens/s, "
    "Avg generation throughput: 181.2 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 2.1%, "
    "Prefix cache hit rate: 0.0%"
)


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (VLLM_STATS, "14:03:20 " + VLLM_STATS.split("] ", 1)[1]),
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
    ],
)
def test_known_prefixes_give_way_to_a_short_time(raw: str, text: str) -> None:
    assert display_line(raw).text == text


def test_llamacpp_lines_lose_their_uptime_and_source_tag() -> None:
    shown = display_line(
        "0.00.674.091 I slot print_timing: id  1 | task 2 | draft acceptance = 1.00000 "
        "(   56 accepted /    56 generated), mean len =  9.00"
    )
    assert shown.text.startswith("id  1 | task 2 | draft acceptance")
    assert display_line("0.00.003.748 W srv  llama_server: security: no API key").text == (
        "WARNING security: no API key"
    )


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


def test_uvicorn_level_prefix_is_read_as_the_level() -> None:
    shown = display_line("(APIServer pid=1) ERROR:    Exception in ASGI application")
    assert shown.text == "ERROR Exception in ASGI application"
    assert not is_access(shown.message)


def test_figures_are_numbers_with_units_and_named_figures_in_stats() -> None:
    message = display_line(VLLM_STATS).message
    figures = [message[start:end] for start, end in figure_spans(message, named=True)]
    assert figures == ["112.0 tokens/s", "181.2 tokens/s", "4 reqs", "0 reqs", "2.1%", "0.0%"]
    sglang = (
        "Decode batch, #running-req: 3, #token: 266624, accept len: 1.67, gen throughput (token/s): 183.10"
    )
    assert [sglang[a:b] for a, b in figure_spans(sglang, named=True)] == ["3", "266624", "1.67", "183.10"]
    assert [sglang[a:b] for a, b in figure_spans(sglang)] == []
    size = "GPU KV cache size: 758,224 tokens, Maximum concurrency: 23.14x"
    assert [size[a:b] for a, b in figure_spans(size)] == ["758,224 tokens", "23.14x"]
