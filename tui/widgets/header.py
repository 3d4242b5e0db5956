"""The screens' header line (Textual's `Header`): the title and subtitle share the columns between its icon
and its clock, and are cut there with an ellipsis; a screen gives it a subtitle that fits whole."""

from __future__ import annotations

HEADER_MARGINS = 18  # the header's icon and clock columns, either side of the title


def subtitle_room(width: int, title: str) -> int:
    """The columns a header `width` wide leaves for the subtitle after `title` and " — "."""
    return width - HEADER_MARGINS - len(title) - len(" — ")
