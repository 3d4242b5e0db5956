"""One endpoint's ring buffers: what `add` keeps of a reading (gaps, bounds), and `tail`."""

from __future__ import annotations

from tui.telemetry.figures import Figures
from tui.telemetry.series import QUANTILE_SERIES, SERIES_NAMES, EndpointSeries


def test_add_keeps_every_series_and_gaps_for_an_unknown_reading_or_a_bound() -> None:
    series = EndpointSeries(8)
    known = Figures(
        generation_tokens_per_s=10.0,
        ttft_p50_s=0.2,
        ttft_p95_s=12.0,
        running=3.0,
        quantile_bounds={"ttft_p50_s": (0.1, 0.25), "ttft_p95_s": (10.0, None)},
    )
    series.add(1.0, known)
    series.add(2.0, None)
    assert list(series.times) == [1.0, 2.0] and list(series.up) == [True, False]
    assert series.values("generation_tokens_per_s") == [10.0, None]
    assert series.values("ttft_p50_s") == [0.2, None]  # inside a finite bucket: a value
    assert series.values("ttft_p95_s") == [None, None]  # above the last bucket: only a bound
    assert list(series.bounds["ttft_p95_s"]) == [(10.0, None), None]
    assert list(series.bounds["ttft_p50_s"]) == [None, None]
    for name in SERIES_NAMES:
        assert len(series.series[name]) == 2
    assert all(len(series.bounds[name]) == 2 for name in QUANTILE_SERIES)


def test_tail_is_the_newest_values_oldest_first() -> None:
    series = EndpointSeries(16)
    for step in range(20):  # the buffer keeps the newest 16
        series.add(float(step), Figures(generation_tokens_per_s=float(step)))
    name = "generation_tokens_per_s"
    assert series.tail(name, 3) == [17.0, 18.0, 19.0]
    assert series.tail(name, 16) == series.tail(name, 40) == [float(step) for step in range(4, 20)]
    assert series.tail(name, 0) == [] and series.tail(name, -2) == []
