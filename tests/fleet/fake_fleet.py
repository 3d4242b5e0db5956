"""A fleet of many vLLM instances behind the fake Prometheus (`Fleet40` decides every figure and can be
switched to fail), and the dashboard app on it."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from tests.fleet.fake_prometheus import FIGURE_OF, WINDOW_S, Answer, is_discovery, vector
from tui.fleet.poller import FleetPoller, FleetReading, FleetRefresh
from tui.paths import themes_dir
from tui.settings import AlertSettings, PrometheusSettings, Settings
from tui.sources.fleet import FleetSource
from tui.telemetry.figures import Figures
from tui.ui.app import SpectopApp

MODELS = ("llama-8b", "qwen-7b")


@dataclass
class Instance:
    name: str
    model: str
    up: bool
    figures: dict[str, float]  # NaN: Prometheus answers NaN (an empty window)


def instances(count: int = 40) -> list[Instance]:
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
        result.append(Instance(f"10.1.0.{i}:8000", MODELS[(i + 1) % 2], i != count, figures))
    return result


@dataclass
class Fleet40:
    members: list[Instance] = field(default_factory=instances)
    failing: Answer | None = None  # every answer while set (status error, 503, slow)

    def by_name(self) -> dict[str, Instance]:
        return {member.name: member for member in self.members}

    def answer(self, path: str, form: dict[str, str]) -> Answer:
        if self.failing is not None:
            return self.failing
        query = form.get("query", "")
        if path == "/api/v1/query_range":
            return 200, {"status": "success", "data": {"resultType": "matrix", "result": []}}, 0.0
        if is_discovery(query):
            rows = [
                ({"instance": m.name, "job": "vllm", "backend": "vllm", "model_name": m.model}, "16")
                for m in self.members
            ]
            return 200, vector(*rows), 0.0
        if query == "up":
            return 200, vector(*(({"instance": m.name}, "1" if m.up else "0") for m in self.members)), 0.0
        if query.startswith("timestamp(up"):
            stamp = f"{time.time() - 1:.3f}"
            return 200, vector(*(({"instance": m.name}, stamp) for m in self.members)), 0.0
        figure = FIGURE_OF.get(query, "")
        rows = [
            ({"instance": m.name}, "NaN" if math.isnan(v) else repr(v))
            for m in self.members
            if m.up and (v := m.figures.get(figure)) is not None
        ]
        return 200, vector(*rows), 0.0


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


def scripted_readings(count: int = 40) -> list[FleetReading]:
    readings = []
    for member in instances(count):
        known = {name: value for name, value in member.figures.items() if not math.isnan(value)}
        readings.append(
            FleetReading(
                name=member.name,
                url=member.name,
                instance=member.name,
                time=NOW,
                up=member.up,
                error=None if member.up else "target down (up == 0): Prometheus cannot scrape it",
                backend="vllm",
                model=member.model,
                window_s=WINDOW_S,
                figures=Figures.model_validate(known if member.up else {}),
                job="vllm",
                group=member.model,
            )
        )
    return readings


def scripted_app(count: int = 40) -> SpectopApp:
    settings = fleet_settings("http://prometheus.test:9090", poll_interval_s=3600.0)
    assert settings.prometheus is not None
    poller = ScriptedPoller(settings.prometheus, scripted_readings(count))
    return fleet_app(settings, FleetSource(settings, poller=poller, clock=lambda: NOW))
