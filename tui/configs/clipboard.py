"""OSC 52: ask the terminal (even over SSH) to put text on the local clipboard."""

from __future__ import annotations

import base64

# Terminals cap OSC 52 payloads (xterm ~100 kB); launch commands are far smaller.
MAX_OSC52_BYTES = 74_994


def osc52(text: str, *, tmux: bool = False) -> str:
    """The escape sequence that copies `text`; wrapped for tmux passthrough when asked."""
    payload = base64.b64encode(text.encode("utf-8")).decode("ascii")
    if len(payload) > MAX_OSC52_BYTES:
        raise ValueError(f"text too long for OSC 52 ({len(payload)} base64 bytes > {MAX_OSC52_BYTES})")
    sequence = f"\x1b]52;c;{payload}\x07"
    if tmux:
        return "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return sequence
