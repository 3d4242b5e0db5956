"""The log viewer (`l`): the tail at once, older pages on demand, search, errors, follow, wrap."""

from __future__ import annotations

from pathlib import Path

from cut_figures import OneScreenApp
from textual.app import App
from textual.widgets import Static
from ui_waiting import spectop, wait_for

from tui.screens.log_viewer import LogView, LogViewerScreen, wrap_points
from tui.settings import EndpointSettings
from tui.telemetry.log_window import PAGE_BYTES, LogWindow

STATS = (
    "INFO 08-20 14:02:{s:02d} [loggers.py:257] Engine 000: Avg prompt throughput: 18.2 tokens/s, "
    "Avg generation throughput: {n}.5 tokens/s, Running: 3 reqs, Waiting: 0 reqs"
)
ACCESS = 'INFO:     127.0.0.1:54321 - "GET /metrics HTTP/1.1" 200 OK'


def write_log(path: Path, lines: int = 20_000) -> Path:
    """`lines` stats lines (several pages), an access line after every stats line, one warning early and
    one error near the start (both far above the tail), a needle twice."""
    with path.open("w") as out:
        for n in range(lines):
            if n == 50:
                out.write("WARNING 08-20 14:00:00 [config.py:1] early warning: k=4 is high\n")
            if n == 100:
                out.write("ERROR 08-20 14:00:01 [core.py:2] CUDA out of memory. Tried to allocate 2.00 GiB\n")
            if n in (200, lines - 5):
                out.write(f"INFO 08-20 14:00:02 [x.py:3] needle number {n}\n")
            out.write(STATS.format(s=n % 60, n=n) + "\n")
            out.write(ACCESS + "\n")
    return path


def viewer(path: Path) -> App[None]:
    return OneScreenApp(LogViewerScreen(path, f"test · {path.name}"))


def status(app: App[object]) -> str:
    return str(app.screen.query_one("#log-status", Static).render())


def shown(app: App[object]) -> str:
    return app.screen.query_one(LogView).render().plain


async def opened(pilot: object, app: App[object]) -> LogView:
    await wait_for(pilot, lambda: isinstance(app.screen, LogViewerScreen) and "lines" in status(app))  # type: ignore[arg-type]
    return app.screen.query_one(LogView)


def test_a_window_reads_the_tail_then_older_pages(tmp_path: Path) -> None:
    path = write_log(tmp_path / "server.log")
    window = LogWindow(path)
    window.open()
    assert window.start > 0 and path.stat().st_size - window.start <= PAGE_BYTES
    assert window.lines[-1] == ACCESS and not window.at_start
    first = window.lines[0]
    added = window.older()
    assert added > 0 and window.lines[added] == first  # the page before, joined whole at the line
    while window.older():
        pass
    assert window.at_start and window.lines[0].startswith("INFO 08-20 14:02:00")
    with path.open("a") as out:
        out.write("INFO 08-20 14:03:00 [x.py:3] appended\npartial line without its end")
    assert window.newer() == ["INFO 08-20 14:03:00 [x.py:3] appended"]  # a line being written waits
    path.write_text("rotated: a new file\n")
    assert window.newer() == ["rotated: a new file"] and window.restarted == 1


def test_wrapping_keeps_a_figure_with_its_unit() -> None:
    text = "20:45:29 init engine took 1.02 s (compilation: 0.00 s), throughput 165.7 tokens/s"
    rows = [text[a:b] for a, b in wrap_points(text, 30)]
    assert "".join(rows) == text and all(len(row) <= 30 for row in rows)
    assert not any(row.rstrip().endswith(("1.02", "0.00", "165.7")) for row in rows)


async def test_open_search_errors_follow_wrap_access(tmp_path: Path) -> None:
    path = write_log(tmp_path / "server.log")
    app = viewer(path)
    async with app.run_test(size=(100, 30)) as pilot:
        view = await opened(pilot, app)
        assert "needle number 19995" in shown(app) or "19999.5 tokens/s" in shown(app)  # the tail
        assert "GET /metrics" not in shown(app) and "access lines hidden (h)" in status(app)
        assert "following" in status(app) and "wrap on" in status(app) and "older: scroll up" in status(app)
        await pilot.press("slash", *"needle", "enter")
        await wait_for(pilot, lambda: view.current is not None)
        assert "needle number 19995" in view.raw(view.current or 0) and "held" in status(app)
        await pilot.press("N")  # the earlier one is pages above: read on demand
        await wait_for(pilot, lambda: "needle number 200" in view.raw(view.current or 0))
        assert "needle number 200" in shown(app)
        await pilot.press("n")
        await wait_for(pilot, lambda: "needle number 19995" in view.raw(view.current or 0))
        await pilot.press("home")
        await wait_for(pilot, lambda: app.screen.window.at_start)  # type: ignore[attr-defined]
        await pilot.press("e")
        await wait_for(pilot, lambda: "early warning" in view.raw(view.current or 0))
        await pilot.press("e")
        await wait_for(pilot, lambda: "CUDA out of memory" in view.raw(view.current or 0))
        await pilot.press("E")
        await wait_for(pilot, lambda: "early warning" in view.raw(view.current or 0))
        await pilot.press("w")
        assert "wrap off" in status(app)
        await pilot.press("h")
        await wait_for(pilot, lambda: "GET /metrics" in shown(app), "the access lines")
        assert "access lines hidden" not in status(app)
        await pilot.press("h", "end")  # end: follow again
        assert "following" in status(app)
        with path.open("a") as out:
            out.write("INFO 08-20 14:05:00 [x.py:3] a brand new line\n")
        await wait_for(pilot, lambda: "a brand new line" in shown(app))
        await pilot.press("f")
        assert "held" in status(app)
        await pilot.press("up")
        with path.open("a") as out:
            out.write("INFO 08-20 14:05:01 [x.py:3] while held\n")
        await wait_for(pilot, lambda: view.count and "while held" in view.raw(view.count - 1))
        assert "while held" not in shown(app)  # held: the screen does not move


async def test_l_on_the_dashboard_opens_the_endpoints_log(tmp_path: Path) -> None:
    path = write_log(tmp_path / "server.log", lines=50)
    app = spectop(EndpointSettings(name="sim", url="http://127.0.0.1:9", log_file=path))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("l")
        await opened(pilot, app)
        assert "sim" in app.screen.sub_title and "49.5 tokens/s" in shown(app)
        await pilot.press("escape")
        await pilot.press("enter", "l")  # from the detail screen too
        await opened(pilot, app)
