# ruff: noqa: E501  (real log lines)
"""What `LogParser` remembers between lines: the DP engine of vLLM's stats line for the SpecDecoding line after it."""

from __future__ import annotations

from tui.telemetry.logs import LogParser, parse_line

STATS_2 = "(APIServer pid=95669) INFO 07-20 18:11:49 [loggers.py:271] Engine 002: Avg prompt throughput: 0.1 tokens/s, Avg generation throughput: 43.3 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 10.1%, Prefix cache hit rate: 0.0%, External prefix cache hit rate: 100.0%"
STATS_3 = STATS_2.replace("Engine 002", "Engine 003")
SPEC = "(APIServer pid=95669) INFO 07-20 18:11:49 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.87, Accepted throughput: 9.40 tokens/s, Drafted throughput: 15.10 tokens/s, Accepted: 282 tokens, Drafted: 453 tokens, Per-position acceptance rate: 0.821, 0.609, 0.437, Avg Draft acceptance rate: 62.3%"


def _engines(lines: list[str]) -> list[tuple[str, str | None]]:
    parser = LogParser()
    return [(event.kind, getattr(event, "engine", None)) for line in lines for event in parser.feed(line)]


def test_spec_line_takes_the_engine_of_the_stats_line_before_it() -> None:
    assert _engines([STATS_2, SPEC, STATS_3, SPEC]) == [
        ("stats", "2"),
        ("spec_decode", "2"),
        ("stats", "3"),
        ("spec_decode", "3"),
    ]


def test_spec_line_without_its_stats_line_has_no_engine() -> None:
    assert _engines([SPEC]) == [("spec_decode", None)]
    assert _engines([STATS_2, SPEC, SPEC]) == [("stats", "2"), ("spec_decode", "2"), ("spec_decode", None)]
    later = SPEC.replace("18:11:49", "18:11:59")
    assert _engines([STATS_2, later]) == [("stats", "2"), ("spec_decode", None)]


def test_stateless_parse_line_does_not_guess_the_engine() -> None:
    event = parse_line(SPEC)
    assert event is not None and event.kind == "spec_decode" and event.engine is None
