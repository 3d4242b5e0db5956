"""The dashboard's advice line offers a k by batch size where one k does not fit every calibrated load
(the guard's table offer, tui/advice/live.py), on the card and in the detail's advice."""

from __future__ import annotations

from tests.advice.test_guard_control import PER_POSITION, _model
from tui.advice.live import ConfigFacts, KeptModels
from tui.advice.stepcost import StepCostFile
from tui.board import Board
from tui.settings import AlertSettings, EndpointSettings, Settings
from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading
from tui.widgets.card_view import CardData, badge_line
from tui.widgets.figure_table import advice_lines

URL = "http://127.0.0.1:8000"
LINE = "k=3 now · k by batch size 1: k=1, 2-256: k=0 (significant)"


def _advice_after_one_reading(per_draft_seq_ms: float) -> CardData:
    board = Board(
        Settings(alerts=AlertSettings(sustained_s=10.0), endpoints=[EndpointSettings(name="e", url=URL)])
    )
    board.enable_advice(KeptModels(StepCostFile(models=[_model(8.0, per_draft_seq_ms)])))
    board.set_config_facts("e", ConfigFacts(3, "s", "speculative.num_speculative_tokens"))
    figures = Figures(per_position_acceptance=PER_POSITION, running=1.0, acceptance_rate=0.57)
    reading = EndpointReading(name="e", url=URL, time=100.0, up=True, model="m", figures=figures)
    board.add_reading(reading)
    assert board.advice is not None
    return CardData(name="e", reading=reading, now=100.0, advice=board.advice.advice("e"))


def test_card_and_detail_show_the_table_offer() -> None:
    data = _advice_after_one_reading(
        10.0
    )  # k=1 wins alone, off wins at load 8 (tests/advice/test_guard_control)
    assert data.advice is not None and data.advice.table == "1: k=1, 2-256: k=0"
    assert badge_line(data, 120).plain == LINE
    assert " ".join(advice_lines(data.advice, 200, 3)).startswith(f"advice {LINE}")


def test_one_k_for_every_load_keeps_the_usual_line() -> None:
    data = _advice_after_one_reading(12.46)  # within the margin: no table
    assert data.advice is not None and data.advice.table is None
    assert "batch size" not in badge_line(data, 120).plain
