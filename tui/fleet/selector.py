"""`--match`: PromQL label matchers that select the fleet's instances, e.g. `{job="vllm",env=~"prod.*"}`.

Only label matchers are accepted (no metric name, no functions), so the text can be spliced into
every selector spectop builds without changing the meaning of a query.
"""

from __future__ import annotations

import re

_STRING = r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\''
_MATCHER = re.compile(rf"\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*({_STRING})\s*")


def parse_matchers(text: str) -> str:
    """The matchers of `text` normalised to `a="x",b=~"y"` (no braces); ValueError if not matchers."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    body = body.strip().rstrip(",")
    if not body:
        return ""
    parts: list[str] = []
    position = 0
    while position < len(body):
        found = _MATCHER.match(body, position)
        if found is None:
            raise ValueError(
                f'expected label matchers such as {{job="vllm",env=~"prod.*"}}, got {text!r} '
                f"(near {body[position : position + 20]!r})"
            )
        name, operator, value = found.groups()
        if name == "__name__":
            raise ValueError(f"{text!r}: select instances by their labels, not by metric name")
        parts.append(f"{name}{operator}{value}")
        position = found.end()
        if position < len(body):
            if body[position] != ",":
                raise ValueError(f"{text!r}: matchers must be separated by commas")
            position += 1
    return ",".join(parts)


def selector(name: str, matchers: str, *extra: str) -> str:
    """`name{extra..., matchers}`: a series selector with the fleet's matchers added."""
    inner = ",".join(part for part in (*extra, matchers) if part)
    return f"{name}{{{inner}}}" if inner else name
