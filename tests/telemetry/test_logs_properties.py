# ruff: noqa: E501  (real log lines)
"""Property tests: no input makes the log parsers raise (arbitrary text or bytes, mangled real lines)."""

from __future__ import annotations

import warnings
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui.telemetry.logs import LogParser, parse_events, parse_line

SAMPLES = Path(__file__).parent / "log_samples"
REAL_LINES = [
    line
    for name in ("vllm", "sglang", "llamacpp")
    for line in (SAMPLES / f"{name}.server.log").read_text(encoding="utf-8").splitlines()
] + [
    "INFO 10-16 19:05:47 metrics.py:367] Speculative metrics: Draft acceptance rate: 0.642, System efficiency: "
    "0.598, Number of speculative tokens: 3, Number of accepted tokens: 8547, Number of draft tokens: 13311, "
    "Number of emitted tokens: 10616.",
    "0.00.701.728 I spec common_specu: statistics     draft-simple: #calls(b,g,a) =    1     21     21, #gen "
    "drafts =     21, #acc drafts =    17, #gen tokens =    162, #acc tokens =    42, #mean acc len = 3.00, "
    "#acc rate/pos = (0.810, 0.476), dur(b,g,a) = 0.029, 44.037, 0.017 ms",
    "0.00.701.695 I slot print_timing: id  1 | task 2 |      acc per pos = (0.810, 0.476, 0.286)",
    "(EngineCore pid=1) ERROR 05-01 14:39:06 [core.py:1131] Traceback (most recent call last):",
    "[gpu_id=0] #running-req: 1, #token: 100, token usage: 0.01, gen throughput (token/s): 50.00, #queue-req: 0",
    "INFO 10-16 19:06:01 metrics.py:361] Prefix cache hit rate: GPU: 94.35%, CPU: 0.00%",
]
INTERESTING_TEXT = st.sampled_from(
    [
        ": ",
        ", ",
        "%",
        "nan",
        "inf",
        "-1",
        "1e309",
        "(",
        ")",
        "[",
        "]",
        "\r",
        "\n",
        "\x1b[0m",
        " batch",
        "[1]",
        "Traceback (most recent call last):",
        "  File",
        "draft acceptance = ",
        "acc per pos = (",
        "#acc tokens = ",
        "Avg prompt throughput: ",
        "SpecDecoding metrics: ",
        "Per-position acceptance rate: ",
        "\x00",
        "\ufffd",
    ]
)


def _assert_events_valid(events: list) -> None:  # type: ignore[type-arg]
    for event in events:
        assert event.kind in ("stats", "spec_decode", "error")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a serializer warning means a field holds the wrong type
            event.model_dump_json()


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_parse_line_never_raises_on_text(text: str) -> None:
    event = parse_line(text)
    _assert_events_valid([] if event is None else [event])


@settings(max_examples=400, deadline=None)
@given(st.binary())
def test_parse_line_never_raises_on_bytes(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    _assert_events_valid(parse_events(text))
    _assert_events_valid(parse_events(text, backend="sglang"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.text(max_size=200),
            st.binary(max_size=200).map(lambda data: data.decode("utf-8", errors="replace")),
        ),
        max_size=40,
    )
)
def test_log_parser_feed_never_raises(lines: list[str]) -> None:
    parser = LogParser()
    for line in lines:
        _assert_events_valid(parser.feed(line))
    _assert_events_valid(parser.flush())


@st.composite
def mangled_real_line(draw: st.DrawFn) -> str:
    line = draw(st.sampled_from(REAL_LINES))
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(line)))
        end = draw(st.integers(start, min(len(line), start + 12)))
        insert = draw(st.one_of(INTERESTING_TEXT, st.text(max_size=6)))
        line = line[:start] + insert + line[end:]
    return line


@settings(max_examples=600, deadline=None)
@given(st.lists(mangled_real_line(), min_size=1, max_size=8))
def test_mangled_real_lines_never_raise(lines: list[str]) -> None:
    parser = LogParser()
    for line in lines:
        _assert_events_valid(parse_events(line))
        _assert_events_valid(parser.feed(line))
    _assert_events_valid(parser.flush())
