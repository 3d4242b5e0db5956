"""The fallback guard (`auto`) in the dashboard switches speculation off on a real vLLM whose draft is
random (acceptance near 0): the sustained low-acceptance alert, the edit (`enabled = false`), the restart
through the restart script, and the server then answering without speculation (its own responses say so).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from llama_spectop import dashboard
from vllm_managed import make_managed
from vllm_models import VllmModels
from vllm_workload import completion, steady_load

from tui.advice.guard import ACTION_WORDS

SWITCHED_OFF = f"guard {ACTION_WORDS['switched_off']}:"
FAILED = f"guard {ACTION_WORDS['failed']}:"


async def test_auto_guard_switches_speculation_off_on_a_real_vllm(
    vllm_python: Path, vllm_models: VllmModels, tmp_path: Path
) -> None:
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
