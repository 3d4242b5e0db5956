"""What a screen draws, read back: the bytes Textual would send, a widget's text, figures and words cut."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from textual.app import App
from textual.geometry import Region
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable
from textual.widgets._footer import FooterKey
from textual.widgets._header import HeaderTitle
from ui_waiting import wait_for

# What the data would put on the terminal; Textual's own output is CSI colour / cursor codes only.
FROM_THE_DATA = ("\x1b]", "\x1b[2J", "\x07", "\x9b", "\u202e", "PWNED", "aGVsbG8=")
# The control characters alone: the editor shows a file's text as it is (PWNED is text there).
CONTROLS = tuple(raw for raw in FROM_THE_DATA if not raw.isprintable())


def terminal_output(app: App[Any]) -> str:
    """The full frame exactly as the app would write it to the terminal (what `_display` sends)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", legacy_windows=False, safe_box=False)  # fmt: skip
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return update.render_segments(console)


def region_text(app: App[Any], widget: Widget) -> str:
    """The characters drawn in `widget`'s region of the screen (segment text, controls and all)."""
    strips = app.screen._compositor.render_strips()
    region = widget.region
    lines = strips[region.y : region.bottom]
    return "\n".join("".join(s.text for s in line.crop(region.x, region.right)) for line in lines)


def assert_clean(*texts: str, raw: tuple[str, ...] = FROM_THE_DATA) -> None:
    assert not (found := [(each, text) for text in texts for each in raw if each in text]), found


async def assert_nothing_injected(
    pilot: Pilot[Any], widget: Widget, shown: str, raw: tuple[str, ...] = FROM_THE_DATA
) -> None:
    """Once `shown` (or anything raw) is drawn in `widget`: the text is there and nothing raw anywhere."""
    app = pilot.app

    def flat(drawn: str) -> str:  # a wrapped text (an alert row) read as one line; spaces only
        return re.sub(r" *\n *", " ", drawn)

    def settled() -> bool:
        drawn = region_text(app, widget)
        return shown in flat(drawn) or any(each in drawn for each in raw)

    await wait_for(pilot, settled, timeout_s=10.0)
    drawn = region_text(app, widget)
    assert shown in flat(drawn)  # the hostile text was drawn there, made harmless
    assert_clean(drawn, terminal_output(app), raw=raw)


class OneScreenApp(App[None]):
    def __init__(self, screen: Screen[Any]) -> None:
        super().__init__()
        self.first = screen

    def on_mount(self) -> None:
        self.push_screen(self.first)


BARS = "▁▂▃▄▅▆▇█"
FIGURE_TOKEN = re.compile(r"^[<>~(+\-]?\d[\d.,]*\s?[a-zA-Z°%/]{0,4}$")
TWO_DECIMAL_POINTS = re.compile(r"\d\.\d+\.\d")
ADDRESS = re.compile(r"\d+\.\d+\.\d+\.\d+|:\d")  # an IP or host:port is not a figure
GLUED_UNIT = re.compile(r"\d(%|x|ms|W)\d")
CUT_INTERVAL = re.compile(r"\d\.\d\d-(?!\d+\.\d\d)")
CUT_UNIT = re.compile(r"\d ?(m|mi|°)(?![a-zA-Z])|\d ?°(?!C)")
START_CHARS = 16
LOG_VIEWS = ("LogPane", "LogView", "LogViewerScreen")
UNIT_START = re.compile(r"^(ms|s|min|%|W|°C|GiB|MHz|x)(\b|\)|$)")


@dataclass(frozen=True)
class Cut:
    widget: str
    line: str
    why: str

    def __str__(self) -> str:
        return f"{self.widget}: {self.why}: {self.line.rstrip()!r}"


def widget_lines(app: App[object]) -> dict[str, list[str]]:
    """Each visible leaf widget's lines as shown, cropped to its content region (log views left out)."""
    screen = app.screen
    strips = screen._compositor.render_strips()
    width = screen.size.width
    out: dict[str, list[str]] = {}
    for widget in screen.walk_children(with_self=False):
        if not isinstance(widget, Widget) or not widget.display or not widget.visible:
            continue
        if any(child.display for child in widget.children) or any(
            type(node).__name__ in LOG_VIEWS for node in widget.ancestors_with_self
        ):
            continue
        region = widget.content_region.intersection(Region(0, 0, width, len(strips)))
        if not region.area:
            continue
        try:
            if screen.get_widget_at(region.x, region.y)[0] is not widget:  # covered (a dialog over it)
                continue
        except Exception:
            continue
        name = f"{type(widget).__name__}#{widget.id}" if widget.id else type(widget).__name__
        lines = [strips[y].crop(region.x, region.right).text for y in range(region.y, region.bottom)]
        out[f"{name}@{region.x},{region.y}"] = lines
    return out


def _tokens_before_ellipsis(line: str) -> Iterable[str]:
    for index, char in enumerate(line):
        if char == "…":
            start = index
            while start > 0 and not line[start - 1].isspace():
                start -= 1
            token = line[start:index]
            if not token:  # "2330W 43 …"? look at the word before the space
                head = line[:index].rstrip().split(" ")
                token = head[-1] if head else ""
            yield token


def cuts_in(name: str, lines: Sequence[str]) -> list[Cut]:
    found: list[Cut] = []
    for number, line in enumerate(lines):
        for token in _tokens_before_ellipsis(line):
            if token and token[0] not in BARS and FIGURE_TOKEN.match(token.split("/")[-1] or token):
                found.append(Cut(name, line, f"ellipsis after the figure {token!r}"))
        for token in line.split():
            if ADDRESS.search(token):
                continue
            if TWO_DECIMAL_POINTS.search(token) or GLUED_UNIT.search(token):
                found.append(Cut(name, line, f"figures run together in {token!r}"))
            if CUT_INTERVAL.search(token):
                found.append(Cut(name, line, f"an interval cut: {token!r}"))
        for match in CUT_UNIT.finditer(line):
            found.append(Cut(name, line, f"a unit cut: {match.group(0)!r}"))
        following = lines[number + 1].lstrip() if number + 1 < len(lines) else ""
        if line.rstrip() and line.rstrip()[-1].isdigit() and UNIT_START.match(following):
            found.append(Cut(name, line + " / " + following, "a figure wrapped between number and unit"))
    return found


def _collapsed(text: str) -> str:
    return " ".join(text.split())


def overflowing_tables(app: App[object]) -> list[Cut]:
    """A table wider than its viewport shows its last column cut at the screen's edge ("1.80-1")."""
    return [
        Cut(
            f"DataTable#{table.id}",
            f"{table.virtual_size.width} cells in {table.scrollable_content_region.width}",
            "a table wider than the screen, cut at its edge",
        )
        for table in app.screen.query(DataTable)
        if table.display and table.virtual_size.width > table.scrollable_content_region.width
    ]


def cut_footer_keys(app: App[object]) -> list[Cut]:
    """Footer keys shown in part: past the footer's right end, or under the command palette's key."""
    keys = [key for key in app.screen.query(FooterKey) if key.display and key.region.width]
    palette = next((key for key in keys if key.has_class("-command-palette")), None)
    return [
        Cut("Footer", f"{key.key_display} {key.description}", "a footer key cut")
        for key in keys
        if key is not palette
        and key.region.right > (palette.region.x if palette is not None else key.parent.region.right)  # type: ignore[union-attr]
    ]


def cut_header(app: App[object]) -> list[Cut]:
    """A header whose title and subtitle do not fit: Textual cuts them with an ellipsis."""
    found = []
    strips = app.screen._compositor.render_strips()
    for title in app.screen.query(HeaderTitle):
        region = title.content_region
        if not region.width or region.y >= len(strips):
            continue
        whole = str(title.visual)
        shown = _collapsed(strips[region.y].crop(region.x, region.right).text)
        if _collapsed(whole) not in shown:
            found.append(Cut("Header", f"{shown!r} of {whole!r}", "the header's title cut"))
    return found


def _prefix_shown(text: str, shown: Sequence[str]) -> str:
    """The longest start of `text` some widget shows."""
    size = 0
    for widget in shown:
        while size < len(text) and text[: size + 1] in widget:
            size += 1
    return text[:size]


def cut_words(text: str, shown: Sequence[str]) -> Cut | None:
    """`text` shown in part, and its part not ending where a word ends ("mean l…")."""
    whole = _collapsed(text)
    start = _prefix_shown(whole, shown)
    if len(start) < START_CHARS or start == whole:
        return None
    after = whole[len(start) : len(start) + 2]
    if after[0] == " " or start.endswith(" ") or (after[0] in ";:,." and after[1:] in ("", " ")):
        return None  # a word ends there (before a space, or before its ";" "," ":" ".")
    return Cut("screen", f"{start!r} of {whole!r}", "a text cut mid-word")


def cut_figures(
    app: App[object],
    given: Sequence[str] = (),
    whole_or_absent: Sequence[str] = (),
    words_whole: Sequence[str] = (),
) -> list[Cut]:
    """Every cut figure, footer key and header title on the screen now, every `given` text not shown
    whole, every text of `whole_or_absent` whose start is shown but not the rest, and every text of
    `words_whole` shown in part, cut mid-word."""
    lines = widget_lines(app)
    found = [cut for name, widget in lines.items() for cut in cuts_in(name, widget)]
    found += overflowing_tables(app) + cut_footer_keys(app) + cut_header(app)
    shown = [_collapsed(" ".join(widget)) for widget in lines.values()]
    for text in given:
        if not any(_collapsed(text) in widget for widget in shown):
            found.append(Cut("screen", text, "a given text is not shown whole"))
    for text in whole_or_absent:
        start = _collapsed(text)[:START_CHARS]
        if any(start in widget for widget in shown) and not any(_collapsed(text) in w for w in shown):
            found.append(Cut("screen", text, "a text is shown in part"))
    found += [cut for text in words_whole if (cut := cut_words(text, shown)) is not None]
    return found
