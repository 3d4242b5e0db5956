"""ScrapeWindow sums its segments once per change, column by column, to the very same bits as one by one."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from metrics_test_server import sample_body, scrape, vllm_page

from tui.telemetry.backends.base import Delta
from tui.telemetry.scraper import Scrape
from tui.telemetry.window import ScrapeWindow, _Segment, _sum_segments


def _one_by_one(segments: list[_Segment]) -> Delta:
    """The plain definition: every key added oldest segment first, starting from 0.0."""
    delta = Delta(seconds=0.0)
    for segment in segments:
        delta.seconds += segment.seconds
        for key, value in segment.counters.items():
            delta.counters[key] = delta.counters.get(key, 0.0) + value
        for key, value in segment.extras.items():
            delta.extras[key] = delta.extras.get(key, 0.0) + value
    return delta


def _bits(values: dict) -> list[tuple[object, str]]:
    return [(key, repr(value)) for key, value in values.items()]  # order and exact bits (repr round-trips)


_KEYS = [("q", (("engine", str(i)),), None) for i in range(4)] + [("b", (), 0.5)]
_VALUES = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.lists(_VALUES, min_size=len(_KEYS), max_size=len(_KEYS)), min_size=1, max_size=12),
    drop=st.lists(st.integers(min_value=0, max_value=len(_KEYS) - 1), max_size=3),
    seconds=st.floats(min_value=0.01, max_value=5.0),
)
def test_column_sums_are_bit_identical(rows: list[list[float]], drop: list[int], seconds: float) -> None:
    same_keys = [_Segment(seconds, dict(zip(_KEYS, row, strict=True)), {"x": row[0]}) for row in rows]
    # Some segments missing series (a new baseline, a series appearing late): the general path.
    mixed = [
        _Segment(seconds, {key: row[i] for i, key in enumerate(_KEYS) if i not in drop[:n]}, {})
        for n, row in enumerate(rows)
    ]
    for segments in (same_keys, mixed):
        fast, plain = _sum_segments(segments), _one_by_one(segments)
        assert fast is not None
        assert _bits(fast.counters) == _bits(plain.counters)
        assert _bits(fast.extras) == _bits(plain.extras)
        assert repr(fast.seconds) == repr(plain.seconds)


def test_figures_follow_every_add_even_when_read_in_between() -> None:
    scrapes = [scrape(vllm_page(10.0 * step * step, running=step), float(step)) for step in range(8)]
    scrapes.insert(4, scrape(vllm_page(1.0, running=9), 3.5))  # a restart: a counter went down
    read_often = ScrapeWindow(window_s=4.0)
    for count, reading in enumerate(scrapes, start=1):
        read_often.add(reading)
        read_often.add(Scrape(reading.time, reading.monotonic, None, "down", None))  # ignored
        read_once = ScrapeWindow(window_s=4.0)
        for earlier in scrapes[:count]:
            read_once.add(earlier)
        assert read_often.figures() == read_often.figures() == read_once.figures()
        assert read_often.figures_by_model() == read_once.figures_by_model() == {}


def test_per_model_figures_still_come_from_the_shared_sums() -> None:
    def two_models(step: int) -> str:
        return "".join(
            f'vllm:generation_tokens_total{{engine="0",model_name="{model}"}} {step * (index + 1) * 7.5}\n'
            for index, model in enumerate(("a", "b"))
        )

    window = ScrapeWindow(window_s=60.0)
    for step in range(5):
        window.add(scrape(two_models(step), float(step)))
    by_model = window.figures_by_model()
    assert set(by_model) == {"a", "b"}
    assert math.isclose(by_model["a"].generation_tokens_per_s or 0, 7.5)
    assert math.isclose(by_model["b"].generation_tokens_per_s or 0, 15.0)
    assert math.isclose(window.figures().generation_tokens_per_s or 0, 22.5)


def test_sample_pages_give_the_same_figures_as_the_plain_sums() -> None:
    texts = [sample_body("vllm", name).decode() for name in ("metrics_t0.txt", "metrics_t1.txt")]
    window = ScrapeWindow(window_s=60.0)
    for step, text in enumerate(texts):
        window.add(scrape(text, float(step * 10)))
    segments = [entry.segment for entry in list(window._entries)[1:] if entry.segment is not None]
    backend = window._backend
    assert backend is not None
    plain = backend.derive(_one_by_one(segments), window._entries[-1].page)
    figures = window.figures()
    assert figures.model_copy(update={"notes": plain.notes}) == plain.model_copy(
        update={"covered_s": figures.covered_s, "window_short": figures.window_short}
    )
