"""An endpoint's log, full screen (`l`), toolong-class: opens at its tail whatever its size, reads older
pages on scrolling up; search, errors, follow and wrap."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content, Span
from textual.events import MouseScrollDown, MouseScrollUp
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Header, Input, Static

from tui.format import fmt_count
from tui.sanitize import safe_line
from tui.telemetry.log_window import LogWindow, line_level
from tui.telemetry.logs.display import display_line, figure_spans, is_access
from tui.widgets.footer import BottomInput, Footer

FOLLOW_EVERY_S = 0.5
LEVEL_STYLES = {"error": "$error bold", "warning": "$warning", "info": ""}


def wrap_points(text: str, width: int) -> list[tuple[int, int]]:
    """Where a line wraps at `width`: after the last space that fits ("1.02 s" stays whole), else at it."""
    rows, start = [], 0
    while len(text) - start > width:
        cut = text.rfind(" ", start, start + width + 1)
        while cut > start and _splits_figure(text, cut):
            cut = text.rfind(" ", start, cut)
        end = cut + 1 if cut > start else start + width
        rows.append((start, end))
        start = end
    rows.append((start, len(text)))
    return rows


def _splits_figure(text: str, space: int) -> bool:
    """Whether the space at `space` sits between a number and its unit ("18.2 tokens/s", "1.02 s")."""
    return (
        space > 0
        and text[space - 1].isdigit()
        and text[space + 1 : space + 2].isalpha()
        and (text[space + 1 :].split(" ", 1)[0].rstrip(",.;)") in _UNITS)
    )


_UNITS = {"ms", "s", "tokens/s", "tok/s", "tokens", "reqs", "GiB", "MiB", "GB", "MB", "seconds", "%"}


class LogView(Widget, can_focus=True):
    """The visible part of the window's lines from `top`, wrapped or cut (`→` marks a line that goes on)."""

    DEFAULT_CSS = "LogView { height: 1fr; padding: 0 1; }"

    def __init__(self, window: LogWindow, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.window = window
        self.top = 0  # index into the shown lines of the first line on screen
        self.wrap = True
        self.show_access = False
        self.search = ""
        self.current: int | None = None  # the line a search or a jump landed on
        self._shown: list[int] = []  # indices into window.lines of the lines shown (access lines hidden)
        self.hidden_access = 0
        self.matches = 0

    def reindex(self) -> None:
        """Which lines are shown (access lines hidden unless asked for), and how many are hidden."""
        if self.show_access:
            self._shown, self.hidden_access = list(range(len(self.window.lines))), 0
            return
        shown = [index for index, raw in enumerate(self.window.lines) if not is_access(raw)]
        self._shown, self.hidden_access = shown, len(self.window.lines) - len(shown)
        self.count_matches()

    def count_matches(self) -> None:
        """How many shown lines match the search (when it is set, or the lines change)."""
        needle = self.search.lower()
        self.matches = sum(needle in self.raw(i).lower() for i in range(self.count)) if needle else 0

    @property
    def count(self) -> int:
        return len(self._shown)

    def raw(self, position: int) -> str:
        return self.window.lines[self._shown[position]]

    def bottom_top(self) -> int:
        width, height = max(10, self.content_size.width), max(1, self.content_size.height)
        rows, position = 0, self.count
        while position > 0 and rows < height:
            rows += len(wrap_points(self._text(position - 1).plain, width)) if self.wrap else 1
            if rows > height:
                break
            position -= 1
        return min(position, max(0, self.count - 1))  # the last line at least, however tall

    def _text(self, position: int) -> Content:
        raw = self.raw(position)
        shown = display_line(raw)
        head, message = safe_line(shown.head), safe_line(shown.message)
        level = line_level(raw)
        style = "$text-muted" if shown.access else LEVEL_STYLES[level]
        spans = [Span(0, len(head), "$text-muted")] if head else []
        if style:
            spans.append(Span(len(head), len(head) + len(message), style))
        if not shown.access and len(message) == len(shown.message):  # spans index the unsanitised text
            named = any(word in message for word in ("throughput", "Running:", "acceptance"))
            for start, end in figure_spans(message, named=named):
                spans.append(Span(len(head) + start, len(head) + end, "bold $secondary"))
        text = head + message
        if self.search:
            lowered, needle, at = text.lower(), self.search.lower(), 0
            while (found := lowered.find(needle, at)) >= 0:
                spans.append(Span(found, found + len(needle), "reverse"))
                at = found + len(needle)
        if position == self.current:
            spans.append(Span(0, len(text), "underline"))
        return Content(text, spans)

    def render(self) -> Content:
        width, height = max(10, self.content_size.width), max(1, self.content_size.height)
        rows: list[Content] = []
        position = self.top
        while len(rows) < height and position < self.count:
            text = self._text(position)
            if self.wrap:
                rows += [text[start:end] for start, end in wrap_points(text.plain, width)]
            elif len(text.plain) > width:
                rows.append(Content.assemble(text[: width - 1], ("→", "$text-muted")))
            else:
                rows.append(text)
            position += 1
        if not rows:
            rows = [Content.styled(self.window.error or "the log is empty so far", "$text-muted")]
        return Content("\n").join(rows[:height])

    def scroll_lines(self, step: int) -> None:
        self.top = max(0, min(self.top + step, max(0, self.count - 1)))
        self.refresh()

    async def on_mouse_scroll_down(self, event: MouseScrollDown) -> None:
        await self.screen.run_action("line(3)")

    async def on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        await self.screen.run_action("line(-3)")


class LogViewerScreen(Screen[None]):
    DEFAULT_CSS = "LogViewerScreen #log-status { height: 1; padding: 0 1; color: $text-muted; }"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", tooltip="back / close search"),
        Binding("slash", "search", "Search", key_display="/", tooltip="search the log"),
        Binding("n", "find(1)", "Next", tooltip="next match"),
        Binding("N", "find(-1)", "Prev", show=False, tooltip="previous match"),
        Binding("e", "problem(1)", "Error", tooltip="next error or warning"),
        Binding("E", "problem(-1)", "Prev error", show=False, tooltip="previous error or warning"),
        Binding("f", "toggle_follow", "Follow", tooltip="follow on / off"),
        Binding("w", "toggle_wrap", "Wrap", tooltip="wrap long lines on / off"),
        Binding("h", "toggle_access", "Access", tooltip="access lines on / off"),
        Binding("down", "line(1)", "Down", show=False, tooltip="one line down"),
        Binding("up", "line(-1)", "Up", show=False, tooltip="one line up"),
        Binding("pagedown,space", "page(1)", "Page down", show=False, tooltip="one page down"),
        Binding("pageup", "page(-1)", "Page up", show=False, tooltip="one page up"),
        Binding("home,g", "start", "Start", show=False, tooltip="the file's start"),
        Binding("end,G", "end", "End", show=False, tooltip="the end (and follow)"),
    ]

    def __init__(self, path: Path, title: str) -> None:
        super().__init__()
        self.window = LogWindow(path)
        self.title_text = title
        self.follow = True

    def compose(self) -> ComposeResult:
        yield Header(icon="◆")
        yield LogView(self.window, id="log-view")
        yield Static(id="log-status", markup=False)
        yield BottomInput("search (enter: go, escape: close)", id="log-search")
        yield Footer(compact=True)

    async def on_mount(self) -> None:
        self.sub_title = safe_line(f"log {self.title_text}")
        await asyncio.to_thread(self.window.open)
        view = self.view
        view.reindex()
        self.call_after_refresh(self.action_end)  # the tail, once the view knows its size
        view.focus()
        self._status()
        self.set_interval(FOLLOW_EVERY_S, self._poll)

    def on_resize(self) -> None:
        if self.follow and self.query(LogView):
            self.view.top = self.view.bottom_top()

    @property
    def view(self) -> LogView:
        return self.query_one(LogView)

    async def _poll(self) -> None:
        if self.window.error is not None and not self.window.lines:
            await asyncio.to_thread(self.window.open)
        new = await asyncio.to_thread(self.window.newer)
        if new:
            view = self.view
            view.reindex()
            if self.follow:
                view.top = view.bottom_top()
            view.refresh()
        self._status()

    def _status(self) -> None:
        view = self.view
        parts = [
            "following" if self.follow else "held (f follows)",
            f"wrap {'on' if view.wrap else 'off'}",
            f"lines {fmt_count(min(view.count, view.top + 1))}-{fmt_count(view.count)}",
        ]
        if not self.window.at_start and not self.window.trimmed:
            parts.append("older: scroll up")
        if view.search:
            matches = view.matches
            parts.append(f"/{view.search}: {fmt_count(matches)} match{'es' if matches != 1 else ''}")
        if view.hidden_access and not view.show_access:
            parts.append(f"{fmt_count(view.hidden_access)} access lines hidden (h)")
        if self.window.restarted:
            parts.append(f"file replaced or truncated {self.window.restarted}x: read from its tail")
        if self.window.error:
            parts.append(self.window.error)
        kept: list[str] = []
        for part in parts:  # whole parts only
            if len(" · ".join([*kept, part])) <= max(20, self.size.width - 2):
                kept.append(part)
        self.query_one("#log-status", Static).update(safe_line(" · ".join(kept)))

    # --- moving ------------------------------------------------------------------------------------------

    async def _older_if_at_top(self) -> None:
        view = self.view
        if view.top > 0 or self.window.at_start:
            return
        before = view.count
        added = await asyncio.to_thread(self.window.older)
        if added:
            view.reindex()
            view.top += view.count - before

    async def action_line(self, step: int) -> None:
        view = self.view
        if step < 0:
            self.follow = False
            await self._older_if_at_top()
        view.scroll_lines(step)
        if step > 0 and view.top >= view.bottom_top():
            view.top = view.bottom_top()
        self._status()

    async def action_page(self, step: int) -> None:
        await self.action_line(step * max(1, self.view.content_size.height - 1))

    async def action_start(self) -> None:
        self.follow = False
        while not self.window.at_start and not self.window.trimmed:
            if not await asyncio.to_thread(self.window.older):
                break
        view = self.view
        view.reindex()
        view.top, view.current = 0, None
        self._redraw()

    def action_end(self) -> None:
        self.follow = True
        self._redraw()

    def _redraw(self) -> None:
        """The view drawn again (at its end when following), and the status line."""
        view = self.view
        if self.follow:
            view.top = view.bottom_top()
        view.refresh()
        self._status()

    def _land(self, position: int) -> None:
        view = self.view
        view.current = position
        view.top = max(0, min(position - 2, view.bottom_top()))
        self.follow = False
        self._redraw()

    async def _find(self, step: int, matches: object) -> bool:
        """The next line (by `step`) that `matches`, reading older pages past the top; False when none."""
        view = self.view
        start = view.current if view.current is not None else view.top - (1 if step > 0 else 0)
        start = max(-1, min(start, view.count))
        while True:
            position = start + step
            while 0 <= position < view.count:
                if matches(view.raw(position)):  # type: ignore[operator]
                    self._land(position)
                    return True
                position += step
            if step > 0 or self.window.at_start or self.window.trimmed:
                return False
            before = view.count
            if not await asyncio.to_thread(self.window.older):
                return False
            view.reindex()
            start += view.count - before  # the same line, further down now

    async def action_find(self, step: int) -> None:
        needle = self.view.search.lower()
        if not needle:
            self.notify("/ to search first", timeout=3)
            return
        if not await self._find(step, lambda raw: needle in raw.lower()):
            self.notify(f"no {'later' if step > 0 else 'earlier'} match for {self.view.search!r}", timeout=3)

    async def action_problem(self, step: int) -> None:
        if not await self._find(step, lambda raw: line_level(raw) != "info"):
            self.notify(f"no {'later' if step > 0 else 'earlier'} error or warning", timeout=3)

    def action_toggle_follow(self) -> None:
        self.follow = not self.follow
        self._redraw()

    def action_toggle_wrap(self) -> None:
        self.view.wrap = not self.view.wrap
        self._redraw()

    def action_toggle_access(self) -> None:
        view = self.view
        kept = view._shown[view.top] if view.count else 0
        view.show_access = not view.show_access
        view.reindex()
        view.top = next((i for i, index in enumerate(view._shown) if index >= kept), 0)
        self._redraw()

    # --- search box --------------------------------------------------------------------------------------

    def action_search(self) -> None:
        box = self.query_one("#log-search", BottomInput)
        box.value = self.view.search
        box.open()

    @on(Input.Submitted, "#log-search")
    async def _search_submitted(self, event: Input.Submitted) -> None:
        self._close_search()
        view = self.view
        view.search = event.value.strip()
        view.count_matches()
        view.current = view.top + max(1, view.content_size.height) if view.search else None  # search upwards
        if view.search:
            await self.action_find(-1)
        self._status()

    def _close_search(self) -> None:
        self.query_one("#log-search", BottomInput).close()
        self.view.focus()

    def action_back(self) -> None:
        if self.query_one("#log-search", BottomInput).is_open:
            self._close_search()
        else:
            self.app.pop_screen()
