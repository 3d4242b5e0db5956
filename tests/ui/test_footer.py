"""The screens' footer recomposes when the keys it shows change, not at every bindings change (focus moving
between two cards with the same keys): each recompose makes and styles every key again.
"""

from __future__ import annotations

from typing import ClassVar

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
