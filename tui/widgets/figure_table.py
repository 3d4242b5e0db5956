"""Every figure of one endpoint, two to a row, "–" for unknown, then why (notes) below."""

from __future__ import annotations

import textwrap

from textual.content import Content
from textual.widget import Widget

from tui.format import FIGURES, UNKNOWN, fmt_duration, fmt_rate, note_lines
from tui.widgets.card_view import CardData

TABLE_FIGURES = (
    "generation_tokens_per_s",
    "prompt_tokens_per_s",
    "requests_per_s",
    "acceptance_rate",
    "mean_acceptance_length",
)
LATENCY_FIGURES = ("ttft_mean_s", "ttft_p50_s", "ttft_p95_s", "tpot_mean_s", "e2e_mean_s")
LOAD_FIGURES = ("running", "waiting", "kv_cache_usage", "prefix_cache_hit_rate")


def _window(data: CardData) -> str:
    reading = data.reading
    covered = getattr(reading, "window_s", None) if reading is not None else None
    if not covered:
        return UNKNOWN
    if data.figures.window_short and data.window_s:
        return f"{covered:.0f}/{data.window_s:.0f} s"  # short: after a restart, or just started
    return fmt_duration(covered)


def note_rows(data: CardData) -> list[str]:
    """Why figures are unknown, partial or bounds: one line per reason, figures sharing it grouped."""
    return note_lines(data.figures.notes)


def figure_rows(data: CardData) -> list[tuple[str, str]]:
    """(label, text) of every figure, in the vocabulary's words; per-position bars last (a full row)."""
    rows = [("status", data.status_short()), ("window", _window(data))]
    rows += [(FIGURES[key].label, data.text(key)) for key in TABLE_FIGURES]
    rows.append(("threshold", fmt_rate(data.threshold)))
    rows += [(FIGURES[key].label, data.text(key)) for key in (*LATENCY_FIGURES, *LOAD_FIGURES)]
    rows.append((FIGURES["per_position_acceptance"].label, data.text("per_position_acceptance")))
    return rows


class FigureTable(Widget):
    DEFAULT_CSS = """
    FigureTable { width: 44; height: 100%; padding: 0 1; }
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
        lines: list[Content] = []
        single = rows[-1:]  # per-position bars need a full row
        pairs = rows[:-1]
        label_widths = [max(len(label) for label, _ in pairs[column::2]) + 1 for column in (0, 1)]
        for index in range(0, len(pairs), 2):
            cells = []
            for column, (label, value) in enumerate(pairs[index : index + 2]):
                cell = Content.assemble(
                    (label.ljust(label_widths[column]), "$text-muted"),
                    (value, "$text-muted" if value == UNKNOWN else "bold"),
                )
                cells.append(cell.truncate(half, pad=True))
            lines.append(Content(" ").join(cells))
        for label, value in single:
            lines.append(
                Content.assemble(
                    (label.ljust(label_widths[0]), "$text-muted"),
                    (value, "$text-muted" if value == UNKNOWN else "bold"),
                ).truncate(width)
            )
        for note in note_rows(self.data):
            for text in textwrap.wrap(note, width=width, initial_indent="* ", subsequent_indent="  "):
                lines.append(Content.styled(text, "$warning"))
        return Content("\n").join(lines)
