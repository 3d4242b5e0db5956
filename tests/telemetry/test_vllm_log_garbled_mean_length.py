"""A garbled current-format vLLM SpecDecoding line with "Mean acceptance length: 0.50": the
old-format heuristic (the mean length excluded the bonus token until 2025-05-09) made it 1.50; the current
format always counts the bonus token, so the event is impossible: dropped and counted as unread."""

from __future__ import annotations

from tui.telemetry.logs import LogParser

GARBLED = (
    "(APIServer pid=1) INFO 08-14 11:31:25 [metrics.py:120] SpecDecoding metrics: "
    "Mean acceptance length: 0.50, "
    "Accepted throughput: 187.08 tokens/s, Drafted throughput: 187.18 tokens/s, Accepted: 1871 tokens, "
    "Drafted: 1872 tokens, Per-position acceptance rate: 0.300, 0.200, Avg Draft acceptance rate: 99.9%"
)
OLD_FORMAT = (
    "INFO 04-30 10:00:00 [metrics.py:80] SpecDecoding metrics: Draft acceptance rate: 25.0%, Mean "
    "acceptance length: 0.50, Accepted: 50 tokens, Drafted: 200 tokens, "
    "Per-position acceptance rate: 0.300, 0.200"
)


def test_a_current_format_mean_length_below_one_is_dropped_and_counted() -> None:
    parser = LogParser(backend="vllm")
    events = parser.feed(GARBLED)
    assert [event for event in events if event.kind == "spec_decode"] == []
    assert parser.unread == 1


def test_the_old_format_without_the_bonus_token_is_still_read() -> None:
    parser = LogParser(backend="vllm")
    (event,) = [event for event in parser.feed(OLD_FORMAT) if event.kind == "spec_decode"]
    assert event.mean_acceptance_length == 1.5 and parser.unread == 0
