"""A small App hosting the config editor screen for `spectop edit FILE`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import httpx
from textual.binding import BindingType

from tui.screens.editor import EditorScreen
from tui.ui.base import SpectopBase, app_bindings
from tui.ui.terminal_guard import exit_on_signals, restore_signals

HTTP_TIMEOUT_S = 5.0


class EditorApp(SpectopBase[None]):
    TITLE = "spectop edit"
    BINDINGS: ClassVar[list[BindingType]] = app_bindings("quit (asks when there are unsaved changes)")

    def __init__(self, path: Path, **screen_options: Any) -> None:
        """`screen_options`: EditorScreen's (kind, restart_command, health_url, log_file, health timeout)."""
        super().__init__()
        self.path = path
        self.screen_options = screen_options
        # Every spectop App provides one client; the editor uses it for the /health wait.
        self.http_client = httpx.AsyncClient(timeout=HTTP_TIMEOUT_S)

    def on_mount(self) -> None:
        exit_on_signals(self)
        options: dict[str, Any] = {"client": self.http_client, "keep_recovery_note": self.keep_recovery_note}
        screen = EditorScreen(self.path, **options, **self.screen_options)
        self.push_screen(screen, lambda _result: self.exit())

    async def on_unmount(self) -> None:
        restore_signals(self)
        await self.http_client.aclose()
