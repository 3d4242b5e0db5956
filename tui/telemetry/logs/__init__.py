"""Server log lines -> typed events (`stats`, `spec_decode`, `error`) for vLLM, SGLang and llama.cpp."""

from tui.telemetry.logs.dispatch import LogParser, parse_events, parse_line

__all__ = ["LogParser", "parse_events", "parse_line"]
