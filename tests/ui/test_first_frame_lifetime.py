"""The first frame shows what the server already knows, marked, until two scrapes exist.

A real local server answers the reference vLLM page (metrics_t0.txt): after one scrape the card shows the
acceptance, mean length and per position since the server started with the lifetime mark, says so on its
badge line, and shows "–" for the rates; the table view marks them too, and the help's legend explains
the mark. The next scrape (metrics_t1.txt) brings the window's own figures, unmarked. Drawn at 80x24 and
120x36 with no figure cut.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cut_figures import cut_figures
from textual.widgets import Static
from ui_waiting import wait_for

sys.path.insert(0, str(Path(__file__).parents[1] / "telemetry"))

from metrics_test_server import Reply, ReplyServer, sample_body

from tui.format import LIFETIME_CAVEAT, LIFETIME_LEGEND, LIFETIME_MARK
from tui.paths import themes_dir
from tui.screens.help import HelpScreen
from tui.settings import EndpointSettings, Settings
from tui.ui.app import SpectopApp
from tui.widgets.endpoint_card import EndpointCard
from tui.widgets.endpoint_table import EndpointTable

LIFETIME_ACCEPTANCE = f"70%{LIFETIME_MARK}"  # 1,430,743 / 2,041,330 accepted since the server started


def _app(url: str) -> SpectopApp:
    endpoint = EndpointSettings(name="mimo", url=url, backend="vllm")
    # One scrape at the start; the next only when the test asks (`poll_due`).
    settings = Settings(poll_interval_s=3600.0, endpoints=[endpoint])
    return SpectopApp(settings, theme_folders=[themes_dir()], remember_theme_choice=False)


def _card_text(app: SpectopApp) -> str:
    return str(app.screen.query_one(EndpointCard).render())


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
async def test_first_frame_shows_lifetime_figures_until_the_second_scrape(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    replies = [Reply(sample_body("vllm", "metrics_t0.txt"))]
    async with ReplyServer(replies) as server:
        app = _app(server.url)
        async with app.run_test(size=size) as pilot:
            await wait_for(pilot, lambda: app.screen.query_one(EndpointCard).data.reading is not None)
            await pilot.pause()
            text = _card_text(app)
            assert LIFETIME_ACCEPTANCE in text
            assert f"2.40{LIFETIME_MARK}" in text  # mean length 1 + 1,430,743 / 1,020,665
            assert LIFETIME_CAVEAT in text
            figures = app.screen.query_one(EndpointCard).data.figures
            assert figures.generation_tokens_per_s is None and figures.acceptance_rate is None
            assert not cut_figures(app, given=[LIFETIME_CAVEAT])

            await pilot.press("v")  # the table view marks them too
            await wait_for(pilot, lambda: bool(app.screen.query(EndpointTable)))
            table = app.screen.query_one(EndpointTable)
            await wait_for(pilot, lambda: LIFETIME_ACCEPTANCE in _table_text(table))
            assert not cut_figures(app)
            await pilot.press("v")

            server.replies = [Reply(sample_body("vllm", "metrics_t1.txt"))]
            app.source.poll_due()  # type: ignore[attr-defined]  # the live source: the second scrape now
            await wait_for(
                pilot, lambda: app.screen.query_one(EndpointCard).data.figures.acceptance_rate is not None
            )
            await pilot.pause()
            text = _card_text(app)
            assert LIFETIME_MARK not in text and LIFETIME_CAVEAT not in text
            assert "70%" in text  # 3,468 / 4,960 in the window (samples/vllm/README.md)


def _table_text(table: EndpointTable) -> str:
    return " ".join(" ".join(str(cell) for cell in table.get_row_at(row)) for row in range(table.row_count))


async def test_help_explains_the_lifetime_mark(tmp_path: Path) -> None:
    async with ReplyServer([Reply(sample_body("vllm", "metrics_t0.txt"))]) as server:
        app = _app(server.url)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("question_mark")
            await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
            notes = str(app.screen.query_one("#notes", Static).render())
            assert LIFETIME_LEGEND in notes
            assert not cut_figures(app, given=[LIFETIME_LEGEND])
