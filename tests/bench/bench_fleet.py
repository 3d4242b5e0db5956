"""Fleet mode on 200 instances through a real Prometheus: refresh time, queries per refresh, CPU share.

One exporter process (started by this script with `--exporter`) serves 200 synthetic vLLM pages
with moving counters on one port (`/metrics/0` ... `/metrics/199`); a Prometheus (the `prometheus`
binary, Debian's package) scrapes each as its own target (`__metrics_path__` and `instance` set per
target) every `--scrape` seconds. This process runs the `FleetPoller` every 2 s, as the dashboard
would, and reports its own cost: `time.process_time()` over wall time while refreshing (Prometheus'
and the exporter's CPU are theirs). It also refreshes a quarter of the fleet (`--match` on
`instance`) to show that the number of queries does not depend on the instance count.

    .venv/bin/python tests/bench/bench_fleet.py [--instances 200] [--seconds 40] [--scrape 5]
Targets: under 10% of one core at a 2 s refresh; a constant number of queries per refresh.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


def _page(index: int, elapsed: float) -> bytes:
    """A vLLM /metrics page whose counters grow at a per-instance rate (instance 7 drafts badly)."""
    labels = f'engine="0",model_name="model-{index % 4}"'
    rps = 1.0 + (index % 5) * 0.3
    requests = math.floor(rps * elapsed)
    drafts = 150.0 * rps * elapsed
    acceptance = 0.35 if index == 7 else 0.7 + (index % 3) * 0.05
    accepted = drafts * 2 * acceptance
    generated = drafts + accepted
    ttft_mean = 0.02 + (index % 4) * 0.01
    lines = [
        "# TYPE vllm:generation_tokens_total counter",
        f"vllm:generation_tokens_total{{{labels}}} {generated:.1f}",
        f"vllm:prompt_tokens_total{{{labels}}} {requests * 180.0:.1f}",
        f'vllm:request_success_total{{{labels},finished_reason="stop"}} {requests:.1f}',
        f"vllm:spec_decode_num_drafts_total{{{labels}}} {drafts:.1f}",
        f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {drafts * 2:.1f}",
        f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {accepted:.1f}",
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="0"}} {accepted * 0.6:.1f}',
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="1"}} {accepted * 0.4:.1f}',
        f"vllm:prefix_cache_queries_total{{{labels}}} {requests * 180.0:.1f}",
        f"vllm:prefix_cache_hits_total{{{labels}}} {requests * 60.0:.1f}",
        f"vllm:num_requests_running{{{labels}}} {index % 6:.1f}",
        f"vllm:num_requests_waiting{{{labels}}} {index % 2:.1f}",
        f"vllm:kv_cache_usage_perc{{{labels}}} {0.1 + (index % 9) * 0.08:.3f}",
    ]
    for name, mean in (
        ("time_to_first_token_seconds", ttft_mean),
        ("request_time_per_output_token_seconds", 0.004),
        ("e2e_request_latency_seconds", 0.8),
        ("inter_token_latency_seconds", 0.006),
    ):
        for bound in BUCKETS:
            share = 1.0 - math.exp(-bound / mean)
            lines.append(f'vllm:{name}_bucket{{{labels},le="{bound}"}} {math.floor(requests * share):.1f}')
        lines.append(f'vllm:{name}_bucket{{{labels},le="+Inf"}} {requests:.1f}')
        lines.append(f"vllm:{name}_sum{{{labels}}} {requests * mean:.6f}")
        lines.append(f"vllm:{name}_count{{{labels}}} {requests:.1f}")
    return ("\n".join(lines) + "\n").encode()


async def _exporter(count: int) -> None:
    started = time.monotonic()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await reader.readline()
                if not request:
                    return
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
                path = request.split(b" ")[1].decode()
                index = int(path.rsplit("/", 1)[1]) if path.startswith("/metrics/") else -1
                if 0 <= index < count:
                    body, status = _page(index, time.monotonic() - started), "200 OK"
                else:
                    body, status = b"not found\n", "404 Not Found"
                writer.write(
                    f"HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
        except (ConnectionError, ValueError, IndexError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def _prometheus_config(path: Path, port: int, count: int, scrape_s: float) -> None:
    lines = [
        "global:",
        f"  scrape_interval: {scrape_s:g}s",
        f"  scrape_timeout: {min(scrape_s, 5):g}s",
        "scrape_configs:",
        "  - job_name: fleet",
        "    static_configs:",
    ]
    for index in range(count):
        lines += [
            f"      - targets: ['127.0.0.1:{port}']",
            f"        labels: {{__metrics_path__: '/metrics/{index}', instance: 'replica-{index:03d}'}}",
        ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


async def _measure(url: str, count: int, seconds: float, refresh_s: float) -> dict[str, object]:
    from tui.fleet.poller import FleetPoller
    from tui.settings import PrometheusSettings

    settings = PrometheusSettings(url=url, timeout_s=10)
    quarter = PrometheusSettings(url=url, timeout_s=10, match=f'instance=~"replica-0[0-{count // 40 - 1}].*"')
    async with FleetPoller(settings, 60.0) as poller, FleetPoller(quarter, 60.0) as small:
        history_started = time.perf_counter()
        history = await poller.load_history(600.0, refresh_s)
        history_s = time.perf_counter() - history_started
        history_queries = poller.client.requests
        durations: list[float] = []
        queries: set[int] = set()
        refresh = None
        wall_started, cpu_started = time.monotonic(), time.process_time()
        next_at = wall_started
        while time.monotonic() - wall_started < seconds:
            refresh = await poller.refresh()
            durations.append(refresh.elapsed_s)
            queries.add(refresh.queries)
            next_at += refresh_s
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        cpu = time.process_time() - cpu_started
        wall = time.monotonic() - wall_started
        small_refresh = await small.refresh()
    assert refresh is not None
    known = [r for r in refresh.readings if r.figures.acceptance_rate is not None]
    return {
        "instances": len(refresh.readings),
        "up": sum(r.up for r in refresh.readings),
        "with_acceptance": len(known),
        "refreshes": len(durations),
        "refresh_ms_median": statistics.median(durations) * 1000,
        "refresh_ms_max": max(durations) * 1000,
        "queries_per_refresh": sorted(queries),
        "quarter_instances": len(small_refresh.readings),
        "quarter_queries": small_refresh.queries,
        "cpu_share_of_one_core": cpu / wall,
        "history_load_ms": history_s * 1000,
        "history_queries": history_queries,
        "history_points_per_instance": statistics.median(len(v) for v in history.values()) if history else 0,
        "figure_errors": refresh.figure_errors,
        "error": refresh.error,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--scrape", type=float, default=5.0, help="Prometheus scrape interval, seconds")
    parser.add_argument("--refresh", type=float, default=2.0)
    parser.add_argument("--exporter", type=int, metavar="N", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.exporter:
        asyncio.run(_exporter(args.exporter))
        return 0
    from tests.fleet.conftest import prometheus_binary, start_prometheus, wait_targets_up

    if prometheus_binary() is None:
        print("bench_fleet: needs the prometheus binary (Debian package `prometheus`)", file=sys.stderr)
        return 2
    exporter = subprocess.Popen(
        [sys.executable, __file__, "--exporter", str(args.instances)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert exporter.stdout is not None
        port = int(exporter.stdout.readline())
        with tempfile.TemporaryDirectory() as folder:
            config = Path(folder) / "prometheus.yml"
            _prometheus_config(config, port, args.instances, args.scrape)
            prometheus = start_prometheus(config, Path(folder))
            try:
                wait_targets_up(prometheus.url, args.instances, timeout_s=60)
                time.sleep(3 * args.scrape)  # enough scrapes for rate() over the window
                result = asyncio.run(_measure(prometheus.url, args.instances, args.seconds, args.refresh))
            finally:
                prometheus.stop()
    finally:
        exporter.terminate()
        exporter.wait()
    for key, value in result.items():
        print(f"{key:>30}: {value:.3f}" if isinstance(value, float) else f"{key:>30}: {value}")
    share = float(result["cpu_share_of_one_core"])  # type: ignore[arg-type]
    verdict = "ok" if share < 0.10 else "MISSED"
    print(f"target: < 10% of one core at a {args.refresh:g} s refresh -> {verdict}")
    constant = result["queries_per_refresh"] == [result["quarter_queries"]]
    print(f"queries per refresh constant in the instance count: {'ok' if constant else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
