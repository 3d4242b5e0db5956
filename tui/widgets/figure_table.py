"""Every figure of one endpoint, two to a row, "–" for unknown, then why (notes) below."""

from __future__ import annotations

import textwrap

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

NOTE_LABELS = {
    "window": "window",
    "generation_tokens_per_s": "gen tok/s",
    "prompt_tokens_per_s": "prompt",
    "requests_per_s": "req/s",
    "acceptance_rate": "acceptance",
    "mean_acceptance_length": "mean len",
    "per_position_acceptance": "per pos",
    "tpot_mean_s": "TPOT",
    "ttft_p50_s": "TTFT p50",
    "ttft_p95_s": "TTFT p95",
}


def _window(data: CardData) -> str:
    reading = data.reading
    covered = getattr(reading, "window_s", None) if reading is not None else None
    if not covered:
        return UNKNOWN
    if data.figures.window_short and data.window_s:
        return f"{covered:.0f}/{data.window_s:.0f}s"  # short: after a restart, or just started
    return f"{covered:.0f}s"


def note_rows(data: CardData) -> list[str]:
    """Why figures are unknown, partial or bounds: one line per reason, figures sharing it grouped."""
    by_text: dict[str, list[str]] = {}
    for name, text in data.figures.notes.items():
        by_text.setdefault(text, []).append(NOTE_LABELS.get(name, name))
    return [f"{', '.join(names)}: {text}" for text, names in by_text.items()]


def figure_rows(data: CardData) -> list[tuple[str, str]]:
    figures = data.figures
    return [
        ("status", data.status_content().plain[2:]),
        ("window", _window(data)),
        ("gen tok/s", fmt_number(figures.generation_tokens_per_s)),
        ("prompt+cache", fmt_number(figures.prompt_tokens_per_s)),
        ("req/s", fmt_number(figures.requests_per_s, 2)),
        ("acceptance", fmt_ratio(figures.acceptance_rate)),
        ("mean len", fmt_ratio(figures.mean_acceptance_length)),
        ("threshold", fmt_ratio(data.threshold)),
        ("TTFT mean", fmt_seconds(figures.ttft_mean_s)),
        ("TTFT p50", data.quantile("ttft_p50_s")),
        ("TTFT p95", data.quantile("ttft_p95_s")),
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
    FigureTable { width: 42; height: 100%; padding: 0 1; }
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
        label_width = 12
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
        for note in note_rows(self.data):
            for text in textwrap.wrap(note, width=width, initial_indent="* ", subsequent_indent="  "):
                lines.append(Content.styled(text, "$warning"))
        return Content("\n").join(lines)
