"""llama.cpp under production conditions through real sockets: a second scraper, restarts, /slots."""

from __future__ import annotations

import dataclasses
import json
import random

import httpx
import pytest
from llamacpp_fake_server import BUSY, FakeLlamaServer
from metrics_test_server import SAMPLES, Reply, ReplyServer, assert_rate, poll_clock, sample_body, spectop

from tui.settings import EndpointSettings
from tui.telemetry.monitor import EndpointMonitor
from tui.telemetry.scraper import Scrape, fetch_slots_decoded, scrape_metrics
from tui.telemetry.window import ScrapeWindow


async def _scrape_at(client: httpx.AsyncClient, server: FakeLlamaServer, at: float) -> Scrape:
    scrape = await scrape_metrics(client, f"{server.url}/metrics")
    assert scrape.up, scrape.error
    return dataclasses.replace(scrape, time=at, monotonic=at)


async def _run(server: FakeLlamaServer, *, second_scraper: bool, rounds: int = 12) -> list[tuple]:
    """Per spectop scrape: (figures, true requests, true decode time per token) over its window."""
    rng = random.Random(7)
    window = ScrapeWindow(window_s=6.0)  # two scrapes per window: each figure covers one round
    results = []
    async with httpx.AsyncClient() as client:
        window.add(await _scrape_at(client, server, 0.0))
        for round_ in range(1, rounds + 1):
            durations = [rng.uniform(0.04, 0.09) for _ in range(3)]
            for index, seconds in enumerate(durations):
                server.finish(
                    64, seconds, prompt_tokens=rng.randint(10, 40), prompt_seconds=rng.uniform(0.005, 0.02)
                )
                if second_scraper and index == 0:
                    # Prometheus scrapes too: llama-server resets its gauges for everyone.
                    assert (await client.get(f"{server.url}/metrics")).status_code == 200
            window.add(await _scrape_at(client, server, 5.0 * round_))
            results.append((window.figures(), 3, sum(durations) / (3 * 63)))
    return results


async def test_second_scraper_never_gives_a_wrong_request_rate() -> None:
    # BUSY: past 40k tokens the old tolerance grew with the counter and let every stolen gauge through.
    async with FakeLlamaServer(**BUSY) as server:
        results = await _run(server, second_scraper=True)
    for figures, requests, _ in results:
        assert figures.requests_per_s is None, (figures.requests_per_s, requests / 5.0)
        assert "another client" in figures.notes["requests_per_s"]
        assert figures.tpot_mean_s is None and "another client" in figures.notes["tpot_mean_s"]
        assert figures.generation_tokens_per_s == pytest.approx(3 * 64 / 5.0)


async def test_only_spectop_scraping_counts_requests_exactly() -> None:
    async with FakeLlamaServer(**BUSY) as server:
        results = await _run(server, second_scraper=False)
    for figures, requests, tpot in results:
        assert figures.requests_per_s == pytest.approx(requests / 5.0)
        assert figures.tpot_mean_s == pytest.approx(tpot, rel=2e-3)  # Δseconds from 6 printed digits
        assert "requests_per_s" not in figures.notes


async def test_counters_too_coarse_to_count_requests_give_none() -> None:
    # 20,000 s of generation print as 20000.0: ±0.05 s, times ~1000 tok/s is ±50 tokens: no count.
    async with FakeLlamaServer(tokens=900_000, seconds=20_000.0) as server:
        results = await _run(server, second_scraper=False, rounds=3)
    # Nobody else scrapes: the note names the printed digits, not another scraper.
    for figures, _, _ in results:
        assert figures.requests_per_s is None
        for note in (figures.notes["requests_per_s"], figures.notes["tpot_mean_s"]):
            assert "6 significant digits" in note and "another client" not in note


async def test_slots_give_a_live_token_rate_during_a_long_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    poll_moment = poll_clock(monkeypatch, range(100, 200))
    async with FakeLlamaServer(tokens=704, seconds=0.6) as server, httpx.AsyncClient() as client:
        monitor = EndpointMonitor(EndpointSettings(name="llama", url=server.url, model="m"), window_s=60.0)
        first = poll_moment()
        await monitor.poll(client)
        rates = []
        for decoded in (40, 80, 120):  # a long request is generating: the counters do not move
            server.running = {0: decoded}
            poll_moment()
            rates.append((await monitor.poll(client)).figures)
        server.running = {}
        server.finish(150, 1.5)  # it ends with 150 tokens: the counters jump, its slot is free
        last = poll_moment()
        done = (await monitor.poll(client)).figures
    assert [figures.generation_tokens_per_s for figures in rates] == pytest.approx([40.0, 40.0, 40.0])
    assert rates[-1].running == 1.0 and rates[-1].acceptance_rate is None
    assert "finished requests only" in rates[-1].notes["acceptance_rate"]
    assert "generation_tokens_per_s" not in rates[-1].notes
    # No double count when the request moves from /slots into the counters.
    assert done.generation_tokens_per_s == pytest.approx(150 / (last - first))
    assert not done.restarted_in_window
    assert "/slots" in server.paths


async def test_tokens_decoded_between_the_two_gets_are_not_taken_from_the_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Requests start the moment /metrics was read (as when a load test starts right after a scrape):
    # by the time /slots is read they decoded 50 tokens. Read /slots first, and those tokens belong to
    # the window; read it after /metrics, and the window's first reading claims them.
    poll_moment = poll_clock(monkeypatch, range(100, 200))
    async with FakeLlamaServer(tokens=704, seconds=0.6) as server, httpx.AsyncClient() as client:
        monitor = EndpointMonitor(EndpointSettings(name="llama", url=server.url, model="m"), window_s=60.0)

        def start_a_request() -> None:
            server.running = {0: 50}
            server.after_metrics = None

        first = poll_moment()
        await monitor.poll(client)  # learns it is llama.cpp: /metrics, /slots, then /metrics again
        assert server.paths == ["/metrics", "/slots", "/metrics"]
        server.finish(10, 0.1)  # this one ended before the window's first reading below
        server.after_metrics = start_a_request
        poll_moment()
        await monitor.poll(client)  # the window's first reading: /slots, then /metrics
        assert server.paths[3:] == ["/slots", "/metrics"]
        server.running = {}
        server.finish(100, 1.0)
        last = poll_moment()
        figures = (await monitor.poll(client)).figures
    assert figures.generation_tokens_per_s == pytest.approx(110 / (last - first))


async def test_a_request_ending_between_metrics_and_slots_is_no_restart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # /metrics is read before the request ended, /slots after: the live sum dips for one scrape.
    window = ScrapeWindow(window_s=60.0)
    async with FakeLlamaServer(tokens=1000, seconds=1.0) as server, httpx.AsyncClient() as client:
        server.running = {0: 90}
        first = await _scrape_at(client, server, 0.0)
        window.add(dataclasses.replace(first, extra_counters={"slots_decoded": 90.0}))
        second = await _scrape_at(client, server, 1.0)  # still 1000 finished tokens
        window.add(dataclasses.replace(second, extra_counters={"slots_decoded": 0.0}))  # already ended
        server.finish(100, 0.1)
        third = await _scrape_at(client, server, 2.0)
        window.add(dataclasses.replace(third, extra_counters={"slots_decoded": 0.0}))
    figures = window.figures()
    assert not figures.restarted_in_window
    assert figures.generation_tokens_per_s == pytest.approx(10 / 2.0)  # 1090 → 1100 live tokens


async def test_slots_disabled_marks_the_rate_finished_only() -> None:
    async with (
        FakeLlamaServer(tokens=704, seconds=0.6, slots_enabled=False) as server,
        httpx.AsyncClient() as c,
    ):
        monitor = EndpointMonitor(EndpointSettings(name="llama", url=server.url, model="m"), window_s=60.0)
        await monitor.poll(c)
        server.finish(64, 0.06)
        reading = await monitor.poll(c)
    assert monitor.slots_error == "HTTP 501"
    note = reading.figures.notes["generation_tokens_per_s"]
    assert "finished requests only" in note and "HTTP 501" in note


async def test_k_change_with_restart_starts_per_position_afresh() -> None:
    # k = 2 for a long time, then save & restart with k = 4: no mix of old and new positions.
    window = ScrapeWindow(window_s=60.0)
    async with FakeLlamaServer(tokens=5000, seconds=5.0) as server, httpx.AsyncClient() as client:
        server.drafts, server.draft_tokens, server.accepted = 1000.0, 2000.0, 1500.0
        server.per_position = [880.0, 620.0]
        window.add(await _scrape_at(client, server, 0.0))
        server.drafts, server.draft_tokens, server.accepted = 1100.0, 2200.0, 1650.0
        server.per_position = [968.0, 682.0]
        window.add(await _scrape_at(client, server, 10.0))
        server.restart(str(15 * 10**6))  # started at 15.0 (µs of the readings' monotonic clock)
        server.finish(64, 0.06)
        server.drafts, server.draft_tokens, server.accepted = 20.0, 80.0, 40.0
        server.per_position = [16.0, 12.0, 8.0, 4.0]
        window.add(await _scrape_at(client, server, 20.0))
    figures = window.figures()
    assert figures.per_position_acceptance == pytest.approx([16 / 20, 12 / 20, 8 / 20, 4 / 20])
    assert figures.acceptance_rate == pytest.approx(40 / 80)
    assert figures.restarted_in_window and figures.window_short
    # Since it started, not since the old process' last reading.
    assert figures.covered_s == pytest.approx(5.0)
    assert "window still short: 5 s of 1 min" in figures.notes["window"]


async def test_slots_answering_only_part_of_the_window_falls_back_to_finished_tokens() -> None:
    window = ScrapeWindow(window_s=60.0)
    async with FakeLlamaServer(tokens=1000, seconds=1.0) as server, httpx.AsyncClient() as client:
        window.add(await _scrape_at(client, server, 0.0))  # /slots not answering yet (timed out)
        server.finish(100, 0.1)
        second = await _scrape_at(client, server, 10.0)
        window.add(dataclasses.replace(second, extra_counters={"slots_decoded": 0.0}))
        server.finish(100, 0.1)
        third = await _scrape_at(client, server, 20.0)
        window.add(dataclasses.replace(third, extra_counters={"slots_decoded": 0.0}))
    figures = window.figures()
    assert figures.generation_tokens_per_s == pytest.approx(200 / 20)  # not 100 tokens over 20 s
    assert "finished requests only" in figures.notes["generation_tokens_per_s"]


async def test_a_killed_server_restarted_on_its_port_is_read_live_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Killed, then restarted on the same port with counters from zero. While it was down /slots was
    # refused like /metrics: the endpoint's being down, not /slots', so the new process is asked at once.
    poll_moment = poll_clock(monkeypatch, [100.0, 101.0, 102.0, 110.0, 111.0, 112.0])
    async with FakeLlamaServer(tokens=704, seconds=0.6) as server, httpx.AsyncClient() as client:
        monitor = EndpointMonitor(EndpointSettings(name="llama", url=server.url, model="m"), window_s=60.0)
        server.drafts, server.draft_tokens, server.accepted = 10.0, 80.0, 80.0
        poll_moment()
        await monitor.poll(client)
        server.finish(64, 0.06)
        server.drafts, server.draft_tokens, server.accepted = 18.0, 144.0, 144.0
        poll_moment()
        assert (await monitor.poll(client)).figures.acceptance_rate == 1.0
        await server.stop()
        poll_moment()
        down = await monitor.poll(client)
        assert (down.up, down.error) == (False, "connection refused")
        server.restart("2000")
        await server.start(port=server.port)
        seen_from = len(server.paths)
        poll_moment()
        readings = [await monitor.poll(client)]
        server.finish(64, 0.06)  # the new process's first request ended, with its drafts
        server.drafts, server.draft_tokens, server.accepted = 8.0, 64.0, 64.0
        for decoded in (40, 80):  # and a long one is generating
            server.running = {0: decoded}
            poll_moment()
            readings.append(await monitor.poll(client))
    assert "/slots" in server.paths[seen_from:]
    assert monitor.slots_error is None
    last = readings[-1].figures
    assert all(reading.up for reading in readings)
    assert last.restarted_in_window
    assert last.acceptance_rate == 1.0
    # Live from /slots: 64 finished + 80 decoded since the new process' first reading (its start, "2000",
    # is not on this clock: it started at some time between 101 and 110), not the finished requests
    # only, and not over the 9 s it was down (not (64 + 80) / 11 s).
    assert last.generation_tokens_per_s == pytest.approx((64 + 80) / (112.0 - 110.0))
    assert "generation_tokens_per_s" not in last.notes
    assert "the figures count from its first reading (2 s ago)" in last.notes["window"]


async def test_a_server_restarted_with_slots_enabled_is_asked_for_them_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No --slots (HTTP 501): not asked again for a minute, unless the server goes down and comes back,
    # a new process that may have been started with other flags.
    poll_moment = poll_clock(monkeypatch, [100.0, 101.0, 105.0, 106.0])
    async with (
        FakeLlamaServer(tokens=704, seconds=0.6, slots_enabled=False) as server,
        httpx.AsyncClient() as client,
    ):
        monitor = EndpointMonitor(EndpointSettings(name="llama", url=server.url, model="m"), window_s=60.0)
        poll_moment()
        await monitor.poll(client)
        assert monitor.slots_error == "HTTP 501"
        await server.stop()
        poll_moment()
        assert not (await monitor.poll(client)).up
        server.restart("2000")
        server.slots_enabled = True
        await server.start(port=server.port)
        server.running = {0: 30}
        seen_from = len(server.paths)
        for _ in range(2):
            poll_moment()
            reading = await monitor.poll(client)
    assert reading.up and server.paths[seen_from:].count("/slots") == 2
    assert monitor.slots_error is None
    assert "/slots" not in reading.figures.notes.get("generation_tokens_per_s", "")


SLOTS = (SAMPLES / "llamacpp" / "slots_t1_draft_same.json").read_bytes()
MODELS = (SAMPLES / "llamacpp" / "models.json").read_bytes()


def _in_the_middle_of_a_long_request() -> bytes:
    # llamacpp.md §6: "During a 900-token request a slot showed is_processing: true, n_prompt_tokens: 345,
    # n_decoded: 330, n_remain: 570." The real idle slot body with slot 0 turned into that one.
    slots = json.loads(SLOTS)
    slots[0]["is_processing"] = True
    slots[0]["n_prompt_tokens"] = 345
    slots[0]["next_token"][0].update(has_next_token=True, n_remain=570, n_decoded=330)
    return json.dumps(slots).encode()


# llamacpp.md §6: "A slot that has never been used reports only id, n_ctx, speculative, is_processing."
NEVER_USED = [{"id": slot, "n_ctx": 1024, "speculative": True, "is_processing": False} for slot in range(2)]


@pytest.mark.parametrize(
    ("body", "decoded"),
    [
        (SLOTS, 0.0),  # after the workload: both idle, `n_decoded` reset to 0 after release
        (json.dumps(NEVER_USED).encode(), 0.0),
        (_in_the_middle_of_a_long_request(), 330.0),
    ],
    ids=["idle-after-the-workload", "never-used", "mid-request"],
)
async def test_slots_count_the_tokens_decoded_by_requests_in_flight(body: bytes, decoded: float) -> None:
    async with ReplyServer([Reply(body)]) as server, httpx.AsyncClient() as client:
        assert await fetch_slots_decoded(client, server.url) == decoded


async def test_snapshot_reads_the_real_slots_and_models_bodies() -> None:
    # /metrics: t0 for the first reading (its page, then /slots, then the page again), t1 at the end.
    t0, t1 = sample_body("llamacpp", "metrics_t0.txt"), sample_body("llamacpp", "metrics_t1.txt")
    routes = {"/slots": Reply(SLOTS), "/v1/models": Reply(MODELS)}
    async with ReplyServer([Reply(t0), Reply(t0), Reply(t1)], routes=routes) as server:
        code, out, err = await spectop("snapshot", server.url, "--window", "0.5", "--json")
        paths = [request.path for request in server.requests]
    assert code == 0, err
    assert paths.count("/slots") == 2
    record = json.loads(out)
    # models.json: data[0].id is the -m path as given (there is no model label on the page).
    assert (record["backend"], record["model"], record["up"]) == ("llamacpp", "models/target.gguf", True)
    # /slots answered both times: the live count (704 finished + 0 in flight) over the window.
    assert_rate(record["generation_tokens_per_s"], 704, 0.5)
    assert "generation_tokens_per_s" not in record["notes"]
    assert_rate(record["requests_per_s"], 11, 0.5)
