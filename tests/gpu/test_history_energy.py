"""Energy over an interval (counter or integrated power), per token, and the history window."""

from __future__ import annotations

import pytest

from tui.gpu.history import GpuHistory, energy_per_token, energy_ratio_text, tokens_per_joule
from tui.gpu.models import GpuReading, GpuSample


def _gpu(index: int = 0, **figures: float | None) -> GpuSample:
    return GpuSample(index=index, uuid=f"GPU-{index}", **figures)  # type: ignore[arg-type]


def _history(points: list[tuple[float, dict[str, float | None]]], index: int = 0) -> GpuHistory:
    history = GpuHistory()
    for time, figures in points:
        history.add_sample(time, _gpu(index, **figures))
    return history


def test_counter_energy_is_read_at_the_interval_edges() -> None:
    history = _history([(0, {"energy_j": 1000.0}), (10, {"energy_j": 1500.0}), (20, {"energy_j": 2600.0})])
    figure = history.energy_between(5, 15, max_gap_s=10)
    assert figure is not None and figure.method == "counter"
    # Halfway through each reading gap: half of 500 J plus half of 1100 J.
    assert figure.joules == pytest.approx(500 / 2 + 1100 / 2)
    assert figure.seconds == 10 and figure.mean_power_w == pytest.approx(80.0)
    assert history.energy_between(5, 15) is None  # 10 s between readings: the edges would be guesses
    assert history.energy_between(0, 20) is not None  # edges on readings: the counter is exact


def test_sparse_power_readings_are_not_integrated() -> None:
    history = _history([(0, {"power_w": 100.0}), (4, {"power_w": 100.0}), (20, {"power_w": 600.0})])
    assert history.energy_between(0, 4) is not None
    assert history.energy_between(0, 20) is None  # 16 s without a power reading


def test_power_is_integrated_without_a_counter() -> None:
    history = _history([(0, {"power_w": 100.0}), (10, {"power_w": 300.0})])
    figure = history.energy_between(0, 10, max_gap_s=10)
    assert figure is not None and figure.method == "power"
    assert figure.joules == pytest.approx((100 + 300) / 2 * 10)  # a linear ramp: the trapezoid
    part = history.energy_between(5, 10, max_gap_s=10)  # power at 5 s is 200 W
    assert part is not None and part.joules == pytest.approx((200 + 300) / 2 * 5)


def test_a_counter_reset_falls_back_to_power() -> None:
    history = _history(
        [
            (0, {"energy_j": 5000.0, "power_w": 200.0}),
            (10, {"energy_j": 10.0, "power_w": 200.0}),  # driver reloaded
            (20, {"energy_j": 2010.0, "power_w": 200.0}),
        ]
    )
    figure = history.energy_between(0, 20, max_gap_s=10)
    assert figure is not None and figure.method == "power" and figure.joules == pytest.approx(4000.0)


def test_an_interval_the_readings_do_not_cover_has_no_energy() -> None:
    history = _history([(10, {"energy_j": 100.0}), (20, {"energy_j": 200.0})])
    assert history.energy_between(5, 15, max_gap_s=10) is None  # started before the first reading
    assert history.energy_between(15, 25, max_gap_s=10) is None  # ends after the last one
    assert history.energy_between(15, 15) is None
    assert GpuHistory().energy_between(0, 1) is None


def test_energy_of_several_gpus_is_summed_and_needs_all_of_them() -> None:
    history = GpuHistory()
    for time, (a, b) in [(0.0, (0.0, 0.0)), (10.0, (3000.0, 2000.0))]:
        gpus = (_gpu(0, energy_j=a), _gpu(1, energy_j=b))
        history.add(GpuReading("dcgm", time, time, gpus))
    both = history.energy_between(0, 10)
    assert both is not None and both.joules == pytest.approx(5000.0)
    only = history.energy_between(0, 10, keys=["GPU-1"])
    assert only is not None and only.joules == pytest.approx(2000.0)
    assert history.energy_between(0, 10, keys=["GPU-0", "GPU-9"]) is None  # a GPU without readings


def test_per_token_figures_and_the_verdict_text() -> None:
    assert energy_per_token(1200.0, 4000) == pytest.approx(0.3)
    assert tokens_per_joule(1200.0, 4000) == pytest.approx(4000 / 1200)
    assert energy_per_token(1200.0, 0) is None and energy_per_token(None, 10) is None
    assert tokens_per_joule(0.0, 10) is None and tokens_per_joule(None, 10) is None
    assert energy_ratio_text(0.18, 0.3) == "uses 0.60x the energy per token"
    assert energy_ratio_text(None, 0.3) is None and energy_ratio_text(0.2, 0.0) is None


def test_history_window_and_series() -> None:
    history = GpuHistory(history_s=60)
    for time in range(0, 200, 10):
        history.add_sample(float(time), _gpu(power_w=float(time), memory_used_bytes=1, memory_total_bytes=4))
    points = history.points("GPU-0")
    assert points[0][0] == 130.0 and points[-1][0] == 190.0  # older than 60 s dropped
    assert history.series("GPU-0", "memory_fraction", since=180) == [(180.0, 0.25), (190.0, 0.25)]
    assert history.series("GPU-0", "energy_j") == []  # unknown figures are gaps, not zeros
    history.add_sample(100.0, _gpu(power_w=1.0))  # out of order: ignored
    assert history.points("GPU-0") == points


def test_a_cached_exporter_sample_served_again_is_not_a_new_reading() -> None:
    history = GpuHistory()
    same = _gpu(energy_j=1000.0, power_w=300.0)
    history.add_sample(0.0, same, cached=True)
    history.add_sample(10.0, same, cached=True)  # dcgm-exporter between two DCGM collections
    history.add_sample(20.0, _gpu(energy_j=7000.0, power_w=300.0), cached=True)
    assert [time for time, _ in history.points("GPU-0")] == [0.0, 20.0]
    figure = history.energy_between(0.0, 20.0)
    assert figure is not None and figure.joules == pytest.approx(6000.0)
    live = GpuHistory()  # NVML reads the hardware each time: the same figures twice are two readings
    live.add_sample(0.0, same)
    live.add_sample(10.0, same)
    assert len(live.points("GPU-0")) == 2
