"""The fleet's series selectors, with the label matchers of `--match` (the rule: `tui.validators`)."""

from __future__ import annotations


def selector(name: str, matchers: str, *extra: str) -> str:
    """`name{extra..., matchers}`: a series selector with the fleet's matchers added."""
    inner = ",".join(part for part in (*extra, matchers) if part)
    return f"{name}{{{inner}}}" if inner else name
