"""The config editor on a real vLLM: `config.toml` rendered as CLI flags (`spectop config launch`) starts
vLLM; `e` on the card, k 2 → 1, ctrl+r saves and runs the restart script; the dashboard waits for the
new process and then shows what the server reports for k = 1 (one draft position); the server's own
answers say k = 1.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from llama_spectop import dashboard
from vllm_managed import make_managed
from vllm_models import VllmModels
from vllm_workload import served_k, steady_load

from tui.screens.editor import EditorScreen
from tui.widgets.config_dialogs import ConfirmDialog, DiffDialog, RestartDialog
from tui.widgets.edit_mode import FieldInput


async def test_editor_save_and_restart_on_a_real_vllm_started_from_cli_flags(
    vllm_python: Path, vllm_models: VllmModels, tmp_path: Path
) -> None:
    server = make_managed(tmp_path / "bed", vllm_python, vllm_models, k=2, fmt="cli")
    try:
        await asyncio.to_thread(server.start)  # the CLI rendering of config.toml starts vLLM
        assert await asyncio.to_thread(served_k, server.url) == 2
        app = dashboard(server.settings("edited", 8.0, 30.0))
        with steady_load([server.url], concurrency=1):
            async with app.run_test(size=(100, 30)) as pilot:

                def positions() -> int | None:
                    reading = app.readings.get("edited")
                    per_position = reading.figures.per_position_acceptance if reading else None
                    return len(per_position) if per_position else None

                await server.until_served(pilot, lambda: positions() == 2, "two draft positions on the card")
                await pilot.press("e")
                await server.until_served(
                    pilot,
                    lambda: isinstance(app.screen, EditorScreen) and app.screen.loaded,
                    "the editor",
                )
                editor = app.screen
                assert isinstance(editor, EditorScreen)
                field = editor.query_one("#field-speculative--num_speculative_tokens Input", FieldInput)
                field.focus()
                await pilot.press("i")  # a field takes text only in edit mode (htop/k9s keys otherwise)
                await server.until_served(pilot, lambda: field.editing, "the field in edit mode")
                field.value = ""
                await pilot.press("1", "enter")
                assert field.value == "1"
                await pilot.press("ctrl+r")
                await server.until_served(
                    pilot, lambda: isinstance(app.screen, DiffDialog | ConfirmDialog), "the diff"
                )

                def confirmed() -> bool:
                    return isinstance(app.screen, RestartDialog)

                while not confirmed():
                    if isinstance(app.screen, DiffDialog | ConfirmDialog):
                        await pilot.press("y")
                    await server.until_served(
                        pilot,
                        lambda: confirmed() or isinstance(app.screen, DiffDialog | ConfirmDialog),
                        "the restart dialog",
                    )
                dialog = app.screen
                status = dialog.query_one("#restart-status")

                def restart_status() -> str:
                    return str(status.render())

                await server.until_served(
                    pilot,
                    lambda: "✓" in restart_status() or "✗" in restart_status(),
                    "the restart's outcome",
                )
                assert "✓" in restart_status(), restart_status()
                await pilot.press("escape")
                # The card's figures after the restart: one draft position (k = 1), from the new server.
                await server.until_served(
                    pilot, lambda: positions() == 1, "one draft position after the restart"
                )
        assert "num_speculative_tokens = 1" in server.config.read_text()
        assert server.restarts() == [2, 1]
        assert await asyncio.to_thread(served_k, server.url) == 1
    finally:
        server.stop()
