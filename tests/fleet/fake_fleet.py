"""A fleet of many vLLM instances behind the fake Prometheus (`Fleet40` decides every figure and can be
switched to fail), and the dashboard app on it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from textual.pilot import Pilot

from tests.fleet.fake_prometheus import WINDOW_S, FakeFleet, Member
from tests.ui.ui_waiting import wait_for
from tui.fleet.poller import FleetPoller, FleetReading, FleetRefresh
from tui.paths import themes_dir
from tui.settings import AlertSettings, PrometheusSettings, Settings
from tui.sources.fleet import FleetSource
from tui.telemetry.figures import Figures
from tui.ui.app import SpectopApp
from tui.widgets.fleet_table import FleetTable

MODELS = ("llama-8b", "qwen-7b")


def instances(count: int = 40) -> list[Member]:
    """Instance i: model by parity, tok/s 100+i, acceptance 0.6..0.66; #7 far off its group (0.2);
    #39 NaN acceptance (empty window); #40 a target down."""
    result = []
    for i in range(1, count + 1):
        acceptance = 0.2 if i == 7 else math.nan if i == 39 else 0.60 + (i % 7) * 0.01
        figures = {
            "generation_tokens_per_s": 100.0 + i,
            "acceptance_rate": acceptance,
            "mean_acceptance_length": 1.0 + 2 * acceptance if not math.isnan(acceptance) else math.nan,
            "ttft_p95_s": 0.05 + i / 1000,
            "running": float(i % 5),
            "waiting": float(i % 3),
            "kv_cache_usage": (i % 10) / 10,
        }
        result.append(Member(f"10.1.0.{i}:8000", MODELS[(i + 1) % 2], i != count, figures))
    return result


@dataclass
class Fleet40(FakeFleet):
    members: list[Member] = field(default_factory=instances)


async def filled(pilot: Pilot[Any], count: int = 40) -> FleetTable:
    """The fleet table once it lists `count` instances."""
    app = pilot.app
    assert isinstance(app, SpectopApp)
    await wait_for(pilot, lambda: len(app.readings) == count and bool(app.screen.query(FleetTable)))
    table = app.screen.query_one(FleetTable)
    await wait_for(pilot, lambda: len(table.endpoints) == count)
    return table


def fleet_settings(url: str, **extra: Any) -> Settings:
    return Settings(
        prometheus=PrometheusSettings(url=url, timeout_s=2.0, group_by=extra.pop("group_by", "model")),
        window_s=WINDOW_S,
        poll_interval_s=extra.pop("poll_interval_s", 0.3),
        alerts=AlertSettings(sustained_s=0.0),
        **extra,
    )


def fleet_app(settings: Settings, source: FleetSource | None = None) -> SpectopApp:
    return SpectopApp(
        settings,
        source=source or FleetSource(settings),
        theme_folders=[themes_dir()],
        remember_theme_choice=False,
    )


# --- deterministic data for snapshots: a poller that answers a fixed refresh -------------------------

NOW = 1_767_225_600.0  # 2026-01-01 00:00 UTC


class ScriptedPoller(FleetPoller):
    """A FleetPoller whose refresh is `readings` at NOW (no network, no clock)."""

    def __init__(self, settings: PrometheusSettings, readings: list[FleetReading]) -> None:
        super().__init__(settings, WINDOW_S)
        self.readings = readings

    async def refresh(self) -> FleetRefresh:
        self.last_refresh = FleetRefresh(NOW, [reading.model_copy() for reading in self.readings])
        return self.last_refresh

    async def load_history(self, *_args: Any, **_kwargs: Any) -> dict[str, list[tuple[float, Figures]]]:
        """Twelve points of a rising tok/s per instance that is up (the sparklines are full at once)."""
        loaded = {}
        for reading in self.readings:
            tokens = reading.figures.generation_tokens_per_s
            if reading.up and tokens is not None:
                rising = [tokens * (0.5 + step / 24) for step in range(12)]
                loaded[reading.name] = [
                    (NOW - 2 * (12 - step), Figures(generation_tokens_per_s=value))
                    for step, value in enumerate(rising)
                ]
        return loaded


def fleet_reading(
    name: str, figures: Figures | None = None, *, up: bool = True, **extra: Any
) -> FleetReading:
    """An instance's reading at NOW: vLLM, model "m", its figures (none unless given)."""
    fields = {"backend": "vllm", "model": "m", "window_s": WINDOW_S, **extra}
    return FleetReading(
        name=name, url=name, instance=name, time=NOW, up=up, figures=figures or Figures(), **fields
    )


def scripted_readings(count: int = 40) -> list[FleetReading]:
    return [
        fleet_reading(
            member.name,
            Figures.model_validate({k: v for k, v in member.figures.items() if not math.isnan(v)})
            if member.up
            else None,
            up=member.up,
            error=None if member.up else "target down (up == 0): Prometheus cannot scrape it",
            model=member.model,
            job="vllm",
            group=member.model,
        )
        for member in instances(count)
    ]


def scripted_app(count: int = 40) -> SpectopApp:
    settings = fleet_settings("http://prometheus.test:9090", poll_interval_s=3600.0)
    assert settings.prometheus is not None
    poller = ScriptedPoller(settings.prometheus, scripted_readings(count))
    return fleet_app(settings, FleetSource(settings, poller=poller, clock=lambda: NOW))
