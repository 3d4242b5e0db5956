"""`spectop sim` as a process (ready line, SIGTERM, SIGHUP restart and OOM exit), and sims side by side."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import httpx
import pytest

from tests.sim.conftest import chat_bodies, post_all, spawn_sim, write_vllm_config
from tui.cli import main
from tui.sim.server import SimServer

CHAT = "/v1/chat/completions"


def _wait(url: str, up: bool) -> None:
    """Until /health answers 200 (`up`) or refuses connections; the 30 s are a hang guard."""
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=1.0).status_code == 200 and up:
                return
        except httpx.ConnectError:
            if not up:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.02)
    pytest.fail(f"{url} never went {'up' if up else 'down'}")


def test_sigterm_stops_the_sim_cleanly_under_load(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    process, url = spawn_sim("--flavor", "sglang", "--log-file", str(log), "--background-load", "20")
    assert url.startswith("http://127.0.0.1:")
    assert httpx.get(url + "/health", timeout=2.0).status_code == 200
    process.send_signal(signal.SIGTERM)
    # Exit 0 with requests in flight (the sim caps its graceful shutdown at 1 s); the wait is a hang guard.
    assert process.wait(timeout=60) == 0
    assert "The server is fired up and ready to roll!" in log.read_text()


def test_sighup_restart_rereads_config_and_oom_exits(tmp_path: Path) -> None:
    config = write_vllm_config(tmp_path / "config.toml", k=2)
    log = tmp_path / "server.log"
    process, url = spawn_sim("--config", str(config), "--log-file", str(log))
    try:
        answer = httpx.post(url + "/v1/completions", json={"prompt": "x", "max_tokens": 20}, timeout=5.0)
        answer.raise_for_status()
        page = httpx.get(url + "/metrics", timeout=5.0).text
        assert "vllm:spec_decode_num_drafts_total" in page
        write_vllm_config(config, enabled=False)  # the user turns speculation off, then restarts
        process.send_signal(signal.SIGHUP)
        _wait(url, up=False)  # it goes down, then comes back
        _wait(url, up=True)
        page = httpx.get(url + "/metrics", timeout=5.0).text
        assert "vllm:spec_decode_num_drafts_total" not in page  # new settings applied
        assert 'vllm:generation_tokens_total{engine="0",model_name="deepseek-ai/DeepSeek-V3"} 0.0' in page
        assert log.read_text().count("Application startup complete.") == 2
        write_vllm_config(config, k=8, gpu_memory_utilization=0.95)
        process.send_signal(signal.SIGHUP)
        assert process.wait(timeout=10) == 1
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "torch.OutOfMemoryError" in log.read_text()
    assert process.stderr is not None and "out of memory" in process.stderr.read()


def test_startup_oom_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_vllm_config(tmp_path / "config.toml", k=8, gpu_memory_utilization=0.93)
    assert main(["sim", "--port", "0", "--config", str(config)]) == 1
    shown = capsys.readouterr()
    assert "out of memory" in shown.err and "listening" not in shown.out


async def test_many_sims_side_by_side() -> None:
    flavors = ["vllm", "sglang", "llamacpp"] * 5 + ["vllm"]
    sims = [SimServer(flavor=flavor, seed=index) for index, flavor in enumerate(flavors)]
    await asyncio.gather(*(sim.start() for sim in sims))
    try:
        assert len({sim.base_url for sim in sims}) == 16
        answers = await asyncio.gather(*(post_all(sim.base_url, CHAT, chat_bodies(1, 16)) for sim in sims))
        assert all(answer["usage"]["completion_tokens"] == 16 for (answer,) in answers)
        texts = {answer["choices"][0]["message"]["content"] for (answer,) in answers}
        assert len(texts) == 1  # greedy: same text
    finally:
        await asyncio.gather(*(sim.stop() for sim in sims))
