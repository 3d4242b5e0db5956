"""The behaviour model: speculation speeds decoding up at low load, less at high load; greedy output is
identical with speculation on and off, and differs in lossy mode; content changes acceptance; queueing.
The toy tokenizer covers the text, greedy generation is a function of the prompt, stop strings cut it.
Context: acceptance falls with the prompt's length and every verified token attends to the context, so
speculation's gain shrinks with context and, set so, turns into a loss."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.sim.conftest import client_for, post_all, scrape, scrape_until, speedup, value, write_vllm_config
from tui.bench.prompts import load_prompt_set
from tui.sim.behaviour import Behaviour, expected_tokens_per_step
from tui.sim.config import load_sim_config
from tui.sim.engine import _apply_stop
from tui.sim.faults import FaultSettings
from tui.sim.server import SimServer
from tui.sim.tokens import content_factor, count_tokens, generate, tokenize

PROMPTS = [
    "Implement a thread-safe LRU cache in Python with expiry.",
    "Explain the history of the printing press to a child.",
    "def parse(line):\n    key, _, value = line.partition('=')\n    return key.strip(), value.strip()\n",
    "List three reasons why the sky looks blue.",
]


async def test_speculation_gain_shrinks_with_concurrency(tmp_path: Path) -> None:
    on = write_vllm_config(tmp_path / "on.toml", k=2)
    off = write_vllm_config(tmp_path / "off.toml", k=2, enabled=False)
    gain_low = await speedup(on, off, (PROMPTS * 2)[:6], max_tokens=128, concurrency=1)
    gain_high = await speedup(on, off, PROMPTS * 16, max_tokens=128, concurrency=32)
    assert gain_low > 1.4
    assert 1.0 < gain_high < gain_low


async def _greedy_outputs(config: Path, faults: FaultSettings | None = None) -> list[str]:
    async with SimServer(config_path=config, faults=faults, speed=10.0) as sim:  # the text is speed-blind
        client = client_for(sim.base_url)
        outputs = []
        for prompt in PROMPTS:
            result = await client.chat.completions.create(
                model=sim.model, messages=[{"role": "user", "content": prompt}], max_tokens=96, temperature=0
            )
            outputs.append(result.choices[0].message.content or "")
        return outputs


async def test_greedy_identical_on_and_off_but_not_in_lossy_mode(tmp_path: Path) -> None:
    on = write_vllm_config(tmp_path / "on.toml", k=3)
    off = write_vllm_config(tmp_path / "off.toml", enabled=False)
    reference = await _greedy_outputs(off)
    assert await _greedy_outputs(on) == reference
    lossy = await _greedy_outputs(on, FaultSettings(lossy_rate=0.2))
    assert lossy != reference
    assert all(len(a) > 0 for a in lossy)


def test_code_and_repetition_accept_more_than_prose() -> None:
    code = "for item in items:\n    if item.key in cache:\n        result.append(cache[item.key])\n"
    repeated = "the cat sat on the mat. the cat sat on the mat. the cat sat on the mat."
    prose = "Describe how a glacier shapes a valley over many thousands of years, with examples."
    assert content_factor(code) > content_factor(prose)
    assert content_factor(repeated) > content_factor(prose)
    assert content_factor(code, effect=0.0) == content_factor(prose, effect=0.0) == 1.0


async def test_requests_beyond_max_num_seqs_wait(tmp_path: Path) -> None:
    config = write_vllm_config(tmp_path / "c.toml", max_num_seqs=2, sim="step_base_ms = 10.0")
    async with SimServer(config_path=config) as sim:
        bodies = [
            {"prompt": f"p{i}", "max_tokens": 300, "temperature": 0, "ignore_eos": True} for i in range(6)
        ]
        job = asyncio.create_task(post_all(sim.base_url, "/v1/completions", bodies))
        page = await scrape_until(  # until all six have arrived
            sim.base_url,
            lambda page: (
                value(page, "vllm:num_requests_running") + value(page, "vllm:num_requests_waiting") == 6
            ),
        )
        assert value(page, "vllm:num_requests_running") == 2
        assert value(page, "vllm:num_requests_waiting") == 4
        sim.control(speed=50.0)  # the queue seen: the rest at once
        await job
        page = await scrape(sim.base_url)
        assert value(page, "vllm:request_queue_time_seconds_count") == 6


async def test_ttft_higher_with_speculation_and_longer_prompts(tmp_path: Path) -> None:
    on = Behaviour.from_config(load_sim_config(write_vllm_config(tmp_path / "on.toml", k=2)))
    off = Behaviour.from_config(load_sim_config(write_vllm_config(tmp_path / "off.toml", enabled=False)))
    assert on.prefill_s(1000) > off.prefill_s(1000) > off.prefill_s(100)
    assert on.decode_step_s(1) > off.decode_step_s(1)
    assert off.decode_step_s(64) > off.decode_step_s(1)


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


@given(st.text(max_size=300))
def test_tokens_cover_the_text_exactly(text: str) -> None:
    assert "".join(tokenize(text)) == text
    assert count_tokens(text) == len(tokenize(text))


@given(st.text(min_size=1, max_size=80), st.integers(min_value=1, max_value=300))
@settings(max_examples=50)
def test_greedy_generation_is_a_function_of_the_prompt(prompt: str, max_tokens: int) -> None:
    first, natural = generate(prompt, max_tokens)
    second, _ = generate(prompt, max_tokens)
    assert first == second
    assert len(first) <= max_tokens
    assert natural == (len(first) < max_tokens)
    longer, _ = generate(prompt, max_tokens + 50, ignore_eos=True)
    assert longer[: len(first)] == first  # max_tokens only cuts, never changes, the text


@given(
    st.lists(st.sampled_from(["a", " b", " cd", "!", " ef"]), min_size=1, max_size=30),
    st.sampled_from(["b", "cd", "!", "d!", "a b", " "]),
)
def test_stop_strings_cut_before_the_match(tokens: list[str], stop: str) -> None:
    kept, reason = _apply_stop(list(tokens), [stop])
    text = "".join(tokens)
    if stop in text:
        assert reason == stop
        assert "".join(kept) == text[: text.index(stop)]
        assert len(kept) <= len(tokens)
    else:
        assert (kept, reason) == (tokens, None)
