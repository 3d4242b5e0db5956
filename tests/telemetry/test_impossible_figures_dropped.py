"""Impossible figures from a bad page are dropped and counted with a note, never shown."""

from __future__ import annotations

import math

import pytest
from metrics_test_server import VLLM_LABELS, scrape, vllm_page

from tui.format import figure_text
from tui.telemetry.figures import Figures
from tui.telemetry.plausible_figures import drop_impossible
from tui.telemetry.window import ScrapeWindow


def test_a_counter_going_backwards_alone_is_an_inconsistent_page() -> None:
    window = ScrapeWindow(window_s=60.0)
    for second in range(5):
        generated = 1e6 + 5000 * second - (1000 * 5000 if second == 3 else 0)  # one garbled page
        window.add(scrape(vllm_page(generated, 100.0 + 10 * second, 120.0 + 12 * second), float(second)))
    figures = window.figures()
    assert figures.generation_tokens_per_s == pytest.approx(5000.0)  # not "gen tok/s 4986k"
    assert not figures.restarted_in_window
    assert window.dropped_pages == 1
    assert "1 inconsistent page dropped: generation_tokens went down" in figures.notes["window"]


def test_accepted_above_drafted_a_kv_gauge_above_one_and_a_negative_queue_are_dropped() -> None:
    window = ScrapeWindow(window_s=60.0)
    kv = f"vllm:kv_cache_usage_perc{{{VLLM_LABELS}}} 2.5\n"
    for second, (drafts, accepted) in enumerate([(1000.0, 1000.0), (1100.0, 1618.0)]):
        positions = [accepted / 2, accepted / 2]
        text = vllm_page(1e6 + 100 * second, drafts, accepted, kv, positions=positions, running=-3)
        window.add(scrape(text, float(second * 10)))
    figures = window.figures()
    # 618 accepted of 200 drafted tokens with k = 2: "acceptance 309%", "mean len 7.18"
    for name in ("acceptance_rate", "mean_acceptance_length", "kv_cache_usage", "running"):
        assert getattr(figures, name) is None, name
        assert "impossible value dropped" in figures.notes[name], name
        assert figure_text(figures, name) == "–"
    assert "309%" in figures.notes["acceptance_rate"] and "250%" in figures.notes["kv_cache_usage"]
    assert window.impossible_figures >= 4
    counted = window.impossible_figures
    window.figures()  # asking again counts nothing new
    assert window.impossible_figures == counted


def test_possible_figures_are_kept() -> None:
    figures = Figures(acceptance_rate=1.0, mean_acceptance_length=3.0, per_position_acceptance=[1.0, 1.0],
                      kv_cache_usage=0.0, running=0.0, prefix_cache_hit_rate=1.0)  # fmt: skip
    assert drop_impossible(figures) == 0 and figures.notes == {}


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("name", ["acceptance_rate", "mean_acceptance_length", "kv_cache_usage", "running"])
def test_nan_and_the_infinities_are_dropped(name: str, value: float) -> None:
    figures = Figures.model_validate({name: value, "per_position_acceptance": [0.5, 0.5]})
    assert drop_impossible(figures) == 1 and getattr(figures, name) is None
