"""An endpoint's parser hands out the same Sample again for a line it has seen; the answers never change;
its caches are its own (one per endpoint), never shared through module globals."""

from __future__ import annotations

import math

import pytest
from metrics_test_server import sample_body

from tui.telemetry import prometheus
from tui.telemetry.prometheus import MetricsFormatError, MetricsParser, Sample, parse_metrics_text


def _uncached(text: str) -> list[Sample]:
    return parse_metrics_text(text)  # no parser: nothing remembered


def _same(first: list[Sample], second: list[Sample]) -> bool:
    return len(first) == len(second) and all(
        (a.name, dict(a.labels)) == (b.name, dict(b.labels))
        and (a.value == b.value or (math.isnan(a.value) and math.isnan(b.value)))
        for a, b in zip(first, second, strict=True)
    )


@pytest.mark.parametrize("backend", ["vllm", "sglang", "llamacpp"])
def test_a_page_parsed_again_gives_the_same_samples(backend: str) -> None:
    parser = MetricsParser()
    for name in ("metrics_t0.txt", "metrics_t1.txt", "metrics_t0.txt"):
        text = sample_body(backend, name).decode()
        first = parser.parse(text)
        again = parser.parse(text)
        assert _same(first, _uncached(text))
        assert _same(again, first)
        lines = [line for line in text.replace("\r\n", "\n").split("\n") if line and line[0] != "#"]
        short = [len(line) <= prometheus._MAX_CACHED_LINE for line in lines]
        assert len(short) == len(first)
        # Reused, not rebuilt; only very long lines (vLLM's cache_config_info) are parsed again.
        assert [a is b for a, b in zip(first, again, strict=True)] == short


def test_a_changed_value_is_read_afresh() -> None:
    parser = MetricsParser()
    assert [s.value for s in parser.parse('x_total{a="1"} 1\n')] == [1.0]
    assert [s.value for s in parser.parse('x_total{a="1"} 2\n')] == [2.0]
    assert [s.value for s in parser.parse('x_total{a="1"} 1\n')] == [1.0]


def test_a_bad_line_still_fails_after_good_ones_with_its_name() -> None:
    parser = MetricsParser()
    parser.parse('y_total{a="1"} 3\n')
    with pytest.raises(MetricsFormatError, match="line 2: expected a number"):
        parser.parse('y_total{a="1"} 3\ny_total{a="1"} three\n')


def test_about_one_page_is_kept() -> None:
    """However long an endpoint is watched, its parser holds about a page of lines, not every value it saw."""
    parser = MetricsParser()
    stable = "".join(f'stable{{i="{i}"}} {i}\n' for i in range(4))
    for step in range(50):
        text = stable + "".join(f'moving{{i="{i}"}} {step * 10 + i}\n' for i in range(3))
        samples = parser.parse(text)
        assert [s.value for s in samples] == [0, 1, 2, 3, step * 10, step * 10 + 1, step * 10 + 2]
        assert len(parser._lines) <= 2 * len(samples) + prometheus._SPARE_LINES
    assert set(text.splitlines()) <= set(parser._lines)


def test_a_page_that_fails_keeps_the_previous_lines() -> None:
    parser = MetricsParser()
    first = parser.parse("a 1\nb 2\n")
    with pytest.raises(MetricsFormatError):
        parser.parse("a 1\nb two\n")
    assert [a is b for a, b in zip(first, parser.parse("a 1\nb 2\n"), strict=True)] == [True, True]


def test_very_long_lines_are_not_kept() -> None:
    parser = MetricsParser()
    label = "v" * 2000
    samples = parser.parse(f'long{{a="{label}"}} 1\nshort 2\n')
    assert [s.value for s in samples] == [1.0, 2.0]
    assert list(parser._lines) == ["short 2"]


def test_each_endpoint_has_its_own_caches() -> None:
    """A second endpoint's pages neither evict nor share the first one's entries (no module globals)."""
    first, second = MetricsParser(), MetricsParser()
    vllm_page = sample_body("vllm", "metrics_t0.txt").decode()
    before = first.parse(vllm_page)
    for name in ("metrics_t0.txt", "metrics_t1.txt"):
        second.parse(sample_body("sglang", name).decode())
    assert all(a is b for a, b in zip(before, first.parse(vllm_page), strict=True) if len(a.series) < 400)
    assert not any(a is b for a, b in zip(before, second.parse(vllm_page), strict=True))
    assert not [name for name in vars(prometheus) if name.endswith("_CACHE")]  # no process-global cache
