"""The fleet dashboard without Prometheus: the headless app (200x50) on N scripted instances whose
figures move every refresh; CPU time and DataTable cell renders per refresh.
`[--instances 1000] [--refreshes 10]`"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from typing import Any

from bench_common import print_figures
from textual.widgets import DataTable

from tests.fleet.fake_fleet import NOW, ScriptedPoller, fleet_app, fleet_settings, scripted_readings
from tui.fleet.poller import FleetRefresh
from tui.sources.fleet import FleetSource


class MovingPoller(ScriptedPoller):
    """The scripted readings with tok/s and TTFT p95 moving a little at every refresh."""

    refreshes = 0

    async def refresh(self) -> FleetRefresh:
        self.refreshes += 1
        at = NOW + 2 * self.refreshes
        readings = []
        for reading in self.readings:
            figures = reading.figures
            if figures.generation_tokens_per_s is not None:
                figures = figures.model_copy(
                    update={
                        "generation_tokens_per_s": figures.generation_tokens_per_s + random.random(),
                        "ttft_p95_s": (figures.ttft_p95_s or 0.05) * (1 + random.random() / 50),
                    }
                )
            readings.append(reading.model_copy(update={"figures": figures, "time": at}))
        self.last_refresh = FleetRefresh(at, readings)
        return self.last_refresh


async def measure(instances: int, rounds: int) -> dict[str, float]:
    rendered = [0]
    render_cell = DataTable._render_cell

    def counting(self: DataTable[Any], *args: Any, **kwargs: Any) -> Any:
        rendered[0] += 1
        return render_cell(self, *args, **kwargs)

    DataTable._render_cell = counting  # type: ignore[method-assign]
    settings = fleet_settings("http://prometheus.test:9090", poll_interval_s=1.0)
    assert settings.prometheus is not None
    poller = MovingPoller(settings.prometheus, scripted_readings(instances))
    app = fleet_app(settings, FleetSource(settings, poller=poller, clock=lambda: NOW))
    async with app.run_test(size=(200, 50)) as pilot:
        while poller.refreshes < 3:
            await pilot.pause(0.2)
        await pilot.pause(1.0)
        first, cpu = poller.refreshes, time.process_time()
        rendered[0] = 0
        while poller.refreshes < first + rounds:
            await pilot.pause(0.1)
        count = poller.refreshes - first
        used = time.process_time() - cpu
    return {"cpu_ms_per_refresh": used / count * 1000, "cells_rendered_per_refresh": rendered[0] / count}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--refreshes", type=int, default=10)
    args = parser.parse_args()
    result = asyncio.run(measure(args.instances, args.refreshes))
    print(f"{args.instances} instances, 200x50, table view:")
    print_figures(result, 28, digits=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
