"""The parser hands out the same Sample again for a line it has seen; the answers never change."""

from __future__ import annotations

import math

import pytest
from metrics_test_server import sample_body

from tui.telemetry import prometheus
from tui.telemetry.prometheus import MetricsFormatError, Sample, parse_metrics_text


def _uncached(text: str, monkeypatch: pytest.MonkeyPatch) -> list[Sample]:
    with monkeypatch.context() as patch:
        patch.setattr(prometheus, "_LINE_CACHE", {})
        patch.setattr(prometheus, "_OLD_LINE_CACHE", {})
        patch.setattr(prometheus, "_HEAD_CACHE", {})
        patch.setattr(prometheus, "_LABEL_CACHE", {})
        return parse_metrics_text(text)


def _same(first: list[Sample], second: list[Sample]) -> bool:
    return len(first) == len(second) and all(
        (a.name, dict(a.labels)) == (b.name, dict(b.labels))
        and (a.value == b.value or (math.isnan(a.value) and math.isnan(b.value)))
        for a, b in zip(first, second, strict=True)
    )


@pytest.mark.parametrize("backend", ["vllm", "sglang", "llamacpp"])
def test_a_page_parsed_again_gives_the_same_samples(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("metrics_t0.txt", "metrics_t1.txt", "metrics_t0.txt"):
        text = sample_body(backend, name).decode()
        first = parse_metrics_text(text)
        again = parse_metrics_text(text)
        assert _same(first, _uncached(text, monkeypatch))
        assert _same(again, first)
        lines = [line for line in text.replace("\r\n", "\n").split("\n") if line and line[0] != "#"]
        short = [len(line) <= prometheus._MAX_CACHED_LINE for line in lines]
        assert len(short) == len(first)
        # Reused, not rebuilt; only very long lines (vLLM's cache_config_info) are parsed again.
        assert [a is b for a, b in zip(first, again, strict=True)] == short


def test_a_changed_value_is_read_afresh() -> None:
    assert [s.value for s in parse_metrics_text('x_total{a="1"} 1\n')] == [1.0]
    assert [s.value for s in parse_metrics_text('x_total{a="1"} 2\n')] == [2.0]
    assert [s.value for s in parse_metrics_text('x_total{a="1"} 1\n')] == [1.0]


def test_a_bad_line_still_fails_after_good_ones_with_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    parse_metrics_text('y_total{a="1"} 3\n')
    with pytest.raises(MetricsFormatError, match="line 2: expected a number"):
        parse_metrics_text('y_total{a="1"} 3\ny_total{a="1"} three\n')


def test_generations_turn_over_and_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prometheus, "_LINE_CACHE_MAX", 8)
    monkeypatch.setattr(prometheus, "_LINE_CACHE", {})
    monkeypatch.setattr(prometheus, "_OLD_LINE_CACHE", {})
    stable = "".join(f'stable{{i="{i}"}} {i}\n' for i in range(4))
    for step in range(50):
        text = stable + "".join(f'moving{{i="{i}"}} {step * 10 + i}\n' for i in range(3))
        samples = parse_metrics_text(text)
        assert [s.value for s in samples] == [0, 1, 2, 3, step * 10, step * 10 + 1, step * 10 + 2]
        assert len(prometheus._LINE_CACHE) <= 8 and len(prometheus._OLD_LINE_CACHE) <= 8


def test_very_long_lines_are_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prometheus, "_LINE_CACHE", {})
    monkeypatch.setattr(prometheus, "_OLD_LINE_CACHE", {})
    label = "v" * 2000
    samples = parse_metrics_text(f'long{{a="{label}"}} 1\nshort 2\n')
    assert [s.value for s in samples] == [1.0, 2.0]
    assert list(prometheus._LINE_CACHE) == ["short 2"]
