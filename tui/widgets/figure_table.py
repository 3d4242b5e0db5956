"""Every figure of one endpoint, two to a row, "–" for unknown, then why (notes) below."""

from __future__ import annotations

import re
import textwrap

from textual.content import Content
from textual.widget import Widget

from tui.advice.advisor import Advice
from tui.fit_text import fit_words
from tui.format import (
    FIGURES,
    UNKNOWN,
    fmt_duration,
    fmt_part_of_window,
    fmt_rate,
    k_in_effect_row,
    note_lines,
)
from tui.sanitize import safe_line
from tui.widgets.card_view import CardData


def _window(data: CardData) -> str:
    covered = data.reading.window_s if data.reading is not None else None
    if not covered:
        return UNKNOWN
    if data.figures.window_short and data.window_s:
        return fmt_part_of_window(covered, data.window_s)  # short: after a restart, or just started
    return fmt_duration(covered)


def note_rows(data: CardData) -> list[str]:
    """Why figures are unknown, partial or bounds: one line per reason, figures sharing it grouped."""
    row = k_in_effect_row(data.figures, data.adaptive_steps)
    if row is None or row[2] is None:
        return note_lines(data.figures.notes)
    return note_lines({**data.figures.notes, row[0]: row[2]})


FULL_ROWS = 2  # the last rows of `figure_rows` take a full row each


def figure_rows(data: CardData) -> list[tuple[str, str]]:
    """(label, text) of every figure; per-position bars and the threshold last (a full row each)."""
    rows = [("status", data.status_short()), ("window", _window(data))]
    rows += [
        (word.label, data.text(key)) for key, word in FIGURES.items() if key != "per_position_acceptance"
    ]
    if (k_row := k_in_effect_row(data.figures, data.adaptive_steps)) is not None:  # from figures or config
        rows.append(k_row[:2])
    rows.append((FIGURES["per_position_acceptance"].label, data.text("per_position_acceptance")))
    source = f" ({data.threshold_source})" if data.threshold_source else ""
    rows.append(("threshold", fmt_rate(data.threshold) + source))
    return rows


class FigureTable(Widget):
    DEFAULT_CSS = "FigureTable { width: 46; height: 100%; padding: 0 1; }"

    def __init__(self, data: CardData, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.data = data

    def set_data(self, data: CardData) -> None:
        self.data = data
        self.refresh()

    def render(self) -> Content:
        width = max(10, self.content_size.width)
        rows = figure_rows(self.data)
        single, pairs = rows[-FULL_ROWS:], rows[:-FULL_ROWS]
        label_widths = [max(len(label) for label, _ in pairs[column::2]) + 1 for column in (0, 1)]
        value_widths = [max(len(value) for _, value in pairs[column::2]) for column in (0, 1)]
        half = max(1, (width - 1) // 2)
        # Two figures a row when both columns fit whole, else one a row: a figure is never cut ("< 100 m").
        per_row = 2 if all(lw + vw <= half for lw, vw in zip(label_widths, value_widths, strict=True)) else 1
        if per_row == 1:
            label_widths = [max(label_widths)] * 2
        lines: list[Content] = []
        for index in range(0, len(pairs), per_row):
            cells = []
            for column, (label, value) in enumerate(pairs[index : index + per_row]):
                cell = Content.assemble(
                    (label.ljust(label_widths[column]), "$text-muted"),
                    (value, "$text-muted" if value == UNKNOWN else "bold"),
                )
                cells.append(cell.pad_right(max(0, half - cell.cell_length)) if per_row == 2 else cell)
            lines.append(Content(" ").join(cells))
        for label, value in single:  # wrapped whole after the label when it is longer than the row
            for index, part in enumerate(wrap_whole(value, max(1, width - label_widths[0]), "", "") or [""]):
                lines.append(
                    Content.assemble(
                        ((label if index == 0 else "").ljust(label_widths[0]), "$text-muted"),
                        (part, "$text-muted" if value == UNKNOWN else "bold"),
                    )
                )
        height = self.content_size.height or len(lines) + 99  # not laid out yet: room for all
        advice = self.data.advice
        if advice is not None and self.data.status == "up":
            for part in advice_lines(advice, width, height - len(lines)):
                lines.append(Content.styled(part, "$warning" if advice.better_k else "$text"))
        room = height - len(lines)
        # notes quote the server (series, labels) or a recording
        notes = [wrap_whole(safe_line(note), width, "* ", "  ") for note in note_rows(self.data)]
        if sum(map(len, notes)) > room:  # whole notes only: those that fit, and how many did not
            budget, shown = room - 1, []
            for wrapped in notes:
                if len(wrapped) <= budget:
                    shown.append(wrapped)
                    budget -= len(wrapped)
            hidden = len(notes) - len(shown)
            notes = [*shown, [f"* {hidden} more note{'s' if hidden > 1 else ''} in a taller window"]]
        lines += [Content.styled(text, "$warning") for wrapped in notes for text in wrapped]
        return Content("\n").join(lines)


def advice_lines(advice: Advice, width: int, room: int) -> list[str]:
    """The advice wrapped whole in `room` lines: with its basis when that fits."""
    line = safe_line(advice.line())
    texts = [f"{line} ({safe_line(advice.basis)})", line] if advice.basis else [line]
    for text in texts:
        wrapped = wrap_whole(text, width, "advice ", "  ")
        if len(wrapped) <= room:
            return wrapped
    return [fit_words(f"advice {line}", width)]


_FIGURE_SPACE = re.compile(r"(\d) (ms|s|min|h|d|%|W|GiB|MHz|°C)\b")


def wrap_whole(text: str, width: int, first: str, rest: str) -> list[str]:
    """`text` wrapped to `width`, never between a number and its unit ("(10" / "s): at least 10 s")."""
    glued = _FIGURE_SPACE.sub(lambda match: f"{match.group(1)}\u00a0{match.group(2)}", text)
    lines = textwrap.wrap(glued, width=width, initial_indent=first, subsequent_indent=rest)
    return [line.replace("\u00a0", " ") for line in lines]
