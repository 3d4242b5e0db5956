"""What one endpoint looks like right now: status, figures and the lines of its card."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from textual.content import Content

from tui.advice.advisor import Advice
from tui.board import PLACEHOLDER_URL
from tui.fit_text import fit_words, short_url
from tui.format import (
    FIGURES,
    LIFETIME_CAVEAT,
    UNKNOWN,
    figure_text,
    fmt_duration,
    k_in_effect_row,
    shown_figures,
    window_text,
)
from tui.gpu.monitor import EndpointGpus
from tui.sanitize import safe_line
from tui.telemetry.alerts import Alert, AlertKind
from tui.telemetry.figures import Figures
from tui.telemetry.plausible_figures import dropped_now, dropped_words
from tui.telemetry.reading import EndpointReading
from tui.telemetry.series import EndpointSeries
from tui.widgets.chart import FIGURE_CHARTS, TOKENS_PER_S_FLOOR, ChartSpec, chart_lines, spark, time_axis
from tui.widgets.gpu_panel import card_gpu_line
from tui.widgets.gpu_panel import render_key as gpu_render_key

Status = Literal["waiting", "up", "down", "restarting", "stale", "no data"]
STATUS_STYLE: dict[Status, str] = {
    "waiting": "$text-muted",
    "up": "$success",
    "down": "$error bold",
    "restarting": "$warning",
    "stale": "$warning",
    "no data": "$warning",  # fleet mode, Prometheus failed: nothing known of the instance
}
SEVERITY_BADGE = {"critical": ("CRIT", "$error bold reverse"), "warning": ("WARN", "$warning bold reverse")}
ALERT_LABEL: dict[AlertKind, str] = {  # every kind (tests/ui/test_card_view.py checks)
    "acceptance_low": "accept",
    "acceptance_critical": "accept",
    "down": "down",
    "oom": "OOM",
    "engine_error": "engine",
    "log_error": "log",
    "imbalance": "imbalance",
    "gpu_memory_high": "GPU mem",
    "source_down": "source",
    "guard": "guard",
    "advice": "k",
}
MODEL_SEPARATORS = "/-_:"


def _tail(model: str, keep: int, limit: int) -> str:
    """ "…" and the last `keep` characters of `model`, from a separator on when one is before `limit`."""
    begin = len(model) - keep
    if model[begin - 1] not in MODEL_SEPARATORS:
        after = next((i for i in range(begin, min(limit, len(model))) if model[i] in MODEL_SEPARATORS), None)
        if after is not None:
            begin = after + 1
    return "…" + model[begin:]


def short_model(model: str, width: int, peers: Sequence[str] = ()) -> str:
    """`model` in `width` columns, cut from the left; with `peers`, the part that differs from theirs kept."""
    if len(model) <= width:
        return model
    if width < 2:
        return "…"[:width]
    keep = width - 1
    others = [peer for peer in peers if peer and peer != model]
    shared = max((len(os.path.commonprefix([model, peer])) for peer in others), default=0)  # noqa: RUF071
    if shared == 0:
        return _tail(model, keep, len(model))
    # the differing part starts after the last separator of the shared prefix ("Llama-3.1-" | "70B-…")
    start = max(model.rfind(char, 0, shared) for char in MODEL_SEPARATORS) + 1
    if len(model) - start <= keep:
        return _tail(model, keep, start)
    return "…" + model[start : start + keep - 1] + "…"  # the differing part alone is too long: its start


def reading_status(
    reading: EndpointReading | None, now: float | None, stale_after_s: float, *, restarting: bool = False
) -> Status:
    """An endpoint's status from its newest reading (the fleet's table asks it without a `CardData`)."""
    if reading is None:
        return "waiting"
    if not reading.up:
        return "no data" if reading.source_failed else "restarting" if restarting else "down"
    if now is not None and now - reading.time > stale_after_s:
        return "stale"
    return "up"


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
    threshold_source: str = ""  # where the threshold comes from ("config.toml", "spectop.toml", "default")
    critical: float = 0.3
    window_s: float | None = None  # the configured window, to say when the figures cover less
    restarting: bool = False  # a planned restart (save & restart) is under way
    url: str | None = None  # the endpoint's base URL, shown when it is down
    gpu: EndpointGpus | None = None  # its GPUs at the last GPU poll (None: no poll yet)
    gpu_shared: frozenset[str] = frozenset()  # GPU keys shown in the dashboard's strip instead
    gpu_views: dict[str, EndpointGpus] = field(default_factory=dict)  # every endpoint's, for the strip rule
    advice: Advice | None = None  # the what-if advisor's (live sources only)
    adaptive_steps: tuple[int, ...] | None = None  # SGLang's adaptive tiers from the config file (() unread)
    peer_models: tuple[str, ...] = ()  # every endpoint's model (`Board.peer_models`), for the title
    autopilot: str | None = None  # the dashboard's autopilot, when on: what it does with this endpoint

    @property
    def figures(self) -> Figures:
        if self.reading is None or not self.reading.up:
            return Figures()
        return self.reading.figures

    @property
    def status(self) -> Status:
        return reading_status(self.reading, self.now, self.stale_after_s, restarting=self.restarting)

    @property
    def age(self) -> float | None:
        """Seconds since the newest scrape."""
        return None if self.reading is None or self.now is None else max(0.0, self.now - self.reading.time)

    @property
    def down_for(self) -> float | None:
        """Seconds since the first failed scrape of this down spell (from the history); None when up."""
        reading = self.reading
        if reading is None or reading.up or self.now is None:
            return None
        since = reading.time
        if self.history is not None:
            for time, up in zip(reversed(self.history.times), reversed(self.history.up), strict=True):
                if up:
                    break
                since = min(since, time)
        return max(0.0, self.now - since)

    @property
    def model_name(self) -> str | None:
        reading = self.reading
        return (reading.model if reading is not None else None) or self.model

    @property
    def shown_url(self) -> str | None:
        """The URL to show: not the placeholder of an endpoint known only from a recording."""
        return safe_line(self.url) if self.url and self.url != PLACEHOLDER_URL else None

    def status_text(self) -> str:
        """ "up · scraped 0 s ago" (an age, not an uptime), "down 1 min" (since the first failed scrape)."""
        status = self.status
        if status in ("waiting", "no data"):
            return status
        if status in ("down", "restarting"):
            return f"{status} {fmt_duration(self.down_for)}"
        return f"{status} · scraped {fmt_duration(self.age)} ago"

    def status_short(self) -> str:
        """ "up", "stale", "down 1 min": the status for a table cell or a screen's subtitle."""
        return self.status_text().split(" · ")[0]

    def render_key(self) -> tuple[object, ...]:
        """Everything the card shows, cheaply: equal keys mean an identical card."""
        reading = self.reading
        return (
            id(reading),
            reading.time if reading is not None else None,
            self.status_text(),
            tuple((alert.kind, alert.severity, alert.message, alert.started_at) for alert in self.alerts),
            self.threshold,
            len(self.history) if self.history is not None else 0,
            gpu_render_key(self.gpu, self.gpu_shared, self.gpu_views),
            self.peer_models,
        )

    def gpu_line(self, width: int) -> list[Content]:
        line = card_gpu_line(self.gpu, self.gpu_shared, self.gpu_views, width)
        return [] if line is None else [line]

    def title(self, width: int | None = None, peers: Sequence[str] | None = None) -> str:
        """ "name · backend · model", the model cut to `width` as `short_model` does."""
        peers = self.peer_models if peers is None else peers
        reading = self.reading
        backend = (reading.backend if reading is not None else None) or self.backend or "?"
        head = " · ".join((self.name, backend))
        model = self.model_name
        if model is None:
            return safe_line(head)
        model = safe_line(model)
        if width is not None:
            model = short_model(model, max(8, width - len(head) - 3), [safe_line(peer) for peer in peers])
        return safe_line(f"{head} · {model}")

    def status_content(self) -> Content:
        style = STATUS_STYLE[self.status]
        return Content.assemble(("● ", style), (self.status_text(), style))

    def acceptance_style(self, rate: float | None) -> str:
        if rate is None:
            return "$text-muted"
        return (
            "$error bold"
            if rate < self.critical
            else "$warning bold"
            if rate < self.threshold
            else "$success"
        )

    def text(self, key: str, positions: int = 8) -> str:
        """Figure `key` as the vocabulary writes it (quantiles as their bound when it says more)."""
        return figure_text(self.figures, key, positions=positions)

    def caveat(self) -> str | None:
        """Why the figures cover less than usual or lag (lifetime figures, a restart, a short window)."""
        figures = self.figures
        if figures.lifetime is not None:
            return LIFETIME_CAVEAT
        window_s = self.window_s if figures.window_short else None
        text = window_text(figures.covered_s, window_s, figures.restarted_s_ago, figures.restart_seen_s_ago)
        finished_only = "finished requests only" in figures.notes.get("acceptance_rate", "")
        if text is None and figures.running and finished_only:
            text = "acceptance from finished requests only"
        return text

    def series(self, name: str, count: int) -> list[float | None]:
        return self.history.tail(name, count) if self.history is not None else []


def _value(text: str) -> tuple[str, str]:
    return (text, "$text-muted" if text == UNKNOWN else "bold")


def _label(text: str) -> tuple[str, str]:
    return (text, "$text-muted")


def _labelled(data: CardData, *pairs: tuple[str, str]) -> list[tuple[str, str]]:
    return [part for label, key in pairs for part in (_label(label), _value(data.text(key)))]


def badge_line(data: CardData, width: int) -> Content:
    """Alert badges, then the scrape error, worst alert or caveat; badges that do not fit are counted
    ("+2"), the message gets what is left, in whole words."""
    badges = [
        (f" {label} {ALERT_LABEL.get(alert.kind, alert.kind)} ", style)
        for alert in sorted(data.alerts, key=lambda alert: alert.severity != "critical")
        for label, style in [SEVERITY_BADGE[alert.severity]]
    ]
    parts: list[str | tuple[str, str]] = []
    used = 0
    for index, badge in enumerate(badges):
        rest = len(badges) - index - 1
        more = len(f"+{rest} ") if rest else 0
        if used + len(badge[0]) + 1 + more > width:
            parts.append((f"+{len(badges) - index}", "$text-muted"))
            return Content.assemble(*parts).truncate(width)
        parts += [badge, " "]
        used += len(badge[0]) + 1
    message = _badge_message(data)
    if message is not None:
        parts.append((fit_words(message[0], width - used), message[1]))  # whole words only
    return Content.assemble(*parts).truncate(width)  # (wide characters count one cell in fit_words)


def _badge_message(data: CardData) -> tuple[str, str] | None:
    reading = data.reading
    caveat = data.caveat()
    if reading is not None and reading.error:
        # Why it is down (or its page inconsistent) says more than "endpoint down".
        return safe_line(reading.error), "$error"
    if data.autopilot is not None:  # turned on (`o`): what it does, the advice too ("watching · k=4 now · …")
        return data.autopilot, "$accent"
    if data.alerts:
        worst = min(data.alerts, key=lambda alert: alert.severity != "critical")
        return safe_line(worst.message), "$text-muted"
    if reading is not None and reading.impossible_figures and dropped_now(reading.figures):
        return dropped_words(reading.impossible_figures), "$warning"  # how many, not only notes
    if caveat is not None:
        return caveat, "$text-muted" if caveat == LIFETIME_CAVEAT else "$warning"
    advice = data.advice
    if advice is not None and (advice.basis or advice.context) is not None and data.status == "up":
        urgent = advice.better_k or advice.context or advice.table
        return advice.line(), "$warning" if urgent else "$text-muted"
    return None


def down_line(data: CardData, width: int) -> Content:
    """A down (or restarting) endpoint: for how long, and where ("down 1 min · http://10.0.0.5:8000")."""
    status = data.status
    text = data.status_text()
    parts: list[str | tuple[str, str]] = [(text, STATUS_STYLE[status])]
    if data.shown_url and len(text) + 3 < width:
        parts += [_label(" · "), short_url(data.shown_url, width - len(text) - 3)]
    return Content.assemble(*parts).truncate(width)


def compact_lines(data: CardData, width: int) -> list[Content]:
    """Three lines for an 80-column terminal; a down endpoint's first line says for how long and where."""
    columns = max(4, min(24, width - 70))
    line1 = Content.assemble(
        _label("tok/s "),
        _figure_value(data, "generation_tokens_per_s", 6),
        " ",
        (spark(data.series("generation_tokens_per_s", columns), columns, TOKENS_PER_S_FLOOR)[0], "$primary"),
        *_labelled(data, ("  TTFT ", "ttft_p50_s"), ("/", "ttft_p95_s"), ("  TPOT ", "tpot_mean_s")),
        *_labelled(data, ("  run ", "running"), (" wait ", "waiting")),
    )
    if data.status in ("down", "restarting"):
        line1 = down_line(data, width)
    line2 = Content.assemble(
        _label("accept"),
        _figure_value(data, "acceptance_rate", 6),
        " ",
        (spark(data.series("acceptance_rate", columns), columns, low=0.0, high=1.0)[0], "$accent"),
        *_labelled(data, ("  len ", "mean_acceptance_length")),
        *_positions_or_steps(data),
        *_labelled(data, ("  KV ", "kv_cache_usage")),
    )
    return [line1.truncate(width), line2.truncate(width), *data.gpu_line(width), badge_line(data, width)]


def _steps_in_use(data: CardData) -> list[tuple[str, str]]:
    """ "  steps in use 3 of 7 (adaptive)" for SGLang's adaptive steps (tui/format.py), else nothing."""
    row = k_in_effect_row(data.figures, data.adaptive_steps) if data.adaptive_steps is not None else None
    return [] if row is None else [_label(f"  {row[0]} "), _value(row[1])]


def _positions_or_steps(data: CardData) -> list[tuple[str, str]]:
    """The compact card's per-position rates, or the steps in use where they are adaptive (SGLang has no
    per-position figures)."""
    steps = _steps_in_use(data)
    return steps or [_label("  pos "), _value(data.text("per_position_acceptance", positions=3))]


def _roomy_spark(data: CardData, spec: ChartSpec, columns: int) -> Content:
    """ "label     value  ▁▂▅█ low–high": a figure, its sparkline and the range it is drawn on."""
    word = FIGURES[spec.key]
    line, scale = spark(data.series(spec.key, columns), columns, spec.floor, spec.low, spec.high)
    scale_text = f" {scale.text(word.format)}" if scale is not None else ""
    return Content.assemble(
        _label(word.label.ljust(12)),
        _figure_value(data, spec.key, 8),
        ("  ", ""),
        (line, spec.style),
        _label(scale_text[:RANGE_COLUMNS].ljust(RANGE_COLUMNS)),
    )


def _figure_value(data: CardData, key: str, width: int = 0) -> tuple[str, str]:
    """Figure `key` as the card writes it (right-aligned in `width`), acceptance in its threshold colour."""
    text = data.text(key)
    if key == "acceptance_rate":
        return (text.rjust(width), data.acceptance_style(data.figures.acceptance_rate))
    return _value(text.rjust(width))


FLOWING_FIGURES = (
    "ttft_p95_s",
    "tpot_mean_s",
    "running",
    "waiting",
    "kv_cache_usage",
    "prefix_cache_hit_rate",
    "mean_acceptance_length",
)
RANGE_COLUMNS = 18  # " 5.9 ms–7.2 ms" after a roomy card's sparkline
FIRST_LINE_FIGURES = 4  # latency and load on the first line, the caches and the mean length on the second
FIGURE_LINES = 3  # under a roomy card's sparklines or its charts: two of FLOWING_FIGURES, one of positions


def _pair(data: CardData, key: str, first: bool, positions: int = 8) -> list[tuple[str, str]]:
    return [_label(("" if first else "  ") + FIGURES[key].label + " "), _value(data.text(key, positions))]


def _positions_line(data: CardData, width: int) -> Content:
    """ "per pos ▆80% ▅60% ▃40%…": as many positions as fit in `width` (at least one), none cut; then
    the steps in use where they are adaptive."""
    rates = shown_figures(data.figures, "per_position_acceptance").per_position_acceptance or []
    steps = _steps_in_use(data)
    for positions in range(max(1, len(rates)), 0, -1):
        line = Content.assemble(*_pair(data, "per_position_acceptance", True, positions), *steps)
        if line.cell_length <= width:
            break
    return line.truncate(width, ellipsis=True)


def figure_lines(data: CardData, width: int) -> list[Content]:
    """`FIGURE_LINES` lines: `FLOWING_FIGURES` on two, then the per-position acceptance alone."""
    lines: list[list[tuple[str, str]]] = [[]]
    used = 0
    for count, key in enumerate(FLOWING_FIGURES):
        pair = _pair(data, key, not lines[-1])
        size = sum(len(text) for text, _ in pair)
        if len(lines) == 1 and lines[0] and (count == FIRST_LINE_FIGURES or used + size > width):
            lines.append([])
            pair, used = _pair(data, key, True), 0
            size = sum(len(text) for text, _ in pair)
        lines[-1] += pair
        used += size
    flowing = [Content.assemble(*parts).truncate(width, ellipsis=True) for parts in lines]
    return [*flowing, _positions_line(data, width)]


def roomy_lines(data: CardData, width: int) -> list[Content]:
    """Seven lines with full-width sparklines, for large terminals."""
    columns = max(8, width - 22 - RANGE_COLUMNS)
    lines = [
        *(_roomy_spark(data, spec, columns) for spec in FIGURE_CHARTS),
        *figure_lines(data, width),
        *data.gpu_line(width),
        badge_line(data, width),
    ]
    if data.status in ("down", "restarting"):
        lines[0] = down_line(data, width)
    return [line.truncate(width) for line in lines]


# --- a card with the room for the detail screen's charts ------------------------------------------------

CARD_CHART_WINDOW_S = 300.0  # the last 5 min, as the detail screen opens
CHART_MIN_ROWS = 3  # a chart on a card: its title and two rows (the top and bottom value at the left)
CHART_MIN_WIDTH = 40  # columns of a card's content for charts (8 of them are the y labels)
ROOMY_LINES = len(FIGURE_CHARTS) + FIGURE_LINES + 1  # sparklines, figures, badges (a GPU line: one more)
CHART_LINES = len(FIGURE_CHARTS) * CHART_MIN_ROWS + 1 + FIGURE_LINES + 1  # charts, time axis, figures, badges


def charts_fit(data: CardData, width: int, height: int) -> bool:
    """Whether a card's content of `width` x `height` has the room for the charts (with their axes)."""
    return width >= CHART_MIN_WIDTH and height >= CHART_LINES + len(data.gpu_line(width))


def chart_lines_of(data: CardData, width: int, height: int) -> list[Content]:
    """The detail screen's charts over the last `CARD_CHART_WINDOW_S`, then the figures and the badges."""
    history = data.history
    end = data.now if data.now is not None else (history.times[-1] if history else 0.0)
    start = end - CARD_CHART_WINDOW_S
    markers = [marker for marker in history.markers if start <= marker[0] <= end] if history else []
    under = [*figure_lines(data, width), *data.gpu_line(width), badge_line(data, width)]
    room = max(len(FIGURE_CHARTS) * 2, height - len(under) - 1)
    lines: list[Content] = []
    for index, spec in enumerate(FIGURE_CHARTS):
        rows = room // len(FIGURE_CHARTS) + (index < room % len(FIGURE_CHARTS))
        times, values = history.window(spec.key, start) if history is not None else ([], [])
        value = _figure_value(data, spec.key)
        bound = history.bound_since(spec.key, start) if history is not None else None
        lines += chart_lines(spec, times, values, start, end, width, rows, markers, value=value, bound=bound)
    lines.append(time_axis(start, end, width, markers))
    if data.status in ("down", "restarting"):
        lines[0] = down_line(data, width)  # the tokens/s chart's title: "– " says nothing more
    return [line.truncate(width) for line in [*lines, *under]]


def card_lines(data: CardData, width: int, height: int) -> list[Content]:
    """What a card shows: the charts when they fit, else the roomy sparklines, else three compact lines."""
    if charts_fit(data, width, height):
        return chart_lines_of(data, width, height)
    if height >= ROOMY_LINES + len(data.gpu_line(width)):
        return roomy_lines(data, width)
    return compact_lines(data, width)
