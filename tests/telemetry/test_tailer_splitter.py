"""The tailer's line splitter: chunk boundaries never change the lines, memory stays bounded, NUL runs go."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tui.telemetry.tailer import LineSplitter


def _reference(data: bytes, max_line_bytes: int) -> list[str]:
    pieces = data.split(b"\n")
    tail = pieces.pop()
    lines = [piece[:max_line_bytes].removesuffix(b"\r").decode("utf-8", "replace") for piece in pieces]
    if tail:
        lines.append(tail[:max_line_bytes].removesuffix(b"\r").decode("utf-8", "replace"))
    return lines


@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"a", b"\n", b"\r", "é".encode(), b"\xff", b"xyz" * 7]), max_size=80).map(
        b"".join
    ),
    cuts=st.lists(st.integers(0, 600), max_size=12),
    max_line_bytes=st.integers(1, 40),
)
def test_any_chunking_gives_the_same_lines(data: bytes, cuts: list[int], max_line_bytes: int) -> None:
    splitter = LineSplitter(max_line_bytes)
    lines: list[str] = []
    start = 0
    for cut in [*sorted(cut for cut in cuts if cut <= len(data)), len(data)]:
        lines.extend(splitter.feed(data[start:cut]))
        start = cut
    tail = splitter.flush()
    if tail is not None:
        lines.append(tail)
    assert lines == _reference(data, max_line_bytes)


def test_line_splitter_bounds_memory_on_a_newline_free_stream() -> None:
    splitter = LineSplitter(max_line_bytes=64)
    emitted: list[str] = []
    for _ in range(1000):
        emitted.extend(splitter.feed(b"a" * 1000))
        assert len(splitter._partial) <= 65
    emitted.extend(splitter.feed(b"\nb\n"))
    assert emitted == ["a" * 64, "b"]
    assert splitter.flush() is None


def test_the_splitter_drops_nul_runs() -> None:
    splitter = LineSplitter(max_line_bytes=64)
    assert splitter.feed(b"\0" * 1000) == []
    assert splitter.feed(b"\0" * 1000 + b"line\n") == ["line"]
