"""scrape_metrics and EndpointMonitor on a real socket: every failure is a Scrape, never raised."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from metrics_test_server import Reply, ReplyServer, closed_port, poll_clock, sample_body, vllm_page

from tui.debug_log import ENV_VARIABLE, debug_log_path, start_debug_log, stop_debug_log
from tui.format import FIGURES_FAILED
from tui.settings import EndpointSettings
from tui.telemetry.figures import Figures
from tui.telemetry.monitor import EndpointMonitor, backoff_s
from tui.telemetry.scraper import scrape_metrics
from tui.telemetry.window import ScrapeWindow


async def test_good_page_after_a_redirect() -> None:
    replies = [
        Reply(b"", status=307, headers={"Location": "/metrics/"}),
        Reply(sample_body("vllm", "metrics_t0.txt")),
    ]
    async with ReplyServer(replies) as server, httpx.AsyncClient() as client:
        scrape = await scrape_metrics(client, f"{server.url}/metrics")
    assert scrape.up and scrape.error is None
    assert scrape.backend == "vllm"
    assert scrape.samples is not None and len(scrape.samples) == 445
    assert scrape.time > 1e9 and scrape.monotonic > 0
    assert [request.path for request in server.requests] == ["/metrics", "/metrics/"]


@pytest.mark.parametrize(
    ("reply", "options", "error"),
    [
        (Reply(b"x 1\n", delay_s=5.0), {"timeout_s": 0.3}, "timeout after 0.3 s"),
        (Reply(b"boom", status=500), {}, "HTTP 500"),
        (
            Reply(b"ok_total 1\nok_total 2\n<html><body>Not metrics</body></html>\n"),
            {},
            "not Prometheus text: line 3: expected a metric sample",
        ),
        (Reply(b"\xff\xfe\x00garbage\x80\n"), {}, "not Prometheus text"),  # undecodable: reported, not raised
        (Reply(b"x_total 1\n" * 200_000), {"max_bytes": 2**20}, "response larger than 1 MiB"),
        (Reply(b"x_total 1\n" * 200_000, chunked=True), {"max_bytes": 2**20}, "response larger than 1 MiB"),
        (Reply(b"x_total 1\n" * 900_000, chunked=True), {}, "response larger than 8 MiB"),  # the default cap
    ],
    ids=["timeout", "http-500", "garbage", "undecodable", "oversized", "oversized-chunked", "default-cap"],
)
async def test_a_failing_page_is_a_scrape_with_its_error(reply: Reply, options: dict, error: str) -> None:
    async with ReplyServer([reply]) as server, httpx.AsyncClient() as client:
        scrape = await scrape_metrics(client, f"{server.url}/metrics", **options)
    assert not scrape.up and scrape.samples is None and scrape.backend is None
    assert scrape.error is not None and scrape.error.startswith(error), scrape.error


async def test_headers_are_sent_and_process_start_kept() -> None:
    reply = Reply(
        sample_body("llamacpp", "metrics_t1.txt"), headers={"Process-Start-Time-Unix": "1040295444"}
    )
    async with ReplyServer([reply]) as server, httpx.AsyncClient() as client:
        scrape = await scrape_metrics(client, f"{server.url}/metrics", headers={"Authorization": "Bearer k"})
    assert scrape.backend == "llamacpp" and scrape.process_start == "1040295444"
    assert server.requests[0].headers["authorization"] == "Bearer k"


# --- EndpointMonitor ---------------------------------------------------------------------------------------


def _counter_page(generated: float) -> bytes:
    return vllm_page(generated, running=2, model="served-model").encode()


async def test_monitor_reading_and_counter_restart_through_the_socket(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Counters: 1000 → 2000 → restart (30) → 1030. Never negative, never a spike.
    replies = [Reply(_counter_page(value)) for value in (1000, 2000, 30, 1030)]
    poll_moment = poll_clock(monkeypatch, [100.0, 110.0, 120.0, 130.0])
    async with ReplyServer(replies) as server, httpx.AsyncClient() as client:
        monitor = EndpointMonitor(EndpointSettings(name="gpu0", url=server.url), window_s=60.0)
        readings = []
        for _ in replies:
            poll_moment()
            readings.append(await monitor.poll(client))
    rates = [reading.figures.generation_tokens_per_s for reading in readings]
    assert rates[0] is None
    assert rates[1] == pytest.approx(100.0)
    # The page has no start time: the new process' 30 tokens cover an unknown part of the 10 s (not
    # 30 / 10 s), so no rate; from its first reading on, +1000 in 10 s (not 1030 / 20 s).
    assert rates[2] is None
    assert rates[3] == pytest.approx(1000 / 10)
    assert readings[3].figures.restarted_in_window
    last = readings[-1]
    assert (last.name, last.url, last.up) == ("gpu0", server.url, True)
    assert (last.backend, last.model) == ("vllm", "served-model")
    # Since the new process' first reading (its start is not on the page), not since the old one's last.
    assert last.figures.running == 2.0 and last.window_s == pytest.approx(10.0)
    assert server.requests[0].path == "/metrics"


async def test_monitor_backs_off_while_down() -> None:
    async with httpx.AsyncClient() as client:
        endpoint = EndpointSettings(name="down", url=f"http://127.0.0.1:{closed_port()}")
        monitor = EndpointMonitor(endpoint, window_s=60.0)
        assert monitor.due(0.0)
        first = await monitor.poll(client)
        second = await monitor.poll(client)
    assert (first.up, first.error, first.consecutive_failures) == (False, "connection refused", 1)
    assert second.consecutive_failures == 2
    assert second.figures == Figures()
    attempted = monitor._last_attempt
    assert attempted is not None
    assert not monitor.due(attempted + backoff_s(2) - 0.5)
    assert monitor.due(attempted + backoff_s(2))
    assert [backoff_s(n) for n in range(7)] == [0.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


async def test_monitor_uses_the_configured_metrics_url_model_and_api_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SPECTOP_TEST_KEY", "s3cret")
    async with ReplyServer([Reply(_counter_page(1))]) as server, httpx.AsyncClient() as client:
        metrics_url = f"{server.url}/custom"
        endpoint = EndpointSettings(
            name="k", url=server.url, metrics_url=metrics_url, model="mine", api_key_env="SPECTOP_TEST_KEY"
        )
        reading = await EndpointMonitor(endpoint, window_s=60.0).poll(client)
    assert reading.up and reading.error is None and reading.figures_failed == 0
    assert (server.requests[0].path, reading.model) == ("/custom", "mine")
    assert server.requests[0].headers["authorization"] == "Bearer s3cret"
    assert "s3cret" not in reading.model_dump_json()


async def test_monitor_asks_llamacpp_for_its_model_once() -> None:
    models = b'{"object":"list","data":[{"id":"models/target.gguf","object":"model"}]}'
    metrics = sample_body("llamacpp", "metrics_t1.txt")
    async with (
        ReplyServer([Reply(metrics), Reply(b"", status=501), Reply(models), Reply(metrics)]) as server,
        httpx.AsyncClient() as c,
    ):
        monitor = EndpointMonitor(EndpointSettings(name="llama", url=server.url), window_s=60.0)
        first = await monitor.poll(c)
        second = await monitor.poll(c)
    # /slots is disabled (501, no --slots): not asked again for a while.
    paths = ["/metrics", "/slots", "/v1/models", "/metrics"]
    assert [request.path for request in server.requests] == paths
    assert monitor.slots_error == "HTTP 501"
    assert first.model == second.model == "models/target.gguf"
    assert first.backend == "llamacpp"


async def test_openai_endpoint_is_probed_through_v1_models() -> None:
    models = b'{"object":"list","data":[{"id":"gpt-x"}]}'
    async with ReplyServer([Reply(models)]) as server, httpx.AsyncClient() as client:
        endpoint = EndpointSettings(name="gw", url=server.url, backend="openai")
        reading = await EndpointMonitor(endpoint, window_s=60.0).poll(client)
    assert server.requests[0].path == "/v1/models"
    assert (reading.up, reading.backend, reading.model) == (True, "openai", "gpt-x")


@pytest.fixture
def debug_log(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "debug.log"
    start_debug_log(path)
    yield path
    stop_debug_log()


async def test_a_failing_figure_rule_is_counted_shown_and_logged(
    debug_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: ScrapeWindow) -> object:
        raise ZeroDivisionError("a figure rule bug")

    monkeypatch.setattr(ScrapeWindow, "figures", broken)
    page = sample_body("vllm", "metrics_t0.txt")
    monitor = EndpointMonitor(EndpointSettings(name="a", url="http://127.0.0.1:1"), window_s=30)
    async with ReplyServer([Reply(page), Reply(page)]) as server, httpx.AsyncClient() as client:
        monitor.endpoint = EndpointSettings(name="a", url=server.url)
        first = await monitor.poll(client)
        second = await monitor.poll(client)
    assert first.up and first.error == FIGURES_FAILED and first.figures_failed == 1
    assert second.figures_failed == 2 and monitor.figure_failures == 2
    logged = debug_log.read_text()
    assert "a: deriving the figures failed (1 times)" in logged
    assert "Traceback" in logged and "ZeroDivisionError: a figure rule bug" in logged


def test_the_debug_log_is_off_unless_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(ENV_VARIABLE, raising=False)
    assert debug_log_path(None) is None
    monkeypatch.setenv(ENV_VARIABLE, str(tmp_path / "env.log"))
    assert debug_log_path(None) == tmp_path / "env.log"
    assert debug_log_path(tmp_path / "option.log") == tmp_path / "option.log"  # the option wins


def test_the_card_says_the_figures_failed_where_they_go() -> None:
    from tui.telemetry.reading import EndpointReading
    from tui.widgets.card_view import CardData, badge_line

    reading = EndpointReading(name="a", time=99.0, up=True, error=FIGURES_FAILED, figures_failed=1)
    data = CardData(name="a", reading=reading, now=100.0)
    assert data.status == "up"
    assert FIGURES_FAILED in badge_line(data, 80).plain
