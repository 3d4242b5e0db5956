"""The screens' footer: Textual's, recomposed only when the keys it shows changed, and showing only the keys
that fit whole.

Textual's `Footer` recomposes (one widget per key, each styled again) at every bindings change: focus
moving from one card to the next, a screen resuming, an action's check changing. The dashboard's
recomposed five times before its first frame with figures, about 10 ms of CPU each, to show the same
keys (tests/bench/bench_dashboard_first_frame.py).

Keys that do not fit left of the command palette's are hidden whole, from the last (the screen's keys come
first, the app's after them), never cut (`p Paus`); the help key stays: `?` lists them all.
"""

from __future__ import annotations

from textual.dom import NoScreen
from textual.widgets import Footer as TextualFooter
from textual.widgets._footer import FooterKey

PALETTE = "-command-palette"


class Footer(TextualFooter):
    _shown: tuple[object, ...] | None = None  # what the last compose showed

    def _shows(self) -> tuple[object, ...]:
        """Everything the footer's compose reads: the active bindings (enabled or not, their tooltips), the
        command palette's key and the footer's own options."""
        if not self._bindings_ready:
            return ()
        try:
            screen = self.screen
        except NoScreen:  # a recompose queued before its screen was popped
            return ()
        active = screen.active_bindings.values()
        bindings = tuple((binding, enabled, tooltip) for _, binding, enabled, tooltip in active)
        return (self.compact, self.show_command_palette, self.combine_groups, bindings)

    async def recompose(self) -> None:
        if not self.is_attached:
            return
        shows = self._shows()
        if shows == self._shown:
            return
        self._shown = shows
        await super().recompose()
        self._fit_keys()

    def on_resize(self) -> None:
        self._fit_keys()

    def _fit_keys(self) -> None:
        """Show the keys that fit whole left of the palette's key, in their order, the help key always (it
        lists the others); hide the others."""
        keys = [child for child in self.children if isinstance(child, FooterKey)]
        kept = [key for key in keys if key.has_class(PALETTE) or key.action.rsplit(".", 1)[-1] == "help"]
        room = self.size.width - sum(self._width(key) for key in kept)
        used = 0
        for key in keys:
            if key in kept:
                continue
            used += self._width(key)
            key.display = used - key.styles.margin.right <= room  # the last key's margin may be cut

    def _width(self, key: FooterKey) -> int:
        """The columns `key` takes in the footer, its margins included."""
        content = key.get_content_width(self.size, self.app.size)
        return content + key.styles.gutter.width + key.styles.margin.width
