"""What a card says: status from the last scrape and its age, "–" for unknowns, badges."""

from __future__ import annotations

from pathlib import Path

from ui_waiting import wait_for

from tui.app import SpectopApp
from tui.screens.detail import DetailScreen
from tui.telemetry.alerts import Alert
from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading
from tui.widgets.card_view import CardData, badge_line, compact_lines, roomy_lines


def _reading(time: float, up: bool = True, **figures: float) -> EndpointReading:
    return EndpointReading(
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


# --- why a figure is what it is: bounds, restarts, short windows, finished requests -------------------


def _qualified_figures() -> Figures:
    return Figures(
        generation_tokens_per_s=120.0,
        ttft_mean_s=0.0065,
        ttft_p50_s=0.05,
        ttft_p95_s=0.095,
        quantile_bounds={"ttft_p50_s": (0.0, 0.1), "ttft_p95_s": (0.0, 0.1)},
        notes={
            "ttft_p50_s": "inside the first bucket (≤ 0.1 s): below 0.1 s, interpolated",
            "window": "restarted during the window (12 s ago), counted from zero; "
            "window still short: 8 s of 60 s",
        },
        covered_s=8.0,
        window_short=True,
        restarted_in_window=True,
        restarted_s_ago=12.0,
        running=1.0,
    )


def test_card_shows_quantile_bounds_and_the_restart() -> None:
    reading = _reading(1.0)
    reading.figures = _qualified_figures()
    data = CardData(name="a", reading=reading, now=1.0, window_s=60.0)
    for lines in (compact_lines(data, 80), roomy_lines(data, 100)):
        text = "\n".join(line.plain for line in lines)
        assert "<100ms" in text and "50.0ms" not in text
        assert "restarted 12s ago · window 8s of 60s" in text


def test_card_says_acceptance_comes_from_finished_requests_while_one_runs() -> None:
    reading = _reading(1.0, running=1.0)
    reading.figures.notes = {
        "acceptance_rate": "from finished requests only (llama.cpp counts a request when it ends)"
    }
    assert (
        "acceptance from finished requests only" in badge_line(CardData(name="a", reading=reading), 80).plain
    )


def test_inconsistent_page_error_shows_although_up() -> None:
    reading = _reading(1.0)
    reading.error = "inconsistent page: the series vllm:num_requests_running{} appears more than once"
    assert "inconsistent page" in badge_line(CardData(name="a", reading=reading, now=1.0), 80).plain


async def test_detail_screen_shows_bounds_notes_and_restart(tmp_path: Path) -> None:
    from tui.settings import Settings
    from tui.telemetry.recording import HeaderRecord, RecordedEndpoint
    from tui.widgets.figure_table import FigureTable

    header = HeaderRecord(time=100.0, endpoints=[RecordedEndpoint(name="a", url="http://127.0.0.1:1")])
    record = EndpointReading(
        name="a", time=101.0, up=True, backend="sglang", window_s=8.0, figures=_qualified_figures()
    )  # type: ignore[call-arg]
    path = tmp_path / "run.jsonl"
    path.write_text(header.model_dump_json() + "\n" + record.model_dump_json() + "\n")
    app = SpectopApp(Settings(), replay_path=path, replay_speed=0.0, remember_theme_choice=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.replay_done)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DetailScreen))
        screen = app.screen
        assert "restarted 12s ago" in screen.sub_title
        table = screen.query_one(FigureTable).render().plain
        assert "<100ms" in table and "8/60s" in table
        assert "TTFT p50: inside the first bucket" in table
        assert "restarted during the window" in table
