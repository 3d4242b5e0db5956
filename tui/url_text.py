"""A URL in a narrow column: what goes first is the scheme, then the path, then the host's left end;
the port and the host's right end (the part that tells servers apart) stay to the last."""

from __future__ import annotations

from urllib.parse import urlsplit

ELLIPSIS = "…"


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
    """`text` in at most `width` cells, its left end cut (`…` says so): file names and hosts end in
    the part that tells them apart."""
    if len(text) <= width:
        return text
    return ELLIPSIS + text[len(text) - width + 1 :] if width > 1 else ELLIPSIS[:width]
