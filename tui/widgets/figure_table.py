"""Every figure of one endpoint, two to a row, "–" for unknown."""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from tui.widgets.card_view import CardData
from tui.widgets.format import (
    UNKNOWN,
    fmt_count,
    fmt_number,
    fmt_percent,
    fmt_ratio,
    fmt_seconds,
    position_bars,
)


def figure_rows(data: CardData) -> list[tuple[str, str]]:
    figures = data.figures
    reading = data.reading
    return [
        ("status", data.status_content().plain[2:]),
        ("window", f"{reading.window_s:.0f}s" if reading and getattr(reading, "window_s", None) else UNKNOWN),
        ("gen tok/s", fmt_number(figures.generation_tokens_per_s)),
        ("prompt t/s", fmt_number(figures.prompt_tokens_per_s)),
        ("req/s", fmt_number(figures.requests_per_s, 2)),
        ("acceptance", fmt_ratio(figures.acceptance_rate)),
        ("mean len", fmt_ratio(figures.mean_acceptance_length)),
        ("threshold", fmt_ratio(data.threshold)),
        ("TTFT mean", fmt_seconds(figures.ttft_mean_s)),
        ("TTFT p50", fmt_seconds(figures.ttft_p50_s)),
        ("TTFT p95", fmt_seconds(figures.ttft_p95_s)),
        ("TPOT", fmt_seconds(figures.tpot_mean_s)),
        ("e2e mean", fmt_seconds(figures.e2e_mean_s)),
        ("running", fmt_count(figures.running)),
        ("waiting", fmt_count(figures.waiting)),
        ("KV cache", fmt_percent(figures.kv_cache_usage)),
        ("prefix hit", fmt_percent(figures.prefix_cache_hit_rate)),
        ("per pos", position_bars(figures.per_position_acceptance, limit=8)),
    ]


class FigureTable(Widget):
    DEFAULT_CSS = """
    FigureTable { width: 40; height: 100%; padding: 0 1; }
    """

    def __init__(self, data: CardData, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.data = data

    def set_data(self, data: CardData) -> None:
        self.data = data
        self.refresh()

    def render(self) -> Content:
        width = max(10, self.content_size.width)
        rows = figure_rows(self.data)
        half = max(1, (width - 1) // 2)
        label_width = 11
        lines: list[Content] = []
        single = rows[-1:]  # per-position bars need a full row
        pairs = rows[:-1]
        for index in range(0, len(pairs), 2):
            cells = []
            for label, value in pairs[index : index + 2]:
                cell = Content.assemble(
                    (label.ljust(label_width)[:label_width] + " ", "$text-muted"),
                    (value, "$text-muted" if value == UNKNOWN else "bold"),
                )
                cells.append(cell.truncate(half, pad=True))
            lines.append(Content(" ").join(cells))
        for label, value in single:
            lines.append(
                Content.assemble(
                    (label.ljust(label_width) + " ", "$text-muted"),
                    (value, "$text-muted" if value == UNKNOWN else "bold"),
                ).truncate(width)
            )
        return Content("\n").join(lines)
