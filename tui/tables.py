"""One table model for every report (bench, tune, snapshot): columns and rows of cells, the figures among
them in tui/format.py's words, rendered as aligned text, Markdown or CSV; and the one JSON renderer."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tui.sanitize import json_safe, safe_line


@dataclass(frozen=True)
class Table:
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]

    @classmethod
    def of_records(cls, columns: Sequence[str], records: Iterable[Mapping[str, Any]]) -> Table:
        """A table of records by column name; a column a record lacks is blank."""
        return cls(columns, [tuple(record.get(column) for column in columns) for record in records])

    def text(
        self, widths: Sequence[int | None] | None = None, *, left: Collection[int] = (0,), gap: str = ""
    ) -> list[str]:
        """Lines of cells padded to their columns' widths, left-aligned in `left`, `gap` between columns."""
        lines = [[_text(cell) for cell in row] for row in [self.columns, *self.rows]]
        sizes = [
            max(len(line[index]) for line in lines) if size is None else size
            for index, size in enumerate(widths or [None] * len(self.columns))
        ]
        return [
            gap.join(
                cell.ljust(size) if index in left else cell.rjust(size)
                for index, (cell, size) in enumerate(zip(line, sizes, strict=True))
            ).rstrip()
            for line in lines
        ]

    def markdown(self) -> list[str]:
        """A Markdown table, every cell escaped (a `|` or a line break in a cell would break the table)."""
        return [
            _markdown_row(self.columns),
            "| " + " | ".join("---" for _ in self.columns) + " |",
            *(_markdown_row(row) for row in self.rows),
        ]

    def csv(self) -> str:
        """CSV with a header row; an unknown figure (None) is a blank cell, text is one safe line."""
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(self.columns)
        for row in self.rows:
            writer.writerow(
                ["" if cell is None else safe_line(cell) if isinstance(cell, str) else cell for cell in row]
            )
        return out.getvalue()


def markdown_escape(text: str) -> str:
    return text.replace("`", "'").replace("\n", "⏎").replace("|", "\\|")


def render_json(payload: Any, *, indent: int | None = 1) -> str:
    return json_safe(json.dumps(payload, ensure_ascii=False, indent=indent, default=str))


def _text(cell: Any) -> str:
    return "" if cell is None else str(cell)


def _markdown_row(cells: Sequence[Any]) -> str:
    return "| " + " | ".join(markdown_escape(_text(cell)) for cell in cells) + " |"
