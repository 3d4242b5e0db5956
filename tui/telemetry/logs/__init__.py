"""Server log lines -> typed events (`stats`, `spec_decode`, `error`) for vLLM, SGLang and llama.cpp.

None of the parsers raises on any input (the property tests check it); a bug that does is counted, not
hidden, where lines from a file enter (`LogParser.feed_guarded`)."""

from tui.telemetry.logs.dispatch import parse_events, parse_line
from tui.telemetry.logs.parser import LogParser

__all__ = ["LogParser", "parse_events", "parse_line"]
