"""Context as an axis in the simulator: acceptance falls with the prompt's length and every verified
token attends to the context, so speculation's gain shrinks with context and, set so, turns into a loss."""

from __future__ import annotations

from pathlib import Path

from tests.sim.conftest import speedup, write_vllm_config
from tui.bench.prompts import load_prompt_set
from tui.sim.behaviour import Behaviour, expected_tokens_per_step
from tui.sim.config import load_sim_config

STEEP = {"context_half_tokens": 4096.0, "context_ms_per_1k": 0.2}


def model_speedup(behaviour: Behaviour, prompt_tokens: int, k: int) -> float:
    """The model's own decode speedup of k over speculation off at batch 1 and this prompt length."""
    accepted = expected_tokens_per_step(behaviour.request_acceptance("", 0.0, prompt_tokens)[:k])
    on = behaviour.decode_step_s(1, k) + behaviour.context_s(prompt_tokens, k)
    off = behaviour.decode_step_s(1, 0) + behaviour.context_s(prompt_tokens, 0)
    return accepted * off / on


def test_the_default_fall_off_is_modest_and_the_knobs_set_a_crossover(tmp_path: Path) -> None:
    behaviour = Behaviour.from_config(load_sim_config(write_vllm_config(tmp_path / "c.toml", k=2)))
    assert behaviour.context_factor(0) == 1.0
    assert 0.9 < behaviour.context_factor(4096) < 1.0 and 0.4 < behaviour.context_factor(65536) <= 0.5
    assert 1.0 < model_speedup(behaviour, 16384, 2) < model_speedup(behaviour, 256, 2)
    behaviour.context_half_tokens, behaviour.context_s_per_1k = 4096.0, 0.0002
    assert model_speedup(behaviour, 256, 2) > 1.3 and model_speedup(behaviour, 16384, 2) < 0.8


async def test_speculation_stops_paying_at_long_context_when_set_so(tmp_path: Path) -> None:
    on = write_vllm_config(tmp_path / "on.toml", k=2)
    off = write_vllm_config(tmp_path / "off.toml", k=2, enabled=False)
    short, long = (
        [p.completion_text() for p in load_prompt_set(f"prose@{tokens}").prompts[:4]]
        for tokens in (256, 16384)
    )
    assert await speedup(on, off, short, max_tokens=64, concurrency=1, **STEEP) > 1.3
    assert await speedup(on, off, long, max_tokens=64, concurrency=1, **STEEP) < 0.9
