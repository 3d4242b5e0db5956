"""Bursts that explain themselves, against the simulator over real sockets."""

from __future__ import annotations

import math
from pathlib import Path

import httpx
import pytest

from tests.bench.bursts import burst_config
from tests.sim.conftest import spawn_sim, write_vllm_config
from tui.bench.engine import ArmTarget, BurstConfig, run_burst
from tui.bench.prompts import Prompt, PromptSet
from tui.bench.report.summary import burst_summary
from tui.sim.per_request import ResponseOptions
from tui.sim.server import SimServer

ACCEPTANCE = [0.8, 0.6, 0.5]
FIGURES = ResponseOptions(spec_metrics="summary", timing_metrics=True, prompt_tokens_details=True)
SIM = {"acceptance": ACCEPTANCE, "content_effect": 0.0, "speed": 4.0}


def _config(
    a: ArmTarget, b: ArmTarget | None, prompts: str | PromptSet = "mixed-en", **more: object
) -> BurstConfig:
    values = {"requests": 16, "concurrency": 4, "rounds": 2, "warmup": 1, "max_tokens": 96, **more}
    return burst_config(a, b, prompts, **values)


def _k3(tmp_path: Path) -> Path:
    return write_vllm_config(tmp_path / "k3.toml", k=3)


async def test_per_request_acceptance_agrees_with_the_model_and_metrics_exactly(
    tmp_path: Path, client: httpx.AsyncClient
) -> None:
    async with SimServer(flavor="vllm", config_path=_k3(tmp_path), responses=FIGURES, **SIM) as sim:
        result = await run_burst(_config(ArmTarget("A", sim.base_url), None, requests=24), client)
    summary = burst_summary(result)
    explained = summary.a.explain
    assert explained is not None
    for request in result.arms[0].requests:
        server = request.server
        assert server is not None and server.source == "vllm"
        assert server.drafted == 3 * (server.spec_steps or 0) and server.acceptance_histogram is not None
        assert server.server_ttft_ms is not None and server.queue_ms is not None
    # Σ per-request equals the /metrics delta exactly: the burst was the only traffic.
    reconciliation = explained.reconciliation
    assert reconciliation is not None and reconciliation.exact, reconciliation
    assert reconciliation.ours_drafted == result.arms[0].server.draft_tokens
    # Pooled per-position acceptance from the histograms follows the model within binomial error.
    figures = explained.acceptance
    assert figures.per_position is not None and figures.requests == 24
    steps = sum(sum(r.server.acceptance_histogram or []) for r in result.arms[0].requests if r.server)
    chain = 1.0
    for position, p in enumerate(ACCEPTANCE):
        chain *= p
        assert abs(figures.per_position[position] - chain) < 4 * math.sqrt(chain * (1 - chain) / steps)
    expected_length = 1 + sum(math.prod(ACCEPTANCE[: i + 1]) for i in range(3))
    assert figures.mean_length is not None and abs(figures.mean_length - expected_length) < 0.25
    assert figures.p10 is not None and figures.p90 is not None and figures.p10 <= figures.p50 <= figures.p90
    # The built-in set's categories, each with acceptance and speed.
    rows = {row.category: row for row in explained.categories}
    assert set(rows) == {"code", "chat", "math", "prose"}
    assert all(row.acceptance is not None and row.decode_tokens_per_s for row in rows.values())


async def test_background_load_is_named_as_other_traffic(tmp_path: Path, client: httpx.AsyncClient) -> None:
    async with SimServer(
        flavor="vllm", config_path=_k3(tmp_path), responses=FIGURES, background_load_rps=40.0, **SIM
    ) as sim:
        result = await run_burst(_config(ArmTarget("A", sim.base_url), None, requests=8), client)
    reconciliation = burst_summary(result).a.explain.reconciliation  # type: ignore[union-attr]
    assert reconciliation is not None and not reconciliation.exact
    assert reconciliation.other_share is not None and 0.0 < reconciliation.other_share < 1.0
    assert "of drafts were not ours" in reconciliation.message and "other load" in reconciliation.message
    server = result.arms[0].server
    assert server.draft_tokens is not None and reconciliation.ours_drafted is not None
    assert math.isclose(reconciliation.other_share, 1 - reconciliation.ours_drafted / server.draft_tokens)


async def test_alternate_schedule_never_overlaps_the_arms(tmp_path: Path, client: httpx.AsyncClient) -> None:
    async with (
        SimServer(flavor="vllm", config_path=_k3(tmp_path), responses=FIGURES, **SIM) as a,
        SimServer(flavor="vllm", config_path=_k3(tmp_path), responses=FIGURES, **SIM) as b,
    ):
        config = _config(ArmTarget("A", a.base_url), ArmTarget("B", b.base_url), rounds=3, requests=12)
        assert config.schedule == "alternate"  # the default
        result = await run_burst(config, client)
    assert result.settings.schedule == "alternate"
    for number in range(3):
        spans = {}
        for arm in result.arms:
            requests = [r for r in arm.requests if r.round == number]
            spans[arm.label] = (
                min(r.sent_s for r in requests),
                max(r.sent_s + (r.e2e_s or 0) for r in requests),
            )
        first, second = sorted(spans.values())
        assert first[1] <= second[0], f"round {number}: arms overlapped {spans}"
    # Each arm keeps its rounds (for its energy on shared GPUs): its requests in them,
    # the other arm's never.
    a_rounds, b_rounds = (arm.phases_s for arm in result.arms)
    assert a_rounds is not None and b_rounds is not None and len(a_rounds) == len(b_rounds) == 3
    for (a_first, a_last), (b_first, b_last) in zip(a_rounds, b_rounds, strict=True):
        assert a_last <= b_first or b_last <= a_first
    for arm, rounds in zip(result.arms, (a_rounds, b_rounds), strict=True):
        for request in arm.requests:
            first, last = rounds[request.round]
            assert first <= request.sent_s <= last


async def test_cache_state_difference_is_named_and_priming_evens_it(
    tmp_path: Path, client: httpx.AsyncClient
) -> None:
    long = " ".join(f"word{i}" for i in range(120))
    prompts = PromptSet("long", tuple(Prompt(f"p{i}", (("user", f"{long} question {i}"),)) for i in range(6)))
    async with (
        SimServer(flavor="vllm", config_path=_k3(tmp_path), responses=FIGURES, **SIM) as a,
        SimServer(flavor="vllm", config_path=_k3(tmp_path), responses=FIGURES, **SIM) as b,
    ):
        warm = _config(ArmTarget("A", a.base_url), None, prompts=prompts, requests=6, warmup=0)
        await run_burst(warm, client)  # A has seen these prompts; B has not
        config = _config(
            ArmTarget("A", a.base_url), ArmTarget("B", b.base_url), prompts=prompts, requests=6, warmup=0,
            rounds=1,
        )  # fmt: skip
        uneven = burst_summary(await run_burst(config, client))
        await b.restart()
        await a.restart()
        config.prime_cache = True
        even = burst_summary(await run_burst(config, client))
    assert uneven.comparison is not None
    assert any("prefix cache differs" in warning for warning in uneven.comparison.warnings)
    assert "cache state, not speculation" in uneven.comparison.verdict
    assert uneven.a.explain and uneven.b.explain
    assert (uneven.a.explain.cache.share or 0) > (uneven.b.explain.cache.share or 0) + 0.1
    assert even.comparison is not None and not any("prefix cache" in w for w in even.comparison.warnings)
    assert even.a.explain and "prefix cache primed with the 6 prompts" in even.a.explain.notes


async def test_flush_cache_reaches_the_server(tmp_path: Path, client: httpx.AsyncClient) -> None:
    async with SimServer(flavor="sglang", config_path=_k3(tmp_path), **SIM) as sim:
        config = _config(ArmTarget("A", sim.base_url), None, requests=2, flush_cache=True)
        result = await run_burst(config, client)
    assert "prefix cache flushed (POST /flush_cache)" in result.arms[0].notes


async def test_one_url_two_request_bodies(tmp_path: Path, client: httpx.AsyncClient) -> None:
    async with SimServer(flavor="vllm", config_path=_k3(tmp_path), responses=FIGURES, **SIM) as sim:
        a = ArmTarget("A", sim.base_url, extra_body={"enable_speculative": True})
        b = ArmTarget("B", sim.base_url, extra_body={"enable_speculative": False})
        result = await run_burst(_config(a, b, requests=6), client)
    summary = burst_summary(result)
    assert summary.comparison is not None and summary.comparison.arms_differ_by is not None
    assert "request fields (enable_speculative), not by server" in summary.comparison.arms_differ_by
    assert result.arms[1].extra_body == {"enable_speculative": False}
    # Both arms read the same /metrics: the other arm's requests are ours there, so it reconciles.
    assert summary.a.explain and summary.a.explain.reconciliation and summary.a.explain.reconciliation.exact


async def test_sglang_native_api_reports_meta_info_per_request(
    tmp_path: Path, client: httpx.AsyncClient
) -> None:
    async with SimServer(flavor="sglang", config_path=_k3(tmp_path), **SIM) as sim:
        result = await run_burst(
            _config(ArmTarget("A", sim.base_url), None, api="sglang", requests=6), client
        )
    requests = result.arms[0].requests
    assert all(r.ok and r.output_tokens == 96 and not r.usage_estimated for r in requests)
    assert all(r.server and r.server.source == "sglang" and r.server.spec_steps for r in requests)
    assert all(r.text and r.finish_reason == "length" for r in requests)
    explained = burst_summary(result).a.explain
    assert explained is not None and explained.acceptance.pooled is not None
    assert explained.acceptance.per_position is not None
    # SGLang's page has no draft counters: the verification steps reconcile instead.
    assert explained.reconciliation is not None and explained.reconciliation.exact, explained.reconciliation
    assert "verification steps" in explained.reconciliation.message


@pytest.mark.parametrize("flavor", ["vllm", "llamacpp"])
def test_spectop_bench_prints_the_category_table_and_cache_verdict(
    flavor: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui.cli import main

    flags = ["--per-request-spec-decode-metrics", "summary", "--enable-prompt-tokens-details"]
    (a, a_url), (b, b_url) = spawn_sim("--flavor", flavor, *flags), spawn_sim("--flavor", flavor, *flags)
    try:
        prompts = tmp_path / "long.jsonl"
        long = " ".join(f"word{i}" for i in range(120))
        prompts.write_text(
            "\n".join(f'{{"prompt": "{long} q{i}", "category": "{"ab"[i % 2]}"}}' for i in range(4)),
            encoding="utf-8",
        )
        common = ["--prompts", str(prompts), "--requests", "4", "--max-tokens", "32", "--no-history"]
        bench = ["bench", *common, "--warmup", "0", "--a", a_url]
        assert main(bench) == 0  # A's cache now holds the prompts
        capsys.readouterr()
        code = main([*bench, "--b", b_url, "--rounds", "1"])
    finally:
        for process in (a, b):
            process.terminate()
            process.wait(timeout=10)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "category" in out and "A accept" in out and "\na " in out and "\nb " in out
    assert "prefix cache differs" in out and "cache state, not speculation" in out
    assert "accept/req p10/50/90" in out
