"""SGLang's adaptive steps on the dashboard: the tier in use beside the largest candidate, from the server's
`spec_num_steps` ("(adaptive)"), else the least tier that holds the accept length ("(adaptive, derived)"),
else "–" with the reason; the tiers come from the endpoint's config file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tui.configs.sglang_adaptive import candidate_steps
from tui.format import STEPS_UNKNOWN, TIERS_UNKNOWN, UNKNOWN, k_in_effect_row
from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading
from tui.widgets.card_view import CardData, compact_lines, roomy_lines
from tui.widgets.figure_table import figure_rows, note_rows

TIERS = (1, 3, 7)


@pytest.mark.parametrize(
    ("figures", "tiers", "row"),
    [
        (Figures(k_in_effect=3.0), TIERS, ("steps in use", "3 of 7 (adaptive)", None)),
        (Figures(mean_acceptance_length=3.4), TIERS, ("steps in use", "3 of 7 (adaptive, derived)", None)),
        (Figures(mean_acceptance_length=4.2), TIERS, ("steps in use", "7 of 7 (adaptive, derived)", None)),
        (Figures(), TIERS, ("steps in use", UNKNOWN, STEPS_UNKNOWN)),
        (Figures(k_in_effect=1.0), (), ("steps in use", "1 (adaptive)", None)),
        (Figures(mean_acceptance_length=2.0), (), ("steps in use", UNKNOWN, TIERS_UNKNOWN)),
        (Figures(k_in_effect=3.0), None, ("k in effect", "3", None)),  # not adaptive: the k line as it was
        (Figures(), None, None),
    ],
)
def test_steps_in_use_row(figures: Figures, tiers: tuple[int, ...] | None, row: tuple | None) -> None:
    assert k_in_effect_row(figures, tiers) == row


def test_tiers_from_the_config_file(tmp_path: Path) -> None:
    adaptive = tmp_path / "adaptive.json"
    adaptive.write_text(json.dumps({"1": {"candidate_steps": [1, 2]}, "8": {"candidate_steps": [0, 5]}}))
    on = {"speculative_adaptive": True}
    assert candidate_steps({**on, "speculative_adaptive_config": str(adaptive)}) == (0, 1, 2, 5)
    assert candidate_steps(on) == TIERS  # SGLang's default candidates
    assert candidate_steps({**on, "speculative_adaptive_config": "adaptive.json"}) == ()  # the server's cwd
    assert candidate_steps({"speculative_num_steps": 3}) is None


def _card(figures: Figures, tiers: tuple[int, ...] | None) -> CardData:
    reading = EndpointReading(name="s", time=1.0, up=True, backend="sglang", figures=figures)
    return CardData(name="s", reading=reading, now=1.0, adaptive_steps=tiers)


def test_cards_and_detail_show_the_steps_in_use() -> None:
    card = _card(Figures(k_in_effect=3.0, mean_acceptance_length=3.2, running=4.0), TIERS)
    compact = "\n".join(line.plain for line in compact_lines(card, 80))
    roomy = "\n".join(line.plain for line in roomy_lines(card, 116))
    assert "steps in use 3 of 7 (adaptive)" in compact and "pos" not in compact
    assert "steps in use 3 of 7 (adaptive)" in roomy
    assert dict(figure_rows(card))["steps in use"] == "3 of 7 (adaptive)"
    unknown = _card(Figures(running=0.0), TIERS)
    assert dict(figure_rows(unknown))["steps in use"] == UNKNOWN
    assert f"steps in use: {STEPS_UNKNOWN}" in note_rows(unknown)
    plain = _card(Figures(running=4.0), None)  # not adaptive: the cards as before
    assert "steps in use" not in "\n".join(line.plain for line in compact_lines(plain, 80))
