"""The screens' footer: Textual's, recomposed only when the keys it shows changed.

Textual's `Footer` recomposes (one widget per key, each styled again) at every bindings change: focus
moving from one card to the next, a screen resuming, an action's check changing. The dashboard's
recomposed five times before its first frame with figures, about 10 ms of CPU each, to show the same
keys (tests/bench/bench_dashboard_first_frame.py).
"""

from __future__ import annotations

from textual.dom import NoScreen
from textual.widgets import Footer as TextualFooter


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
