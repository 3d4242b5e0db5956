"""The log pane at 80 columns: stats figures readable (wrapped, no prefix), access lines hidden until `h`."""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import App, ComposeResult

from tui.widgets.log_pane import LogPane

STATS = (
    "(APIServer pid=1) INFO 08-20 14:03:20 [loggers.py:257] Engine 000: "
    "Avg prompt throughput: 112.0 tokens/s, "
    "Avg generation throughput: 181.2 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 2.1%, "
    "Prefix cache hit rate: 0.0%"
)
ACCESS = '(APIServer pid=1) INFO:     127.0.0.1:54321 - "GET /metrics HTTP/1.1" 200 OK'


@dataclass
class Entry:
    line: str
    kind: str


class PaneApp(App[None]):
    def compose(self) -> ComposeResult:
        yield LogPane(id="log")


def _text(pane: LogPane) -> str:
    return "\n".join(strip.text for strip in pane.lines)


async def test_stats_line_is_readable_at_80_columns_and_access_lines_hide() -> None:
    app = PaneApp()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(LogPane)
        pane.focus()
        pane.show([Entry(STATS, "stats"), Entry(ACCESS, "plain"), Entry(ACCESS, "plain")])
        await pilot.pause()
        text = _text(pane)
        assert all(len(strip.text) <= 78 for strip in pane.lines)
        assert text.startswith("14:03:20 Engine 000: Avg prompt throughput: 112.0 tokens/s")
        for figure in ("181.2 tokens/s", "4 reqs", "2.1%", "0.0%"):
            assert figure in text.replace("\n", " ")
        assert "pid=" not in text and "GET /metrics" not in text
        assert "2 access lines hidden" in str(pane.border_subtitle)

        await pilot.press("h")
        await pilot.pause()
        assert _text(pane).count('"GET /metrics HTTP/1.1" 200') == 2

        await pilot.press("h")
        pane.add(Entry(ACCESS, "plain"))
        await pilot.pause()
        assert "GET /metrics" not in _text(pane)
        assert "3 access lines hidden" in str(pane.border_subtitle)


async def test_figures_are_highlighted_and_errors_stand_out() -> None:
    app = PaneApp()
    async with app.run_test(size=(100, 10)) as pilot:
        pane = app.query_one(LogPane)
        pane.show(
            [Entry(STATS, "stats"), Entry("ERROR 08-20 14:03:21 [core.py:1] CUDA out of memory", "error")]
        )
        await pilot.pause()
        stats = pane.lines[0]
        figure = [segment for segment in stats if segment.text == "112.0 tokens/s"]
        plain = [segment for segment in stats if "Engine 000" in segment.text]
        assert figure and figure[0].style is not None and figure[0].style.bold
        assert plain and not (plain[0].style and plain[0].style.bold)
        error = next(strip for strip in pane.lines if "CUDA out of memory" in strip.text)
        assert error.text.startswith("14:03:21 ERROR CUDA")
        assert any(segment.style and segment.style.bold for segment in error if "CUDA" in segment.text)


async def test_lines_wrap_again_when_the_pane_is_resized() -> None:
    app = PaneApp()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(LogPane)
        pane.show([Entry(STATS, "stats")])
        await pilot.pause()
        narrow = len(pane.lines)
        await pilot.resize_terminal(200, 24)
        await pilot.pause()
        assert len(pane.lines) < narrow
