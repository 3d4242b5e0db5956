"""Server log lines -> typed events (`stats`, `spec_decode`, `error`) for vLLM, SGLang and llama.cpp.

`parse_line` is stateless and returns one event per line; `parse_events` returns all of them (a
SGLang `Decode batch` line with `accept len` is both a stats and a spec_decode event);
`LogParser` is the stateful wrapper a tailer feeds: it remembers the backend and groups
tracebacks. None of them raises on any input (the property tests check it); a bug that does is
counted, not hidden, where lines from a file enter the parser (`LogParser.feed_guarded`).
"""

from tui.telemetry.logs.dispatch import parse_events, parse_line
from tui.telemetry.logs.parser import LogParser

__all__ = ["LogParser", "parse_events", "parse_line"]
