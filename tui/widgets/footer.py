"""The bottom of a screen: Textual's footer, recomposed only when the keys it shows changed, and showing only
the keys that fit whole (the help key always: `?` lists them all); the filter / search box above it."""

from __future__ import annotations

from textual.dom import NoScreen
from textual.widgets import Footer as TextualFooter
from textual.widgets import Input
from textual.widgets._footer import FooterKey

PALETTE = "-command-palette"


class BottomInput(Input):
    """A filter or search box above the footer, shown by `/` (open) until enter or escape (close)."""

    DEFAULT_CSS = """
    BottomInput { dock: bottom; display: none; }
    BottomInput.visible { display: block; }
    """

    def __init__(self, placeholder: str, id: str) -> None:
        super().__init__(placeholder=placeholder, id=id, disabled=True)

    @property
    def is_open(self) -> bool:
        return self.has_class("visible")

    def open(self) -> None:
        self.disabled = False
        self.add_class("visible")
        self.focus()

    def close(self, *, clear: bool = False) -> None:
        if clear:
            self.value = ""
        self.remove_class("visible")
        self.disabled = True


class Footer(TextualFooter):
    _shown: tuple[object, ...] | None = None  # what the last compose showed

    def _shows(self) -> tuple[object, ...]:
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
        if not self.is_attached or (shows := self._shows()) == self._shown:
            return
        self._shown = shows
        await super().recompose()
        self._fit_keys()

    def on_resize(self) -> None:
        self._fit_keys()

    def _fit_keys(self) -> None:
        """Show the keys that fit whole left of the palette's key, the help key always."""
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
        content = key.get_content_width(self.size, self.app.size)
        return content + key.styles.gutter.width + key.styles.margin.width
