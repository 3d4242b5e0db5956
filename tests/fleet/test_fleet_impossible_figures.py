"""Fleet figures go through the endpoints' impossible-value rules (tui/telemetry/plausible_figures.py):
an acceptance above 100% or a KV gauge of 2.5 from Prometheus is dropped with its note and counted, and the
count is shown (the snapshot's lines and JSON, the instance's card), not only in the notes."""

from __future__ import annotations

from fake_prometheus import A, B, healthy, refresh_with

from tui.fleet.snapshot import row, table
from tui.format import figure_text
from tui.widgets.card_view import CardData, badge_line

BAD = {
    "generation_tokens_per_s": {A: "120.5", B: "80"},
    "acceptance_rate": {A: "3.09", B: "0.7"},  # accepted > drafted on A: "309%"
    "kv_cache_usage": {A: "2.5", B: "0.4"},
}


async def test_impossible_fleet_figures_are_dropped_counted_and_shown() -> None:
    refresh = await refresh_with(healthy(figures=BAD))
    by_instance = {reading.instance: reading for reading in refresh.readings}
    bad, good = by_instance[A], by_instance[B]
    for name in ("acceptance_rate", "kv_cache_usage"):
        assert getattr(bad.figures, name) is None and figure_text(bad.figures, name) == "–", name
        assert "impossible value dropped" in bad.figures.notes[name], name
    assert "309%" in bad.figures.notes["acceptance_rate"]
    assert bad.figures.generation_tokens_per_s == 120.5  # the possible figures stay
    assert bad.impossible_figures == 2 and good.impossible_figures == 0
    assert good.figures.acceptance_rate == 0.7
    lines = table(refresh.readings)
    assert f"{A}: 2 impossible figures dropped (inconsistent page)" in lines
    assert not any(line.startswith(f"{B}:") for line in lines)
    assert row(bad)["impossible_figures"] == 2 and row(good)["impossible_figures"] == 0
    card = badge_line(CardData(name=A, reading=bad, now=bad.time), 80).plain
    assert "2 impossible figures dropped" in card
    assert "impossible" not in badge_line(CardData(name=B, reading=good, now=good.time), 80).plain
