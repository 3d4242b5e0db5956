"""A verdict's words after the client's own warning.

On a loaded machine the measuring client may rightly flag itself ("UNRELIABLE (the measuring client fell
behind …): "); what the comparison says after that must hold either way, and the flag is tested on its own
(test_client_check.py).
"""

from __future__ import annotations

import re

_CLIENT_FELL_BEHIND = re.compile(r"^UNRELIABLE \(the measuring client fell behind[^)]*\): ")


def verdict_body(verdict: str) -> str:
    return _CLIENT_FELL_BEHIND.sub("", verdict, count=1)
