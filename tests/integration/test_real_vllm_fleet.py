"""Fleet mode on real vLLMs: a real Prometheus scrapes two vLLMs, and `spectop snapshot --prometheus` gives
the figures of their own counters. The load runs between scraped idle stretches, so each counter's increase
is exactly the difference of the servers' /metrics before and after.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import httpx
import pytest
from llama_spectop import json_lines, run_spectop
from vllm_server import VllmServer
from vllm_workload import delta, read_page, steady_load, total

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.fleet.conftest import prometheus_binary, start_prometheus, write_config

KINDS = ("same", "noisy")
SCRAPE_S = 3
WINDOW_S = 120
SPEC = "vllm:spec_decode_num"


def _prometheus_value(url: str, query: str) -> dict[str, float]:
    answer = httpx.get(f"{url}/api/v1/query", params={"query": query}, timeout=30).json()
    return {row["metric"].get("instance", ""): float(row["value"][1]) for row in answer["data"]["result"]}


def _wait_idle(url: str, name: str, quiet_s: float) -> None:
    """Until Σ `name` on the server stays the same for `quiet_s` (a request another test left in flight
    would otherwise land in Prometheus' first samples, before the test's `before`)."""
    last, now = None, total(read_page(url), name)
    while now != last:
        time.sleep(quiet_s)
        last, now = now, total(read_page(url), name)


def _wait_scraped(prometheus: str, instance: str, name: str, value: float) -> None:
    """Until Prometheus' latest sample of Σ `name` for `instance` is `value` (a scrape after the change)."""
    while (
        _prometheus_value(prometheus, f'sum by (instance) ({name}{{instance="{instance}"}})').get(instance)
        != value
    ):
        time.sleep(0.5)


@pytest.mark.skipif(prometheus_binary() is None, reason="needs the prometheus binary (Debian package)")
def test_fleet_figures_are_the_servers_own_counters(
    vllm_servers: dict[str, VllmServer], tmp_path: Path
) -> None:
    servers = {kind: vllm_servers[kind] for kind in KINDS}
    instances = {kind: f"127.0.0.1:{server.port}" for kind, server in servers.items()}
    config = write_config(
        tmp_path / "prometheus.yml", {"vllm": list(instances.values())}, interval_s=SCRAPE_S
    )
    drafts_total = f"{SPEC}_draft_tokens_total"
    # Counters well above zero before Prometheus' first sample: near zero, rate() clamps each series'
    # extrapolation to the window's start by its own value (its time to reach 0), and a ratio of two
    # counters stops being exact (seen on the noisy vLLM after little earlier traffic: 0.2416 for 0.2397).
    with steady_load([server.url for server in servers.values()], concurrency=1):
        time.sleep(4.0)
    for server in servers.values():
        _wait_idle(server.url, drafts_total, quiet_s=2 * SCRAPE_S)
    prometheus = start_prometheus(config, tmp_path, ready_timeout_s=600)
    try:
        before = {kind: read_page(server.url) for kind, server in servers.items()}
        for kind in KINDS:  # the idle value before the load is in Prometheus
            _wait_scraped(prometheus.url, instances[kind], drafts_total, total(before[kind], drafts_total))
        started = time.monotonic()
        with steady_load([server.url for server in servers.values()], concurrency=1) as loads:
            time.sleep(8.0)
        for server in servers.values():  # the last steps' counters are in
            _wait_idle(server.url, drafts_total, quiet_s=1.0)
        after = {kind: read_page(server.url) for kind, server in servers.items()}
        assert all(not load.errors for load in loads)
        for kind in KINDS:
            _wait_scraped(prometheus.url, instances[kind], drafts_total, total(after[kind], drafts_total))
        elapsed = time.monotonic() - started
        assert elapsed < WINDOW_S - 2 * SCRAPE_S, "the window would not cover the load"
        args = ["snapshot", "--prometheus", prometheus.url, "--match", '{job="vllm"}']
        done = run_spectop([*args, "--window", str(WINDOW_S), "--json"], tmp_path, timeout_s=600)
    finally:
        prometheus.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    records = {record["url"]: record for record in json_lines(done.stdout)}
    for kind in KINDS:
        record = records[instances[kind]]
        b, a = before[kind], after[kind]
        drafts = delta(b, a, f"{SPEC}_drafts_total")
        drafted = delta(b, a, drafts_total)
        accepted = delta(b, a, f"{SPEC}_accepted_tokens_total")
        assert drafts > 0
        assert record["acceptance_rate"] == pytest.approx(accepted / drafted, rel=1e-9), (kind, record)
        assert record["mean_acceptance_length"] == pytest.approx(1 + accepted / drafts, rel=1e-9)
        positions = [
            delta(b, a, f"{SPEC}_accepted_tokens_per_pos_total", position=str(i)) / drafts for i in range(3)
        ]
        assert record["per_position_acceptance"] == pytest.approx(positions, rel=1e-9)
        assert record["model"] == "tiny"
