"""The headless dashboard's own CPU share watching N simulated endpoints (simulators in one other
process). `[--endpoints 16] [--seconds 60]`; target under 10% of one core."""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import ROOT, print_figures


async def _farm(count: int, folder: Path, load_rps: float) -> None:
    from tui.paths import sample_configs_dir
    from tui.sim.server import SimServer

    servers = []
    for index in range(count):
        config = sample_configs_dir() / ("config.toml" if index % 2 == 0 else "config_mtp_off.toml")
        server = SimServer(
            flavor="vllm",
            config_path=config,
            log_path=folder / f"sim{index}.log",
            background_load_rps=load_rps,
        )
        await server.start()
        servers.append(server)
    print(json.dumps([server.base_url for server in servers]), flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        for server in servers:
            await server.stop()


async def _watch(urls: list[str], folder: Path, seconds: float) -> dict[str, float]:
    from tui.paths import themes_dir
    from tui.settings import EndpointSettings, Settings
    from tui.ui.app import SpectopApp

    endpoints = [
        EndpointSettings(name=f"sim{index}", url=url, backend="vllm", log_file=folder / f"sim{index}.log")
        for index, url in enumerate(urls)
    ]
    settings = Settings(poll_interval_s=1.0, endpoints=endpoints)
    app = SpectopApp(settings, theme_folders=[themes_dir()], remember_theme_choice=False)
    async with app.run_test(size=(200, 50)) as pilot:
        for _ in range(200):  # warm-up: every endpoint has a reading
            if len(app.readings) == len(urls):
                break
            await pilot.pause(0.1)
        cpu_start, wall_start = time.process_time(), time.monotonic()
        polls_start = sum(len(app.series.endpoint(endpoint.name)) for endpoint in endpoints)
        await asyncio.sleep(seconds)
        cpu = time.process_time() - cpu_start
        wall = time.monotonic() - wall_start
        polls = sum(len(app.series.endpoint(endpoint.name)) for endpoint in endpoints) - polls_start
        log_lines = sum(len(app.log_entries(endpoint.name)) for endpoint in endpoints)
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "cpu_share_of_one_core": cpu / wall,
        "readings": polls,
        "log_lines_buffered": log_lines,
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


async def _poll_only(urls: list[str], seconds: float) -> float:
    """The same polling without any UI: the telemetry core's share, for comparison."""
    import httpx

    from tui.settings import EndpointSettings
    from tui.telemetry.monitor import EndpointMonitor

    monitors = [
        EndpointMonitor(EndpointSettings(name=f"sim{index}", url=url, backend="vllm"), 60.0)
        for index, url in enumerate(urls)
    ]
    async with httpx.AsyncClient(timeout=5.0) as client:
        cpu_start, wall_start = time.process_time(), time.monotonic()
        while time.monotonic() - wall_start < seconds:
            tick = time.monotonic()
            await asyncio.gather(*(monitor.poll(client) for monitor in monitors))
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
        return (time.process_time() - cpu_start) / (time.monotonic() - wall_start)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoints", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--load", type=float, default=0.5, help="background requests/s per sim")
    parser.add_argument("--farm", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.farm:
        asyncio.run(_farm(args.farm, args.folder, args.load))
        return 0
    with tempfile.TemporaryDirectory(prefix="spectop-bench-") as folder_name:
        folder = Path(folder_name)
        farm = subprocess.Popen(
            [sys.executable, __file__, "--farm", str(args.endpoints), "--folder", str(folder),
             "--load", str(args.load)],
            stdout=subprocess.PIPE, text=True, cwd=ROOT,
        )  # fmt: skip
        try:
            assert farm.stdout is not None
            urls = json.loads(farm.stdout.readline())
            result = asyncio.run(_watch(urls, folder, args.seconds))
            result["core_polling_share_without_ui"] = asyncio.run(_poll_only(urls, min(args.seconds, 20.0)))
        finally:
            farm.terminate()
            farm.wait(timeout=10)
    print(f"endpoints: {args.endpoints}, poll every 1 s, {args.seconds:.0f} s, 200x50 headless")
    print_figures(result, 24)
    share = result["cpu_share_of_one_core"] * 100
    core = result["core_polling_share_without_ui"] * 100
    print(f"CPU share of one core: {share:.1f}% (target < 10%); the polling alone, without UI: {core:.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
