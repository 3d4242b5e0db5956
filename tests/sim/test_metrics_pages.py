"""Every flavour's /metrics parses with prometheus_client and has the reference's names, HELP and buckets."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from tests.sim.conftest import chat_bodies, post_all, samples, value, write_vllm_config
from tui.sim.server import SimServer

REFERENCE = Path("/work/shared/reference/samples")


def _help_lines(text: str) -> set[str]:
    return {line for line in text.splitlines() if line.startswith(("# HELP", "# TYPE"))}


def _bucket_bounds(text: str, name: str) -> list[str]:
    first_series: list[str] = []
    for line in text.splitlines():
        if line.startswith(name + "_bucket{"):
            bound = re.search(r'le="([^"]+)"', line)
            assert bound is not None
            if first_series and bound.group(1) == first_series[0]:
                break
            first_series.append(bound.group(1))
    return first_series


async def _page(base_url: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=5.0) as client:
        return await client.get(base_url + "/metrics")


async def _page_after_traffic(sim: SimServer) -> httpx.Response:
    await post_all(sim.base_url, "/v1/chat/completions", chat_bodies(3, 30))
    return await _page(sim.base_url)


def _same_buckets(text: str, reference: str, *histograms: str) -> None:
    for histogram in histograms:
        assert _bucket_bounds(text, histogram) == _bucket_bounds(reference, histogram), histogram


async def test_vllm_page_matches_reference_families() -> None:
    reference = (REFERENCE / "vllm" / "metrics_t1.txt").read_text()
    async with SimServer(flavor="vllm") as sim:
        response = await _page_after_traffic(sim)
    text = response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    page = samples(text)  # parses
    missing = {line for line in _help_lines(reference) if "vllm:" in line} - _help_lines(text)
    assert not missing, f"HELP/TYPE lines differ from the reference: {sorted(missing)[:5]}"
    names = ("time_to_first_token_seconds", "inter_token_latency_seconds", "e2e_request_latency_seconds")
    _same_buckets(text, reference, *(f"vllm:{name}" for name in (*names, "iteration_tokens_total")))
    labels = page["vllm:generation_tokens_total"][0][0]
    assert labels == {"engine": "0", "model_name": sim.model}
    assert value(page, "vllm:request_success_total", finished_reason="length") == 3
    assert value(page, "vllm:generation_tokens_total") == 90
    assert value(page, "vllm:time_to_first_token_seconds_count") == 3
    assert "python_gc_objects_collected_total" in page and "process_cpu_seconds_total" in page
    assert value(page, "http_requests_total", handler="/v1/chat/completions", status="2xx") == 3


async def test_sglang_page_matches_reference_families() -> None:
    reference = (REFERENCE / "sglang" / "metrics_t1.txt").read_text()
    async with SimServer(flavor="sglang", config_path=Path("sample_configs/sglang_settings.json")) as sim:
        text = (await _page_after_traffic(sim)).text
    page = samples(text)
    assert _help_lines(reference) <= _help_lines(text)
    names = ("time_to_first_token_seconds", "inter_token_latency_seconds", "e2e_request_latency_seconds")
    names += ("per_stage_req_latency_seconds", "queue_time_seconds", "prompt_tokens_histogram")
    _same_buckets(text, reference, *(f"sglang:{name}" for name in names))
    # multiprocess exposition: _sum before the buckets, no _created series
    sum_at = text.index("sglang:time_to_first_token_seconds_sum")
    assert sum_at < text.index("sglang:time_to_first_token_seconds_bucket")
    assert "_created" not in text
    assert value(page, "sglang:num_requests_total") == 3
    assert value(page, "sglang:generation_tokens_total") == 90
    # SGLang's ITL histogram is per token: its count is every token after the first
    assert value(page, "sglang:inter_token_latency_seconds_count") == 3 * 29
    assert len(page["sglang:max_total_num_tokens"]) == 8  # one series per TP rank (tp_size 8)
    assert value(page, "sglang:spec_num_steps", tp_rank="0") == 3


async def test_llamacpp_page_is_exactly_the_real_format(tmp_path: Path) -> None:
    reference = (REFERENCE / "llamacpp" / "metrics_t1.txt").read_text().split("\n\n", 1)[1]
    config = write_vllm_config(tmp_path / "config.toml", k=8, gpu_memory_utilization=0.8)
    async with SimServer(flavor="llamacpp", config_path=config) as sim:
        before = (await _page(sim.base_url)).text
        response = await _page_after_traffic(sim)
    text = response.text
    assert response.headers["content-type"] == "text/plain; version=0.0.4"
    assert "Process-Start-Time-Unix" in response.headers
    samples(text)
    assert "per_pos" not in before  # absent until the first speculative request finished
    reference_help = _help_lines(reference)
    assert _help_lines(text) == reference_help
    assert [line.split()[0] for line in text.splitlines() if not line.startswith("#")][:15] == [
        line.split()[0] for line in reference.splitlines() if line and not line.startswith("#")
    ][:15]
    assert "llamacpp:tokens_predicted_total 90\n" in text
