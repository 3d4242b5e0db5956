"""The backend detected per endpoint is remembered, yet a different server on the same URL is noticed."""

from __future__ import annotations

import httpx
from metrics_test_server import Reply, ReplyServer, sample_body

from tui.settings import EndpointSettings
from tui.telemetry.backends import BackendDetector, detect_backend
from tui.telemetry.monitor import EndpointMonitor
from tui.telemetry.prometheus import parse_metrics_text


def _samples(backend: str, name: str = "metrics_t0.txt") -> tuple:
    return tuple(parse_metrics_text(sample_body(backend, name).decode()))


def test_detector_answers_like_detect_backend_page_after_page() -> None:
    pages = [
        _samples("vllm"),
        _samples("vllm", "metrics_t1.txt"),
        _samples("vllm"),
        _samples("sglang"),  # a different server after a restart
        _samples("sglang", "metrics_t1.txt"),
        (),
        _samples("llamacpp"),
        _samples("vllm"),
    ]
    detector = BackendDetector()
    answers = [detector.detect(samples) for samples in pages]
    assert answers == [detect_backend(samples) for samples in pages]
    assert answers == ["vllm", "vllm", "vllm", "sglang", "sglang", None, "llamacpp", "vllm"]


def test_detector_sees_a_page_whose_names_changed_in_place() -> None:
    detector = BackendDetector()
    vllm_page = "vllm:a_total 1\nvllm:b_total 2\nsglang:c_total 3\n"
    sglang_page = "vllm:a_total 1\nsglang:b_total 2\nsglang:c_total 3\n"  # same length, other names
    assert detector.detect(tuple(parse_metrics_text(vllm_page))) == "vllm"
    assert detector.detect(tuple(parse_metrics_text(sglang_page))) == "sglang"
    assert detector.detect(tuple(parse_metrics_text(vllm_page))) == "vllm"


async def test_monitor_notices_a_different_server_after_a_restart() -> None:
    replies = [
        Reply(sample_body("vllm", "metrics_t0.txt")),
        Reply(sample_body("vllm", "metrics_t1.txt")),
        Reply(sample_body("sglang", "metrics_t0.txt")),
        Reply(sample_body("sglang", "metrics_t1.txt")),
    ]
    async with ReplyServer(replies) as server, httpx.AsyncClient() as client:
        monitor = EndpointMonitor(EndpointSettings(name="swap", url=server.url), window_s=60.0)
        readings = [await monitor.poll(client) for _ in range(4)]
    assert [reading.backend for reading in readings] == ["vllm", "vllm", "sglang", "sglang"]
    assert monitor.window.backend == "sglang"
