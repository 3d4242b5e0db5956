"""What one endpoint looks like right now: status, figures and the lines of its card."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from textual.content import Content

from tui.gpu.monitor import EndpointGpus
from tui.sanitize import safe_line
from tui.telemetry.alerts import Alert
from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading
from tui.telemetry.series import EndpointSeries
from tui.widgets.chart import RANGE_COLUMNS, SECONDS_FLOOR, TOKENS_PER_S_FLOOR, spark, spark_with_range
from tui.widgets.format import (
    UNKNOWN,
    fmt_age,
    fmt_count,
    fmt_number,
    fmt_percent,
    fmt_quantile,
    fmt_ratio,
    fmt_seconds,
    position_bars,
    window_text,
)
from tui.widgets.gpu_panel import card_gpu_line
from tui.widgets.gpu_panel import render_key as gpu_render_key

Status = Literal["waiting", "up", "down", "restarting", "stale"]
STATUS_STYLE: dict[Status, str] = {
    "waiting": "$text-muted",
    "up": "$success",
    "down": "$error bold",
    "restarting": "$warning",
    "stale": "$warning",
}
SEVERITY_BADGE = {"critical": ("CRIT", "$error bold reverse"), "warning": ("WARN", "$warning bold reverse")}
ALERT_LABEL = {
    "acceptance_low": "accept",
    "acceptance_critical": "accept",
    "down": "down",
    "oom": "OOM",
    "engine_error": "engine",
    "log_error": "log",
    "gpu_memory_high": "GPU mem",
}


@dataclass
class CardData:
    name: str
    backend: str | None = None
    model: str | None = None
    reading: EndpointReading | None = None
    history: EndpointSeries | None = None
    alerts: list[Alert] = field(default_factory=list)
    now: float | None = None
    stale_after_s: float = 10.0
    threshold: float = 0.6
    critical: float = 0.3
    window_s: float | None = None  # the configured window, to say when the figures cover less
    restarting: bool = False  # a planned restart (save & restart) is under way
    gpu: EndpointGpus | None = None  # its GPUs at the last GPU poll (None: no poll yet)
    gpu_shared: frozenset[str] = frozenset()  # GPU keys shown in the dashboard's strip instead
    gpu_views: dict[str, EndpointGpus] = field(default_factory=dict)  # every endpoint's, for the strip rule

    @property
    def figures(self) -> Figures:
        if self.reading is None or not self.reading.up:
            return Figures()
        return self.reading.figures

    @property
    def status(self) -> Status:
        if self.reading is None:
            return "waiting"
        if not self.reading.up:
            return "restarting" if self.restarting else "down"
        if self.age is not None and self.age > self.stale_after_s:
            return "stale"
        return "up"

    @property
    def age(self) -> float | None:
        if self.reading is None or self.now is None:
            return None
        return max(0.0, self.now - self.reading.time)

    def render_key(self) -> tuple[object, ...]:
        """Everything the card shows, cheaply: equal keys mean an identical card."""
        reading = self.reading
        return (
            id(reading),
            reading.time if reading is not None else None,
            self.status,
            fmt_age(self.age),
            tuple((alert.kind, alert.severity, alert.message, alert.started_at) for alert in self.alerts),
            self.threshold,
            len(self.history) if self.history is not None else 0,
            gpu_render_key(self.gpu, self.gpu_shared, self.gpu_views),
        )

    def gpu_line(self, width: int) -> list[Content]:
        """The card's GPU line (tui/widgets/gpu_panel.py), or none."""
        line = card_gpu_line(self.gpu, self.gpu_shared, self.gpu_views, width)
        return [] if line is None else [line]

    def title(self) -> str:
        reading = self.reading
        backend = (reading.backend if reading is not None else None) or self.backend or "?"
        model = (reading.model if reading is not None else None) or self.model
        return safe_line(" · ".join(part for part in (self.name, backend, model) if part))

    def status_content(self) -> Content:
        status = self.status
        text = status if status == "waiting" else f"{status} {fmt_age(self.age)}"
        return Content.assemble(("● ", STATUS_STYLE[status]), (text, STATUS_STYLE[status]))

    def acceptance_style(self, rate: float | None) -> str:
        if rate is None:
            return "$text-muted"
        if rate < self.critical:
            return "$error bold"
        if rate < self.threshold:
            return "$warning bold"
        return "$success"

    def quantile(self, name: str) -> str:
        """A TTFT quantile, or its bound ("<100ms") when its histogram bucket says more."""
        figures = self.figures
        return fmt_quantile(getattr(figures, name), figures.quantile_bounds.get(name))

    def caveat(self) -> str | None:
        """Why the figures cover less than usual or lag: a restart, a short window, finished requests."""
        figures = self.figures
        window_s = self.window_s if figures.window_short else None
        text = window_text(figures.covered_s, window_s, figures.restarted_s_ago)
        if (
            text is None
            and figures.running
            and "finished requests only" in figures.notes.get("acceptance_rate", "")
        ):
            text = "acceptance from finished requests only"
        return text

    def series(self, name: str, count: int) -> list[float | None]:
        return self.history.tail(name, count) if self.history is not None else []


def _value(text: str) -> tuple[str, str]:
    return (text, "$text-muted" if text == UNKNOWN else "bold")


def _label(text: str) -> tuple[str, str]:
    return (text, "$text-muted")


def badge_line(data: CardData, width: int) -> Content:
    """Alert badges, or the scrape error when down, or nothing."""
    parts: list[str | tuple[str, str]] = []
    for alert in sorted(data.alerts, key=lambda alert: alert.severity != "critical"):
        label, style = SEVERITY_BADGE[alert.severity]
        parts += [(f" {label} {ALERT_LABEL.get(alert.kind, alert.kind)} ", style), " "]
    reading = data.reading
    caveat = data.caveat()
    if reading is not None and reading.error:
        # Why it is down (or its page inconsistent) says more than "endpoint down".
        parts.append((safe_line(reading.error), "$error"))
    elif data.alerts:
        worst = min(data.alerts, key=lambda alert: alert.severity != "critical")
        parts.append((safe_line(worst.message), "$text-muted"))
    elif caveat is not None:
        parts.append((caveat, "$warning"))
    return Content.assemble(*parts).truncate(width, ellipsis=True)


def compact_lines(data: CardData, width: int) -> list[Content]:
    """Three lines for an 80-column terminal."""
    figures = data.figures
    columns = max(4, min(24, width - 66))
    acceptance = figures.acceptance_rate
    line1 = Content.assemble(
        _label("tok/s "),
        _value(fmt_number(figures.generation_tokens_per_s).rjust(6)),
        " ",
        (spark(data.series("generation_tokens_per_s", columns), columns, TOKENS_PER_S_FLOOR)[0], "$primary"),
        _label("  TTFT "),
        _value(data.quantile("ttft_p50_s")),
        _label("/"),
        _value(data.quantile("ttft_p95_s")),
        _label("  TPOT "),
        _value(fmt_seconds(figures.tpot_mean_s)),
        _label("  run "),
        _value(fmt_count(figures.running)),
        _label(" wait "),
        _value(fmt_count(figures.waiting)),
    )
    line2 = Content.assemble(
        _label("accept"),
        (fmt_ratio(acceptance).rjust(6), data.acceptance_style(acceptance) if acceptance is not None else ""),
        " ",
        (spark(data.series("acceptance_rate", columns), columns, low=0.0, high=1.0)[0], "$accent"),
        _label("  len "),
        _value(fmt_ratio(figures.mean_acceptance_length)),
        _label("  pos "),
        _value(position_bars(figures.per_position_acceptance, limit=3)),
        _label("  KV "),
        _value(fmt_percent(figures.kv_cache_usage)),
    )
    return [line1.truncate(width), line2.truncate(width), *data.gpu_line(width), badge_line(data, width)]


def roomy_lines(data: CardData, width: int) -> list[Content]:
    """Six lines with full-width sparklines, for large terminals."""
    figures = data.figures
    columns = max(8, width - 22 - RANGE_COLUMNS)
    acceptance = figures.acceptance_rate
    lines = [
        Content.assemble(
            _label("gen tok/s   "),
            _value(fmt_number(figures.generation_tokens_per_s).rjust(8)),
            "  ",
            *spark_with_range(
                data.series("generation_tokens_per_s", columns),
                columns,
                fmt_number,
                "$primary",
                TOKENS_PER_S_FLOOR,
            ),
        ),
        Content.assemble(
            _label("TTFT p50    "),
            _value(data.quantile("ttft_p50_s").rjust(8)),
            "  ",
            *spark_with_range(
                data.series("ttft_p50_s", columns), columns, fmt_seconds, "$secondary", SECONDS_FLOOR
            ),
        ),
        Content.assemble(
            _label("acceptance  "),
            (fmt_ratio(acceptance).rjust(8), data.acceptance_style(acceptance)),
            "  ",
            *spark_with_range(
                data.series("acceptance_rate", columns), columns, fmt_ratio, "$accent", low=0.0, high=1.0
            ),
        ),
        Content.assemble(
            _label("TTFT p95 "),
            _value(data.quantile("ttft_p95_s")),
            _label("  TPOT "),
            _value(fmt_seconds(figures.tpot_mean_s)),
            _label("  mean len "),
            _value(fmt_ratio(figures.mean_acceptance_length)),
            _label("  per pos "),
            _value(position_bars(figures.per_position_acceptance, limit=6)),
        ),
        Content.assemble(
            _label("running "),
            _value(fmt_count(figures.running)),
            _label("  waiting "),
            _value(fmt_count(figures.waiting)),
            _label("  KV cache "),
            _value(fmt_percent(figures.kv_cache_usage)),
            _label("  prefix hit "),
            _value(fmt_percent(figures.prefix_cache_hit_rate)),
        ),
        *data.gpu_line(width),
        badge_line(data, width),
    ]
    return [line.truncate(width) for line in lines]
