"""The dashboard on a real vLLM run from its `config.toml` through the restart script: the fallback guard
switches speculation off, and the config editor changes k and restarts it; each time the server's own
answers say what it runs now.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from llama_spectop import dashboard
from vllm_models import VllmModels
from vllm_server import make_managed
from vllm_workload import completion, served_k, steady_load

from tui.advice.guard import ACTION_WORDS
from tui.screens.editor import EditorScreen
from tui.widgets.config_dialogs import ConfirmDialog, DiffDialog, RestartDialog
from tui.widgets.edit_mode import FieldInput

SWITCHED_OFF = f"guard {ACTION_WORDS['switched_off']}:"
FAILED = f"guard {ACTION_WORDS['failed']}:"


async def test_auto_guard_switches_speculation_off_on_a_real_vllm(
    vllm_python: Path, vllm_models: VllmModels, tmp_path: Path
) -> None:
    """A random draft (acceptance near 0) under the guard `auto`: the sustained low-acceptance alert, the
    edit (`enabled = false`), the restart, and the server then answering without speculation."""
    server = make_managed(tmp_path / "bed", vllm_python, vllm_models, k=3, draft=vllm_models.random)
    try:
        await asyncio.to_thread(server.start)
        settings = server.settings("guarded", 10.0, 3.0, acceptance_threshold=0.5, guard="auto")
        app = dashboard(settings, record_path=tmp_path / "rec.jsonl")
        with steady_load([server.url], concurrency=1):
            async with app.run_test(size=(100, 30)) as pilot:

                def guard_actions() -> list[str]:
                    return [alert.message for alert in app.alerts.all_alerts() if alert.kind == "guard"]

                await server.until_served(
                    pilot,
                    lambda: any(m.startswith((SWITCHED_OFF, FAILED)) for m in guard_actions()),
                    "the guard's action",
                )
                actions = guard_actions()
                assert any(message.startswith(SWITCHED_OFF) for message in actions), actions
        text = server.config.read_text()
        assert "enabled = false" in text
        assert server.restarts() == [3, 0]
        # The server's own answer: no speculative decoding any more (no per-request spec figures).
        answer = await asyncio.to_thread(completion, server.url, "w5 w6 w7", 8)
        assert (answer.get("metrics") or {}).get("speculative_decoding") is None, answer["metrics"]
    finally:
        server.stop()


async def test_editor_save_and_restart_on_a_real_vllm_started_from_cli_flags(
    vllm_python: Path, vllm_models: VllmModels, tmp_path: Path
) -> None:
    """`config.toml` rendered as CLI flags (`spectop config launch`) starts vLLM; `e` on the card, k 2 → 1,
    ctrl+r saves and runs the restart script; the dashboard waits for the new process and then shows what
    the server reports for k = 1 (one draft position); the server's own answers say k = 1."""
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
