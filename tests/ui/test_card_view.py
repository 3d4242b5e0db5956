"""What a card says: status from the last scrape and its age, "–" for unknowns, badges."""

from __future__ import annotations

from tui.app import SpectopApp
from tui.screens.alerts import AlertsScreen
from tui.screens.dashboard import DashboardScreen
from tui.screens.detail import DetailScreen
from tui.screens.help import KEYS
from tui.telemetry.alerts import Alert
from tui.telemetry.figures import Figures
from tui.telemetry.recording import ReadingRecord
from tui.widgets.card_view import CardData, badge_line, compact_lines, roomy_lines


def _reading(time: float, up: bool = True, **figures: float) -> ReadingRecord:
    return ReadingRecord(
        name="a",
        time=time,
        up=up,
        error=None if up else "connection refused",
        backend="vllm",
        figures=Figures(**figures),
    )  # type: ignore[arg-type]


def test_status_waiting_up_stale_down() -> None:
    assert CardData(name="a", now=100.0).status == "waiting"
    assert CardData(name="a", reading=_reading(99.0), now=100.0, stale_after_s=10).status == "up"
    assert CardData(name="a", reading=_reading(80.0), now=100.0, stale_after_s=10).status == "stale"
    down = CardData(name="a", reading=_reading(99.0, up=False), now=100.0)
    assert down.status == "down"
    assert down.status_content().plain == "● down 1s"
    assert "connection refused" in badge_line(down, 80).plain


def test_down_endpoint_shows_dashes_not_old_figures() -> None:
    data = CardData(name="a", reading=_reading(1.0, up=False, generation_tokens_per_s=500.0), now=2.0)
    assert data.figures.generation_tokens_per_s is None
    assert "500" not in "\n".join(line.plain for line in compact_lines(data, 76))


def test_lines_fit_the_width_and_unknowns_are_dashes() -> None:
    data = CardData(name="a", reading=_reading(1.0, generation_tokens_per_s=594.9), now=1.0)
    for lines in (compact_lines(data, 76), roomy_lines(data, 95)):
        assert all(line.cell_length <= 95 for line in lines)
        text = "\n".join(line.plain for line in lines)
        assert "594.9" in text and "–" in text and " 0.00" not in text


def test_badges_put_critical_first_with_its_message() -> None:
    alerts = [
        Alert("a", "acceptance_low", "warning", "acceptance 0.45 below 0.60", 1.0),
        Alert("a", "acceptance_critical", "critical", "acceptance 0.25 below 0.30", 2.0),
    ]
    line = badge_line(CardData(name="a", alerts=alerts), 80).plain
    assert line.index("CRIT") < line.index("WARN")
    assert "below 0.30" in line


def test_every_shown_key_is_in_the_help_screen() -> None:
    documented = {token for _, keys, _ in KEYS for token in keys.split()}
    for owner in (SpectopApp, DashboardScreen, DetailScreen, AlertsScreen):
        for binding in owner.BINDINGS:
            if getattr(binding, "show", False):
                shown = binding.key_display or binding.key
                assert shown in documented or binding.key in documented, f"{owner.__name__}: {shown}"
