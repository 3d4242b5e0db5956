"""The footer recomposes only when its keys change: each recompose makes and styles every key again."""

from __future__ import annotations

from typing import ClassVar

from cut_figures import cut_footer_keys
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static
from textual.widgets._footer import FooterKey
from ui_waiting import wait_for

from tui.widgets.footer import Footer


class Card(Static, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("e", "edit", "Edit")]


class Table(Static, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("c", "columns", "Columns")]


class CountingFooter(Footer):
    composed = 0

    def compose(self) -> ComposeResult:
        type(self).composed += 1
        yield from super().compose()


class Cards(App[None]):
    def compose(self) -> ComposeResult:
        yield Card("one", id="one")
        yield Card("two", id="two")
        yield Table("table", id="table")
        yield CountingFooter(compact=True)


def _keys(app: App[None]) -> set[str]:
    return {str(key.description) for key in app.screen.query(FooterKey)}


async def test_the_footer_recomposes_only_when_its_keys_change() -> None:
    app = Cards()
    async with app.run_test(size=(80, 10)) as pilot:
        app.query_one("#one").focus()
        await wait_for(pilot, lambda: "Edit" in _keys(app), "the card's keys")
        composed = CountingFooter.composed
        for target in ("#two", "#one", "#two"):  # the same keys: nothing to draw again
            app.query_one(target).focus()
            await pilot.pause()
        assert CountingFooter.composed == composed
        app.query_one("#table").focus()  # other keys: drawn
        await wait_for(pilot, lambda: "Columns" in _keys(app), "the table's keys")
        assert "Edit" not in _keys(app) and CountingFooter.composed == composed + 1


class ManyKeys(App[None]):
    ENABLE_COMMAND_PALETTE = True
    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(key, f"nothing('{key}')", words) for key, words in (("o", "Open"), ("e", "Edit"))),
        *(Binding(letter, f"nothing('{letter}')", f"Word{letter}") for letter in "bcdfghjk"),
        Binding("question_mark", "help", "Help"),  # last, and kept: it lists the others
    ]

    def compose(self) -> ComposeResult:
        yield Static("body")
        yield Footer(compact=True)

    def action_nothing(self, key: str) -> None:
        pass

    def action_help(self) -> None:
        pass


def _shown(app: App[None]) -> list[str]:
    return [
        str(key.description)
        for key in app.screen.query(FooterKey)
        if key.display and not key.has_class("-command-palette")
    ]


async def test_footer_keys_that_do_not_fit_are_hidden_whole_from_the_last() -> None:
    app = ManyKeys()
    async with app.run_test(size=(80, 10)) as pilot:
        await wait_for(pilot, lambda: "Open" in _shown(app), "the keys")
        await pilot.pause()
        every = [str(key.description) for key in app.screen.query(FooterKey)][:-1]
        shown = _shown(app)
        assert not cut_footer_keys(app)
        assert shown[-1] == "Help" and 4 <= len(shown) < len(every)
        assert shown[:-1] == every[: len(shown) - 1]  # the first ones, whole, and the help key
        await pilot.resize_terminal(200, 10)
        await wait_for(pilot, lambda: _shown(app) == every, "every key back")
        assert not cut_footer_keys(app)
        await pilot.resize_terminal(60, 10)
        await wait_for(pilot, lambda: len(_shown(app)) < len(shown), "fewer keys")
        assert not cut_footer_keys(app)
