"""Text fitted to a width, shown whole or shortened where it says least; never cut mid-word or mid-number
(a URL keeps its host's right end and port, a name its end, words their first whole ones)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

ELLIPSIS = "…"
# A word `fit_words` does not end on: a figure ("50%", "1.02x", "<", "(10") or a separator ("·", "—").
_NOT_LAST = re.compile(r"^[<>~(+\-]?\d|^[^\w]*$")
HEADER_MARGINS = 18  # the header's icon and clock columns, either side of the title


def subtitle_room(width: int, title: str) -> int:
    """The columns a header `width` wide leaves for the subtitle after `title` and " — "."""
    return width - HEADER_MARGINS - len(title) - len(" — ")


def short_url(url: str, width: int) -> str:
    """`url` in at most `width` cells: whole when it fits, else without `http://` / `https://`, else
    host:port alone, else host:port cut from the left (`…ple.com:8000`). Call with safe text."""
    if width < 1:
        return ""
    if len(url) <= width:
        return url
    rest = url.split("://", 1)[-1]
    if len(rest) <= width:
        return rest
    try:
        host_port = urlsplit(url if "://" in url else f"//{url}").netloc.rsplit("@", 1)[-1] or rest
    except ValueError:  # an unbalanced [ in an IPv6 host: cut the text as it is
        host_port = rest
    return cut_left(host_port, width)


def cut_left(text: str, width: int) -> str:
    """`text` in at most `width` cells, its left end cut (`…`): names end in what tells them apart."""
    if len(text) <= width:
        return text
    return ELLIPSIS + text[len(text) - width + 1 :] if width > 1 else ELLIPSIS[:width]


def fit_words(text: str, width: int) -> str:
    """`text` in at most `width` cells: whole when it fits, else its first whole words and `…` (a
    figure or a separator before the `…` goes too); `…` alone when not even one word fits."""
    if len(text) <= width:
        return text
    if width < 1:
        return ""
    words = text[: width - 1].split(" ")
    after = text[width - 1 : width + 1]
    if not (after[:1] == " " or (after[:1] in ";:,." and after[1:] in ("", " "))):
        words.pop()  # cut mid-word (a word is whole before a space, or before its ";" "," ":" ".")
    while words and (not words[-1].rstrip(";:,.") or _NOT_LAST.match(words[-1])):
        words.pop()
    if words:
        words[-1] = words[-1].rstrip(";:,.")  # "slows…", not "slows;…"
    return " ".join(words) + ELLIPSIS


def fit_items(items: Sequence[str], width: int, separator: str = " · ") -> list[str]:
    """The first of `items` that fit in `width` joined by `separator`; one too long cut by whole words."""
    kept: list[str] = []
    used = 0
    for item in items:
        size = len(item) + (len(separator) if kept else 0)
        if used + size > width:
            break
        kept.append(item)
        used += size
    return [fit_words(items[0], width)] if not kept and items else kept
