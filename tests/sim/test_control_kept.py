"""What `/sim/control` changed outlives a restart: a SIGHUP-style restart replays it on the config it
re-reads, and with `--control-file` a sim started again (after it died) has it too."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.sim.conftest import write_vllm_config
from tui.sim.server import SimServer

ADVISOR_EXAMPLE = [0.85, 0.05]  # README's: k=1 gets faster than k=2


async def test_a_restart_keeps_the_control_changes(tmp_path: Path) -> None:
    config = write_vllm_config(tmp_path / "config.toml", k=2)
    async with SimServer(config_path=config) as sim, httpx.AsyncClient(base_url=sim.base_url) as client:
        sim.restart_down_s = 0.0
        answer = await client.post("/sim/control", json={"acceptance": ADVISOR_EXAMPLE, "speed": 2.0})
        assert answer.status_code == 200
        await client.post("/sim/control", json={"reset_counters": True})
        write_vllm_config(config, k=1)  # the guard's change: one draft token
        await sim.restart()
        assert sim.behaviour is not None and sim.behaviour.k == 1
        assert sim.behaviour.acceptance[:2] == ADVISOR_EXAMPLE and sim.behaviour.speed == 2.0
        await sim.restart()  # a factor is replayed on the fresh config, never applied twice
        assert sim.behaviour.acceptance[:2] == ADVISOR_EXAMPLE


async def test_a_control_file_carries_the_changes_to_a_new_process(tmp_path: Path) -> None:
    config = write_vllm_config(tmp_path / "config.toml", k=2)
    kept = tmp_path / "control.json"
    async with SimServer(config_path=config, control_file=kept) as sim:
        default = list(sim.behaviour.acceptance[:2]) if sim.behaviour else []
        sim.control(acceptance=ADVISOR_EXAMPLE)
        sim.control(acceptance=0.5, reset_counters=True)
    kept_bodies = json.loads(kept.read_text(encoding="utf-8"))
    assert kept_bodies == [{"acceptance": ADVISOR_EXAMPLE}, {"acceptance": 0.5}]  # no reset_counters
    async with SimServer(config_path=config, control_file=kept) as again:
        assert again.behaviour is not None
        assert again.behaviour.acceptance[:2] == pytest.approx([0.425, 0.025])
    async with SimServer(config_path=config) as fresh:  # no file: the config's acceptance
        assert fresh.behaviour is not None and fresh.behaviour.acceptance[:2] == default


def test_a_broken_control_file_is_an_error_naming_it(tmp_path: Path) -> None:
    kept = tmp_path / "control.json"
    kept.write_text('[{"acceptanc": 0.5}]', encoding="utf-8")
    with pytest.raises(ValueError, match=r"control\.json: unknown key 'acceptanc'"):
        SimServer(control_file=kept)
