"""Fleet faults against a fake Prometheus on 127.0.0.1: down, slow, `status: error`, NaN, up == 0,
stale, a failed figure, oversized or non-JSON answers, and auth headers. Never 0, never a crash."""

from __future__ import annotations

import re

import pytest

from tests.fleet.conftest import free_port
from tests.fleet.fake_prometheus import (
    FIGURE_OF,
    WINDOW_S,
    A,
    Answer,
    B,
    FakePrometheus,
    healthy,
    is_discovery,
    query_with,
    refresh_with,
    settings,
    vector,
)
from tui.commands.snapshot import fleet_row, fleet_table
from tui.fleet.client import PrometheusClient, PrometheusError
from tui.fleet.poller import FleetPoller
from tui.format import figure_text
from tui.telemetry.figures import Figures
from tui.widgets.card_view import CardData, badge_line


async def test_healthy_fleet_gives_readings_and_nan_is_unknown() -> None:
    refresh = await refresh_with(healthy())
    assert refresh.error is None
    # discovery, up, scrape times, figures, engines; and with the first refresh only, the bucket bounds
    assert refresh.queries == 3 + len(FIGURE_OF) + 2 + 1
    readings = {reading.instance: reading for reading in refresh.readings}
    assert set(readings) == {A, B}
    assert readings[A].up and readings[A].backend == "vllm" and readings[A].model == "m"
    assert readings[A].group == "vllm"  # group_by defaults to job
    assert readings[A].figures.generation_tokens_per_s == pytest.approx(120.5)
    assert readings[A].figures.acceptance_rate == pytest.approx(0.7)
    assert readings[B].figures.acceptance_rate is None  # NaN from an empty window: unknown, not 0
    assert readings[B].figures.running is None  # no answer for the figure: unknown, not 0


async def test_prometheus_down_before_and_after_first_refresh() -> None:
    refresh = await refresh_with(healthy(), url_override=f"http://127.0.0.1:{free_port()}")
    assert refresh.readings == []
    assert refresh.error is not None and "unreachable" in refresh.error

    fake = FakePrometheus(healthy())
    await fake.__aenter__()
    async with FleetPoller(settings(fake.url), WINDOW_S) as poller:
        assert all(reading.up for reading in (await poller.refresh()).readings)
        await fake.close()  # Prometheus goes away: the known instances stay, as unknown
        refresh = await poller.refresh()
    assert refresh.error is not None and "unreachable" in refresh.error
    assert {reading.instance for reading in refresh.readings} == {A, B}
    for reading in refresh.readings:
        assert not reading.up and reading.error == refresh.error
        assert reading.figures == Figures()  # every figure None, none 0
        assert reading.consecutive_failures == 1


async def test_status_error_is_shown_with_its_type() -> None:
    def broken(query: str) -> Answer | None:
        if query == "up":
            return 422, {"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}, 0.0
        return None

    refresh = await refresh_with(healthy(broken=broken))
    assert refresh.error == "Prometheus error (bad_data): parse error at char 3"


async def test_slow_prometheus_times_out_within_one_budget_per_refresh() -> None:
    def slow(query: str) -> Answer | None:
        return 200, vector(), 3.0

    async with FakePrometheus(healthy(broken=slow)) as fake:
        poller = FleetPoller(settings(fake.url, timeout_s=0.4), WINDOW_S)
        async with poller:
            refresh = await poller.refresh()
        asked = len(fake.seen)
    assert refresh.error == "Prometheus timeout after 0.4 s"
    # 20 queries, 4 at a time: one 0.4 s budget for the refresh ends it in the first round of 4 (a budget
    # per round of queries would send all 20, one round after another).
    assert asked <= 8


async def test_one_failed_figure_is_unknown_and_named() -> None:
    ttft = next(expr for expr, figure in FIGURE_OF.items() if figure == "ttft_p95_s")

    def broken(query: str) -> Answer | None:
        if query == ttft:
            return 503, {"status": "error", "errorType": "timeout", "error": "query timed out"}, 0.0
        return None

    refresh = await refresh_with(healthy(broken=broken))
    assert refresh.error is None
    assert refresh.figure_errors == {"ttft_p95_s": "Prometheus error (timeout): query timed out"}
    reading = next(reading for reading in refresh.readings if reading.instance == A)
    assert reading.up and reading.figures.generation_tokens_per_s == pytest.approx(120.5)
    assert reading.figures.ttft_p95_s is None
    assert reading.error is not None and "ttft_p95_s" in reading.error


async def test_target_down_and_stale_target() -> None:
    refresh = await refresh_with(healthy(up=(False, True)))
    readings = {reading.instance: reading for reading in refresh.readings}
    assert not readings[A].up and "target down" in (readings[A].error or "")
    assert readings[B].up

    refresh = await refresh_with(healthy(scraped_age_s=300))  # stale after 60 s
    for reading in refresh.readings:
        assert not reading.up  # about 300 s ago, read in the vocabulary's words (floored)
        assert re.match(r"stale: last scraped [45] min ago", reading.error or ""), reading.error
        assert reading.last_scrape_age_s == pytest.approx(300, abs=5)


@pytest.mark.parametrize(
    ("answer", "max_bytes", "message"),
    [
        ((502, b"<html>Bad Gateway</html>", 0.0), 2**20, r"^Prometheus: HTTP 502$"),  # a proxy's page
        ((302, b"", 0.0), 2**20, r"^Prometheus: HTTP 302$"),  # a redirect to a login page: not followed
        ((200, vector(*(({"instance": str(i)}, "1") for i in range(5000))), 0.0), 64 * 1024, "larger than"),
        (
            (200, {"status": "success", "data": {"resultType": "matrix", "result": []}}, 0.0),
            2**20,
            "unexpected",
        ),
    ],
    ids=["proxy-page", "login-redirect", "huge", "matrix-for-instant"],
)
async def test_non_json_oversized_and_wrong_shape_answers(
    answer: Answer, max_bytes: int, message: str
) -> None:
    with pytest.raises(PrometheusError, match=message):
        await query_with(healthy(broken=lambda query: answer), max_bytes=max_bytes)


async def test_bearer_token_and_basic_auth_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEET_TEST_TOKEN", "tok-s3cret")
    monkeypatch.setenv("FLEET_TEST_PASSWORD", "pw-s3cret")
    bearer = await query_with(healthy(), bearer_token_env="FLEET_TEST_TOKEN")
    basic = await query_with(healthy(), basic_auth_user="ops", basic_auth_password_env="FLEET_TEST_PASSWORD")
    assert bearer.seen[0].headers["authorization"] == "Bearer tok-s3cret"
    assert basic.seen[0].headers["authorization"] == "Basic b3BzOnB3LXMzY3JldA=="  # ops:pw-s3cret
    configured = settings("http://127.0.0.1:9", bearer_token_env="FLEET_TEST_TOKEN", basic_auth_user="ops")
    for text in (repr(configured), configured.model_dump_json()):
        assert "s3cret" not in text  # settings hold the variable's name only
    monkeypatch.delenv("FLEET_TEST_TOKEN")  # a missing secret is named, and not sent
    async with PrometheusClient(configured) as client:
        assert client.missing_secrets() == ["FLEET_TEST_TOKEN"]
    unset = await query_with(healthy(), bearer_token_env="FLEET_TEST_TOKEN")
    assert "authorization" not in unset.seen[0].headers


async def test_an_instance_whose_metrics_vanish_stays_listed_and_says_so() -> None:
    gone: set[str] = set()
    base = healthy()

    def answer(path: str, form: dict[str, str]) -> Answer:
        status, payload, delay = base(path, form)
        if is_discovery(form.get("query", "")):
            rows = [row for row in payload["data"]["result"] if row["metric"]["instance"] not in gone]
            payload = {"status": "success", "data": {"resultType": "vector", "result": rows}}
        return status, payload, delay

    async with FakePrometheus(answer) as fake, FleetPoller(settings(fake.url), WINDOW_S) as poller:
        first = await poller.refresh()
        gone.add(B)  # B still answers scrapes (up == 1) but exposes no vLLM metrics any more
        second = await poller.refresh()
    assert [r.error for r in first.readings] == [None, None]
    readings = {reading.instance: reading for reading in second.readings}
    assert readings[A].error is None
    assert readings[B].error == "no vllm metrics in Prometheus now" and readings[B].backend == "vllm"


# --- impossible figures (acceptance > 100%, KV 2.5): dropped, counted and shown -----------------------------


BAD = {
    "generation_tokens_per_s": {A: 120.5, B: 80},
    "acceptance_rate": {A: 3.09, B: 0.7},  # accepted > drafted on A: "309%"
    "kv_cache_usage": {A: 2.5, B: 0.4},
}


async def test_impossible_fleet_figures_are_dropped_counted_and_shown() -> None:
    refresh = await refresh_with(healthy(figures=BAD))
    by_instance = {reading.instance: reading for reading in refresh.readings}
    bad, good = by_instance[A], by_instance[B]
    for name in ("acceptance_rate", "kv_cache_usage"):
        assert getattr(bad.figures, name) is None and figure_text(bad.figures, name) == "–", name
        assert "impossible value dropped" in bad.figures.notes[name], name
    assert "309%" in bad.figures.notes["acceptance_rate"]
    assert bad.figures.generation_tokens_per_s == 120.5  # the possible figures stay
    assert bad.impossible_figures == 2 and good.impossible_figures == 0
    assert good.figures.acceptance_rate == 0.7
    lines = fleet_table(refresh.readings)
    assert f"{A}: 2 impossible figures dropped (inconsistent page)" in lines
    assert not any(line.startswith(f"{B}:") for line in lines)
    assert fleet_row(bad)["impossible_figures"] == 2 and fleet_row(good)["impossible_figures"] == 0
    card = badge_line(CardData(name=A, reading=bad, now=bad.time), 80).plain
    assert "2 impossible figures dropped" in card
    assert "impossible" not in badge_line(CardData(name=B, reading=good, now=good.time), 80).plain
