"""A small App hosting the config editor screen for `spectop edit FILE`."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import httpx
from textual.binding import BindingType

from tui.configs.restart import HEALTH_TIMEOUT_S
from tui.screens.editor import EditorScreen
from tui.ui.base import SpectopBase, app_bindings
from tui.ui.terminal_guard import exit_on_signals, restore_signals

HTTP_TIMEOUT_S = 5.0


class EditorApp(SpectopBase[None]):
    TITLE = "spectop edit"
    BINDINGS: ClassVar[list[BindingType]] = app_bindings("quit (asks when there are unsaved changes)")

    def __init__(
        self,
        path: Path,
        *,
        kind: str | None = None,
        restart_command: list[str] | None = None,
        health_url: str | None = None,
        log_file: Path | None = None,
        health_timeout_s: float = HEALTH_TIMEOUT_S,
    ) -> None:
        super().__init__()
        self.path = path
        self.kind = kind
        self.restart_command = restart_command
        self.health_url = health_url
        self.log_file = log_file
        self.health_timeout_s = health_timeout_s
        # Every spectop App provides one client; the editor uses it for the /health wait.
        self.http_client = httpx.AsyncClient(timeout=HTTP_TIMEOUT_S)

    def on_mount(self) -> None:
        exit_on_signals(self)
        screen = EditorScreen(
            self.path,
            kind=self.kind,
            restart_command=self.restart_command,
            health_url=self.health_url,
            log_file=self.log_file,
            health_timeout_s=self.health_timeout_s,
            client=self.http_client,
            keep_recovery_note=self.keep_recovery_note,
        )
        self.push_screen(screen, lambda _result: self.exit())

    async def on_unmount(self) -> None:
        restore_signals(self)
        await self.http_client.aclose()
