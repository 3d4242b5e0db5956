"""Through the CLI users run: `spectop snapshot --window S --json` (and the table) against a real
llama-server stand-in doing the bad thing during the window. A figure that cannot be known is None with
its reason in `notes`, never a wrong number."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable

import httpx
import pytest
from llamacpp_fake_server import FakeLlamaServer
from metrics_test_server import Reply, ReplyServer
from test_snapshot_cli import spectop
from test_window_real_conditions import _sglang_ttft

# Past 40k tokens (where it once went wrong): the old tolerance grew with this counter.
BUSY = {"tokens": 50_000.0, "seconds": 52.345, "prompt_tokens": 9000.0, "prompt_seconds": 3.1}
# Three requests of 64 tokens in the window, at different speeds (the gauge then depends on which ones
# it covers): what a request rate over the window must be built from.
REQUESTS = ((64, 0.041), (64, 0.087), (64, 0.063))


def _during_the_window(server: FakeLlamaServer, *, second_scraper: bool) -> asyncio.Event:
    """After spectop's first reading (its second GET /metrics: page, /slots, page), three requests end;
    with `second_scraper`, another client GETs /metrics after the first one, as Prometheus does."""
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    spectop_gets = 0
    tasks: list[asyncio.Task[None]] = []

    async def traffic() -> None:
        async with httpx.AsyncClient() as other:
            for index, (tokens, seconds) in enumerate(REQUESTS):
                server.finish(tokens, seconds, prompt_tokens=17 + index, prompt_seconds=0.011 + index / 1000)
                if second_scraper and index == 0:
                    assert (await other.get(f"{server.url}/metrics")).status_code == 200
        done.set()

    def after_metrics() -> None:
        nonlocal spectop_gets
        spectop_gets += 1
        if spectop_gets == 2:
            tasks.append(loop.create_task(traffic()))

    server.after_metrics = after_metrics
    return done


async def _snapshot(second_scraper: bool, *extra: str) -> tuple[int, str, str, asyncio.Event]:
    async with FakeLlamaServer(**BUSY) as server:
        done = _during_the_window(server, second_scraper=second_scraper)
        code, out, err = await spectop("snapshot", server.url, "--window", "2", *extra)
    return code, out, err, done


async def test_snapshot_json_with_a_second_scraper_gives_no_request_rate() -> None:
    code, out, err, done = await _snapshot(True, "--json")
    assert done.is_set(), "the traffic did not happen inside the window"
    assert code == 0, err
    record = json.loads(out)
    assert record["error"] is None and record["backend"] == "llamacpp"
    assert record["requests_per_s"] is None, record["requests_per_s"]
    assert "another client also scrapes /metrics" in record["notes"]["requests_per_s"]
    # The token rate does not depend on the gauge: 192 tokens over a window of about 2 s.
    assert 192 / 5.0 <= record["generation_tokens_per_s"] <= 192 / 2.0 * 1.001
    # TPOT needs the count of finished requests (one first token each): unknown, with the reason.
    assert record["tpot_mean_s"] is None, record["tpot_mean_s"]
    assert "another client also scrapes /metrics" in record["notes"]["tpot_mean_s"]


async def test_snapshot_json_without_a_second_scraper_counts_the_three_requests() -> None:
    code, out, err, done = await _snapshot(False, "--json")
    assert done.is_set() and code == 0, err
    record = json.loads(out)
    assert "requests_per_s" not in record["notes"]
    assert 3 / 5.0 <= record["requests_per_s"] <= 3 / 2.0 * 1.001
    true_tpot = sum(seconds for _, seconds in REQUESTS) / sum(tokens - 1 for tokens, _ in REQUESTS)
    assert abs(record["tpot_mean_s"] - true_tpot) <= 1e-3 * true_tpot


async def test_snapshot_table_with_a_second_scraper_shows_a_dash_and_why() -> None:
    code, out, err, done = await _snapshot(True)
    assert done.is_set() and code == 0, err
    (row,) = [line for line in out.splitlines() if "req/s" in line or "requests" in line.lower()][:1]
    assert "–" in row, out
    assert "another client also scrapes" in " ".join(out.split())


async def _snapshot_across_a_restart(process_start: Callable[[], str]) -> dict:
    """The new process (its Process-Start-Time-Unix changed) served one request of 64 tokens and 8
    drafts of 4 inside the window."""
    async with FakeLlamaServer(**BUSY) as server:
        server.drafts, server.draft_tokens, server.accepted = 9000.0, 36000.0, 30000.0
        gets = 0

        def restart_after_the_first_reading() -> None:
            nonlocal gets
            gets += 1
            if gets == 2:
                server.restart(process_start())
                server.finish(64, 0.05)
                server.drafts, server.draft_tokens, server.accepted = 8.0, 32.0, 16.0

        server.after_metrics = restart_after_the_first_reading
        code, out, err = await spectop("snapshot", server.url, "--window", "2", "--json")
    assert gets >= 3 and code == 0, err
    record = json.loads(out)
    assert record["error"] is None and record["restarted_in_window"] is True
    assert "restarted during the window" in record["notes"]["window"]
    assert record["acceptance_rate"] == 16 / 32 and record["mean_acceptance_length"] == 1 + 16 / 8
    return record


async def test_snapshot_across_a_llama_server_restart_counts_from_its_start() -> None:
    # The start is on this machine's monotonic clock (µs), half a second after the first reading.
    record = await _snapshot_across_a_restart(lambda: str(int((time.monotonic() + 0.5) * 1e6)))
    assert "by Process-Start-Time-Unix" in record["notes"]["window"]
    assert record["restarted_s_ago"] > 0 and record["covered_s"] == record["restarted_s_ago"]
    assert record["generation_tokens_per_s"] == pytest.approx(64 / record["covered_s"], rel=1e-2)


async def test_snapshot_across_a_restart_of_a_llama_server_elsewhere_gives_no_rates() -> None:
    # "2000" µs: another machine's clock, so when the new process started is not known. The old figure,
    # 64 tokens over the whole window, was a guess: the rates are None, each with the reason.
    record = await _snapshot_across_a_restart(lambda: "2000")
    assert record["restarted_s_ago"] is None and record["covered_s"] is None
    for name in ("generation_tokens_per_s", "requests_per_s", "prompt_tokens_per_s"):
        assert record[name] is None
        assert "restarted inside the window at a time not known" in record["notes"][name]
    assert "the server runs on another machine" in record["notes"]["window"]


async def test_snapshot_json_gives_a_first_bucket_quantile_as_a_bound() -> None:
    # Every sample in the first (≤ 100 ms) bucket: the JSON keeps the interpolated value but says it is
    # only "below 100 ms".
    pages = [_sglang_ttft([0] * 8, 0.0), _sglang_ttft([40] * 8, 40 * 0.0065)]
    async with ReplyServer([Reply(text.encode()) for text in pages]) as server:
        code, out, err = await spectop("snapshot", server.url, "--window", "0.3", "--json")
    assert code == 0, err
    record = json.loads(out)
    assert record["backend"] == "sglang"
    assert abs(record["ttft_mean_s"] - 0.0065) < 1e-9
    assert record["quantile_bounds"]["ttft_p50_s"] == [0.0, 0.1]
    assert "first bucket" in record["notes"]["ttft_p50_s"]
    async with ReplyServer([Reply(text.encode()) for text in pages]) as server:
        code, out, err = await spectop("snapshot", server.url, "--window", "0.3")
    assert code == 0, err
    assert "6.5 ms / < 100 ms / < 100 ms" in out
