"""The advisor's word on context: the window's prompt length (the engine's prompt-length histogram) past
where a kept tune found speculation stops paying, significantly, says "at this context, k=0"."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests.sim.conftest import burst, write_vllm_config
from tui.advice.live import KeptModels, advice_for, read_context_findings
from tui.bench.prompts import load_prompt_set
from tui.sim.server import SimServer
from tui.telemetry.figures import Figures
from tui.telemetry.scraper import scrape_metrics
from tui.telemetry.window import figures_between
from tui.tune.result import ContextStop, TuneResult, save_tune

URL = "http://127.0.0.1:8000"


def kept_tune(folder: Path, *, significant: bool = True, endpoint: str = URL) -> None:
    result = TuneResult(
        started_at=datetime(2026, 12, 5, 17, 0, tzinfo=UTC), config_file="c.toml", kind="vllm",
        key="speculative.num_speculative_tokens", endpoint=endpoint, restart_command=["true"], values=[0, 2],
        concurrencies=[1, 8], original_value=2, baseline_value=0, requests=8, max_tokens=24, prompts="mixed",
        prompt_tokens=[256, 4096, 16384],
        context_stops=[
            ContextStop(concurrency=1, prompt_tokens=16384, pays_up_to=4096, significant=significant),
            ContextStop(concurrency=8, prompt_tokens=4096, pays_up_to=256, significant=significant),
        ],
    )  # fmt: skip
    save_tune(result, folder)


def advice_line(folder: Path, prompt_tokens: float | None, running: float = 1.0, url: str = URL) -> str:
    kept = KeptModels(contexts=read_context_findings(folder))
    figures = Figures(per_position_acceptance=[0.8, 0.6], running=running, prompt_tokens_mean=prompt_tokens)
    return advice_for(figures, url, None, kept, current_k=2).line()


def test_past_the_tuned_stop_the_advice_is_k0_with_where_it_came_from(tmp_path: Path) -> None:
    kept_tune(tmp_path)
    assert advice_line(tmp_path, 18_000) == (
        "k=2 now · at this context (18,000 prompt tokens), k=0: speculation stops paying from 16,384 at c=1 "
        "(tune 2026-12-05)"
    )
    assert "from 4,096 at c=8" in advice_line(tmp_path, 5_000, running=7)  # the load nearest the window's


@pytest.mark.parametrize(
    ("prompt_tokens", "significant", "url"),
    [
        (8_000, True, URL),  # shorter than the stop at this load
        (None, True, URL),  # unknown (llama.cpp has no prompt lengths): nothing said
        (18_000, False, URL),  # the tune's stop was within noise
        (18_000, True, "http://127.0.0.1:9000"),  # another server's tune
    ],
)
def test_nothing_is_said_unless_the_window_is_past_a_significant_stop_of_this_server(
    tmp_path: Path, prompt_tokens: float | None, significant: bool, url: str
) -> None:
    kept_tune(tmp_path, significant=significant)
    assert "at this context" not in advice_line(tmp_path, prompt_tokens, url=url)


@pytest.mark.parametrize("flavor", ["vllm", "sglang", "llamacpp"])
async def test_the_window_reads_the_prompt_length_from_the_engines_histogram(
    tmp_path: Path, flavor: str
) -> None:
    config = write_vllm_config(tmp_path / "config.toml", k=2, sim="speed = 4.0")
    prompts = [p.completion_text() for p in load_prompt_set("chat@3000").prompts[:4]]
    async with SimServer(flavor=flavor, config_path=config) as sim, httpx.AsyncClient() as http:
        first = await scrape_metrics(http, sim.base_url + "/metrics")
        await burst(sim, prompts, max_tokens=8, concurrency=2)
        last = await scrape_metrics(http, sim.base_url + "/metrics")
    figures = figures_between(first, last)
    if flavor == "llamacpp":
        assert figures.prompt_tokens_mean is None
        assert "no per-request prompt lengths" in figures.notes["prompt_tokens_mean"]
    else:
        assert figures.prompt_tokens_mean == pytest.approx(3000, rel=0.1)
