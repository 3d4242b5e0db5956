"""Server log lines -> typed events (`stats`, `spec_decode`, `error`) for vLLM, SGLang and llama.cpp."""

from tui.telemetry.logs.dispatch import parse_events, parse_line
from tui.telemetry.logs.parser import LogParser

__all__ = ["LogParser", "parse_events", "parse_line"]
