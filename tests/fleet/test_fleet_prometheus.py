"""Fleet mode against a real Prometheus scraping real `spectop sim` servers every second, compared with
spectop's own direct scrapes (they differ only by sampling, hence the tolerances)."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.fleet.conftest import (
    NEEDS_PROMETHEUS,
    ROOT,
    Fleet,
    start_prometheus,
    stop,
    wait_targets_up,
    write_config,
)
from tests.fleet.fake_fleet import fleet_app
from tests.ui.ui_waiting import wait_for
from tui.fleet.poller import FleetPoller
from tui.fleet.queries import engine_queries
from tui.settings import PrometheusSettings, Settings
from tui.telemetry.figures import FIGURE_NAMES, Figures
from tui.telemetry.scraper import scrape_metrics
from tui.telemetry.window import figures_between
from tui.widgets.fleet_table import FleetTable

pytestmark = NEEDS_PROMETHEUS

WINDOW_S = 12.0
BACKENDS = ("vllm", "sglang", "llamacpp")


def poller_for(fleet: Fleet, window_s: float, **extra: object) -> FleetPoller:
    return FleetPoller(PrometheusSettings(url=fleet.prometheus.url, timeout_s=5.0, **extra), window_s)  # type: ignore[arg-type]


async def wait_for_data(fleet: Fleet, seconds: float) -> None:
    """Prometheus needs `seconds` of scrapes before a window of that length is full."""
    await asyncio.sleep(max(0.0, fleet.started + seconds - time.time()))


def close(fleet_value: float | None, direct: float | None, *, rel: float = 0.0, abs_: float = 0.0) -> bool:
    if fleet_value is None or direct is None:
        return False
    return abs(fleet_value - direct) <= max(abs_, rel * abs(direct))


async def test_discovers_every_backend_and_its_model_in_as_many_queries_for_any_instances(
    fleet: Fleet,
) -> None:
    async with poller_for(fleet, 5.0) as poller, poller_for(fleet, 5.0, match='{job="sglang"}') as one:
        refresh, one_refresh = await poller.refresh(), await one.refresh()
    assert refresh.error is None, refresh.error
    readings = {reading.instance: reading for reading in refresh.readings}
    for name in (*BACKENDS, "victim"):
        reading = readings[fleet.instance(name)]
        assert reading.backend == ("vllm" if name == "victim" else name)
        assert reading.up, reading.error
        assert reading.group == reading.backend  # grouped by job
    assert readings[fleet.instance("vllm")].model == "deepseek-ai/DeepSeek-V3"
    assert readings[fleet.instance("sglang")].model == "deepseek-ai/DeepSeek-V3"
    assert readings[fleet.instance("llamacpp")].model is None  # llama.cpp has no model label
    assert [reading.backend for reading in one_refresh.readings] == ["sglang"]
    # the first refresh asks the bucket bounds too (once)
    assert refresh.queries == one_refresh.queries == poller.queries_per_refresh + 1


def disagreements(name: str, got: Figures, want: Figures) -> list[str]:
    """The figures of fleet mode (`got`) that differ from a direct scrape's (`want`) beyond sampling."""
    checks = {
        "generation_tokens_per_s": close(got.generation_tokens_per_s, want.generation_tokens_per_s, rel=0.3),
        "prompt_tokens_per_s": close(got.prompt_tokens_per_s, want.prompt_tokens_per_s, rel=0.4),
        "acceptance_rate": close(got.acceptance_rate, want.acceptance_rate, abs_=0.08),
        "mean_acceptance_length": close(got.mean_acceptance_length, want.mean_acceptance_length, abs_=0.25),
        "prefix_cache_hit_rate": close(got.prefix_cache_hit_rate, want.prefix_cache_hit_rate, abs_=0.15),
    }
    if name == "llamacpp":  # no request count (Prometheus resets its gauge): TPOT unknown both ways
        checks["tpot_mean_s"] = got.tpot_mean_s is None and want.tpot_mean_s is None
    else:  # llama.cpp has no TTFT histogram and no request counter
        checks["tpot_mean_s"] = close(got.tpot_mean_s, want.tpot_mean_s, rel=0.3)
        checks["ttft_mean_s"] = close(got.ttft_mean_s, want.ttft_mean_s, rel=0.5)
        checks["requests_per_s"] = close(got.requests_per_s, want.requests_per_s, rel=0.5)
        checks["e2e_mean_s"] = close(got.e2e_mean_s, want.e2e_mean_s, rel=0.5)
        # Quantiles interpolate in the same buckets: a few requests more or less move them little.
        checks["ttft_p95_s"] = got.ttft_p95_s is not None and want.ttft_p95_s is not None
    if want.per_position_acceptance is not None:
        pairs = zip(got.per_position_acceptance or [], want.per_position_acceptance, strict=False)
        checks["per_position_acceptance"] = len(got.per_position_acceptance or []) == len(
            want.per_position_acceptance
        ) and all(abs(a - b) <= 0.1 for a, b in pairs)
    # Gauges are instantaneous: only known-ness and the range are comparable.
    for gauge in ("running", "waiting", "kv_cache_usage"):
        checks[gauge] = (getattr(got, gauge) is None) == (getattr(want, gauge) is None)
    return [
        f"{name}.{figure}: fleet {getattr(got, figure)} direct {getattr(want, figure)}"
        for figure, ok in checks.items()
        if not ok
    ]


async def test_history_fills_sparklines_at_start(fleet: Fleet) -> None:
    await wait_for_data(fleet, 8.0)
    async with poller_for(fleet, 3.0) as poller:
        history = await poller.load_history(history_s=8.0, step_s=1.0)
        assert poller.client.requests == 9  # one range query per sparkline figure
    for name in BACKENDS:
        points = history[fleet.instance(name)]
        rates = [figures.generation_tokens_per_s for _, figures in points]
        assert len(points) >= 5
        assert sum(rate is not None for rate in rates) >= 4
        assert [stamp for stamp, _ in points] == sorted(stamp for stamp, _ in points)


async def test_a_window_shorter_than_two_scrapes_is_unknown_not_zero(fleet: Fleet) -> None:
    async with poller_for(fleet, 0.5) as poller:  # Prometheus scrapes every second: rate() has no pair
        refresh = await poller.refresh()
    assert refresh.error is None
    for name in BACKENDS:
        reading = next(r for r in refresh.readings if r.instance == fleet.instance(name))
        assert reading.up
        figures = reading.figures
        assert figures.generation_tokens_per_s is None and figures.prompt_tokens_per_s is None
        assert figures.ttft_p95_s is None and figures.tpot_mean_s is None
        assert figures.running is not None  # gauges are still known


def snapshot(*args: str) -> tuple[int, list[dict[str, object]], str]:
    import subprocess

    result = subprocess.run(
        [sys.executable, "-m", "tui", "snapshot", *args], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    rows = (
        [json.loads(line) for line in result.stdout.splitlines() if line.strip()] if "--json" in args else []
    )
    return result.returncode, rows, result.stdout + result.stderr


async def test_snapshot_through_prometheus(fleet: Fleet) -> None:
    await wait_for_data(fleet, 5.0)
    match = '{job=~"sglang|llamacpp"}'
    code, rows, output = await asyncio.to_thread(
        snapshot, "--prometheus", fleet.prometheus.url, "--match", match, "--window", "4", "--json"
    )
    assert code == 0, output
    assert [row["url"] for row in rows] == sorted([fleet.instance("sglang"), fleet.instance("llamacpp")])
    for row in rows:
        # The same fields as a direct snapshot's rows: figures, then why they are what they are, then error,
        # the advice; then the group's.
        why = ["notes", "covered_s", "restarted_in_window", "restarted_s_ago", "quantile_bounds"]
        fields = ["url", "backend", "up", "model", "window_s", *FIGURE_NAMES, *why, "error", "advice"]
        assert list(row) == [*fields, "group", "group_advice", "impossible_figures"]
        assert row["up"] is True and row["window_s"] == 4
        assert isinstance(row["generation_tokens_per_s"], float) and row["generation_tokens_per_s"] > 0
    code, _, output = await asyncio.to_thread(snapshot, "--prometheus", fleet.prometheus.url, "--window", "4")
    lines = output.splitlines()
    assert lines[1].split()[:5] == ["instance", "status", "backend", "tok/s", "accept"]
    for name in BACKENDS:  # one row per instance
        assert any(line.startswith(fleet.instance(name)) for line in lines[2:])


async def test_killed_sim_shows_down(fleet: Fleet) -> None:
    victim = fleet.instance("victim")
    async with poller_for(fleet, 5.0) as poller:
        before = {reading.instance: reading for reading in (await poller.refresh()).readings}
        assert before[victim].up
        stop(fleet.sims["victim"][0])
        deadline = time.monotonic() + 10.0
        while True:
            readings = {reading.instance: reading for reading in (await poller.refresh()).readings}
            if not readings[victim].up or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
    assert not readings[victim].up
    assert "target down" in (readings[victim].error or "")
    assert readings[victim].figures.running is None  # its gauges went stale: unknown, not 0
    assert all(readings[fleet.instance(name)].up for name in BACKENDS)
    # A dashboard started after the kill still lists it (discovery looks back over the window), as down.
    async with poller_for(fleet, 30.0) as fresh:
        late = {reading.instance: reading for reading in (await fresh.refresh()).readings}
    assert victim in late and not late[victim].up and late[victim].backend == "vllm"
    # The snapshot of a down instance has no figures, as a direct snapshot of a down endpoint.
    match = f'{{instance="{victim}"}}'
    code, rows, output = await asyncio.to_thread(
        snapshot, "--prometheus", fleet.prometheus.url, "--match", match, "--window", "30", "--json"
    )
    assert code == 1, output
    assert [(row["url"], row["up"]) for row in rows] == [(victim, False)]
    assert all(rows[0][name] is None for name in FIGURE_NAMES) and "target down" in str(rows[0]["error"])


async def test_the_dashboard_rows_and_figures_match_direct_scrapes(fleet: Fleet) -> None:
    """`spectop --prometheus URL` as a user runs it: its readings against direct scrapes, in its rows."""
    settings = Settings(
        prometheus=PrometheusSettings(url=fleet.prometheus.url, timeout_s=5.0),
        window_s=WINDOW_S,
        poll_interval_s=1.0,
    )
    app = fleet_app(settings)
    async with app.run_test(size=(200, 50)) as pilot:
        async with httpx.AsyncClient() as client:
            first = {name: await scrape_metrics(client, fleet.url(name) + "/metrics") for name in BACKENDS}
            started = time.time()
            await asyncio.sleep(WINDOW_S)
            last = {name: await scrape_metrics(client, fleet.url(name) + "/metrics") for name in BACKENDS}
            ended = time.time()
        direct = {name: figures_between(first[name], last[name]) for name in BACKENDS}
        await pilot.press("v")  # the table view: the few instances fit as cards, and a hidden table waits
        table = app.screen.query_one(FleetTable)

        def fresh() -> bool:
            rows = {row.name: row for row in table.rows_shown}
            for name in BACKENDS:
                reading = app.readings.get(fleet.instance(name))
                row = rows.get(fleet.instance(name))
                if reading is None or row is None or reading.time < ended:
                    return False
                if row.tokens_per_s != reading.figures.generation_tokens_per_s:
                    return False  # the table has not redrawn this refresh yet
            return True

        await wait_for(pilot, fresh)  # the rows show this refresh's readings
        rows, readings = {row.name: row for row in table.rows_shown}, dict(app.readings)
    assert ended - started >= WINDOW_S
    problems = []
    for name in BACKENDS:
        row, reading = rows[fleet.instance(name)], readings[fleet.instance(name)]
        assert row.status == "up" and reading.error is None, (row, reading.error)  # no figure failed
        problems += disagreements(name, reading.figures, direct[name])
    assert not problems, "\n".join(problems)
    summary = {row.group: row for row in rows.values() if row.summary}
    assert summary["vllm"].members == 2  # the vllm job: the vllm sim and the victim


# --- the per-engine queries: only instances with two or more data-parallel engines answer -------------------


STARTED = time.time()


def page(engines: tuple[str, ...]) -> bytes:
    """A vLLM page whose counters grow with the time: 100 tokens/s, 50 drafts/s per engine; engine "1"
    accepts 20% of its drafts, the others 80%."""
    elapsed = time.time() - STARTED
    lines = []
    for engine in engines:
        labels = f'engine="{engine}",model_name="m"'
        accepted = 0.2 if engine == "1" else 0.8
        lines += [
            f"vllm:generation_tokens_total{{{labels}}} {100 * elapsed:.3f}",
            f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {50 * elapsed:.3f}",
            f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {50 * accepted * elapsed:.3f}",
            f"vllm:num_requests_running{{{labels}}} 1",
        ]
    return ("\n".join(lines) + "\n").encode()


class Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        engines = ("0", "1") if self.path == "/metrics/two" else ("0",)
        body = page(engines)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def prometheus_url(tmp_path: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"127.0.0.1:{server.server_address[1]}"
    config = write_config(tmp_path / "prometheus.yml", {})
    config.write_text(
        config.read_text(encoding="utf-8")
        + "".join(
            f"  - job_name: {name}\n    metrics_path: /metrics/{name}\n"
            f"    static_configs:\n      - targets: ['{address}']\n        labels: {{replica: {name}}}\n"
            f"    relabel_configs:\n      - target_label: instance\n        replacement: {name}\n"
            for name in ("two", "one")
        ),
        encoding="utf-8",
    )
    prometheus = start_prometheus(config, tmp_path)
    try:
        wait_targets_up(prometheus.url, 2)
        yield prometheus.url
    finally:
        prometheus.stop()
        server.shutdown()


async def test_only_instances_with_several_engines_answer(prometheus_url: str) -> None:
    figures = [query.figure for query in engine_queries("", 4.0)]
    assert figures == ["acceptance_rate", "generation_tokens_per_s"]
    async with FleetPoller(PrometheusSettings(url=prometheus_url, timeout_s=5.0), 4.0) as poller:
        every = "sum by (instance, engine) (rate(vllm:generation_tokens_total[4s]))"
        for _ in range(100):  # rate() needs two scrapes in the window, of each of the three engines
            if len(await poller.client.query_vector(every)) == 3:
                break
            await asyncio.sleep(0.2)
        samples = await poller.client.query_vector(engine_queries("", 4.0)[1].expr)
        engines = sorted((s["metric"]["instance"], s["metric"]["engine"]) for s in samples)
        assert engines == [("two", "0"), ("two", "1")]
        refresh = await poller.refresh()
    readings = {reading.instance: reading for reading in refresh.readings}
    assert readings["one"].engines == {}
    two = readings["two"].engines
    assert sorted(two) == ["0", "1"]
    assert two["0"].acceptance_rate == pytest.approx(0.8, abs=0.02)
    assert two["1"].acceptance_rate == pytest.approx(0.2, abs=0.02)
    tokens = [two[engine].generation_tokens_per_s for engine in ("0", "1")]
    assert tokens[0] is not None and tokens[0] > 0
    assert tokens[1] == pytest.approx(tokens[0], rel=0.05)  # both engines write at the same speed
