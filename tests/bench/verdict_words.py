"""A verdict's words after the client's own warning (a loaded machine may rightly flag the client)."""

from __future__ import annotations

import re

_CLIENT_FELL_BEHIND = re.compile(r"^UNRELIABLE \(the measuring client fell behind[^)]*\): ")


def verdict_body(verdict: str) -> str:
    return _CLIENT_FELL_BEHIND.sub("", verdict, count=1)
