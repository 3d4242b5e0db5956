"""Per-request figures in the sim's responses agree with its /metrics to the token and with the model.

vLLM: `metrics` (final usage chunk / body) behind `--per-request-spec-decode-metrics` and
`--enable-per-request-metrics`; llama.cpp: `timings`; SGLang: native `POST /generate` with `meta_info`.
Steps that draft different lengths (a per-batch-size table, adaptive steps): vLLM's histogram per draft
length and `detailed` arrays follow each step's own draft; SGLang's proposed drafts count what was proposed.
"""

from __future__ import annotations

import itertools
import math
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.sim.conftest import chat_bodies, generate_body, grew, post_all, scrape, write_vllm_config
from tui.bench.server_figures import figures_from_body
from tui.cli import main
from tui.sim import server as sim_server
from tui.sim.engine import SimRequest, StepRecord
from tui.sim.per_request import ResponseOptions, StepLog, sglang_meta_info, vllm_metrics
from tui.sim.server import SimServer

ACCEPTANCE = [0.8, 0.6, 0.5]
CHAT = "/v1/chat/completions"
ALL_FIGURES = ResponseOptions(spec_metrics="summary", timing_metrics=True, prompt_tokens_details=True)


def _config(tmp_path: Path) -> Path:
    return write_vllm_config(tmp_path / "config.toml", k=3, sim="content_effect = 0.0\nspeed = 4.0")


async def test_vllm_metrics_ride_the_final_usage_chunk_and_sum_to_the_counters(tmp_path: Path) -> None:
    async with SimServer(
        flavor="vllm", config_path=_config(tmp_path), acceptance=ACCEPTANCE, responses=ALL_FIGURES
    ) as sim:
        before = await scrape(sim.base_url)
        responses = await post_all(sim.base_url, CHAT, chat_bodies(40, 120, stream=True))
        after = await scrape(sim.base_url)
    specs = []
    for events in responses:
        with_metrics = [event for event in events if "metrics" in event]
        assert len(with_metrics) == 1 and with_metrics[0] is events[-1] and events[-1]["choices"] == []
        metrics = with_metrics[0]["metrics"]
        assert metrics["time_to_first_token_ms"] >= 0 and metrics["queue_time_ms"] >= 0
        assert metrics["generation_time_ms"] > 0 and metrics["mean_itl_ms"] > 0
        spec = metrics["speculative_decoding"]
        assert spec["num_spec_tokens"] == 3 and spec["num_draft_tokens"] == 3 * spec["num_spec_steps"]
        assert sum(spec["acceptance_histogram"]) == spec["num_spec_steps"]
        accepted = sum(j * n for j, n in enumerate(spec["acceptance_histogram"]))
        assert accepted == spec["num_accepted_draft_tokens"]
        assert spec["acceptance_histogram_by_draft_length"] == {"3": spec["acceptance_histogram"]}
        mean_length = 1 + spec["num_accepted_draft_tokens"] / spec["num_spec_steps"]
        assert math.isclose(spec["mean_acceptance_length"], mean_length)
        assert events[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] >= 0
        specs.append(spec)

    def delta(name: str) -> float:
        return grew(before, after, f"vllm:spec_decode_num_{name}_total")

    assert sum(s["num_draft_tokens"] for s in specs) == delta("draft_tokens")
    assert sum(s["num_accepted_draft_tokens"] for s in specs) == delta("accepted_tokens")
    assert sum(s["num_spec_steps"] for s in specs) == delta("drafts")


async def test_vllm_metrics_are_off_by_default_and_in_the_body_when_not_streaming(tmp_path: Path) -> None:
    async with SimServer(flavor="vllm", config_path=_config(tmp_path)) as sim:
        plain = await post_all(sim.base_url, CHAT, chat_bodies(1, 120, stream=True))
    assert all("metrics" not in event for event in plain[0])
    assert plain[0][-1]["usage"]["prompt_tokens_details"] is None
    detailed = ResponseOptions(spec_metrics="detailed")
    async with SimServer(flavor="vllm", config_path=_config(tmp_path), responses=detailed) as sim:
        bodies = await post_all(sim.base_url, CHAT, chat_bodies(3, 120))
    for body in bodies:
        spec = body["metrics"]["speculative_decoding"]
        assert "time_to_first_token_ms" not in body["metrics"]  # timing needs its own flag
        assert len(spec["per_step_accepted"]) == spec["num_spec_steps"]
        assert sum(spec["per_step_accepted"]) == spec["num_accepted_draft_tokens"]
        assert sum(spec["per_step_drafted"]) == spec["num_draft_tokens"]


async def test_llamacpp_timings_sum_to_the_counters(tmp_path: Path) -> None:
    async with SimServer(flavor="llamacpp", config_path=_config(tmp_path), acceptance=ACCEPTANCE) as sim:
        before = await scrape(sim.base_url)
        responses = await post_all(sim.base_url, CHAT, chat_bodies(20, 120, stream=True))
        after = await scrape(sim.base_url)
    timings = [events[-1]["timings"] for events in responses]
    drafted = sum(t["draft_n"] for t in timings)
    accepted = sum(t["draft_n_accepted"] for t in timings)
    assert drafted == grew(before, after, "llamacpp:spec_decode_num_draft_tokens_total")
    assert accepted == grew(before, after, "llamacpp:spec_decode_num_accepted_tokens_total")
    for events, t in zip(responses, timings, strict=True):
        assert events[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] == t["cache_n"]


async def test_sglang_native_generate_streams_meta_info_that_sums_to_the_counters(tmp_path: Path) -> None:
    async with SimServer(flavor="sglang", config_path=_config(tmp_path), acceptance=ACCEPTANCE) as sim:
        before = await scrape(sim.base_url)
        streamed = [generate_body(i, 100, True, stream=True) for i in range(12)]
        *streams, body = await post_all(sim.base_url, "/generate", [*streamed, generate_body(99, 100, True)])
        after = await scrape(sim.base_url)
    verify = 0
    for events in streams:
        texts = [event["text"] for event in events]
        assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(texts))
        assert [e["meta_info"]["finish_reason"] for e in events[:-1]] == [None] * (len(events) - 1)
        meta = events[-1]["meta_info"]
        assert meta["finish_reason"] == {"type": "length", "length": 100}
        assert meta["completion_tokens"] == 100 and meta["cached_tokens"] >= 0 and meta["e2e_latency"] > 0
        assert sum(meta["spec_correct_drafts_histogram"]) == meta["spec_verify_ct"]
        assert meta["spec_num_proposed_drafts"] == 3 * meta["spec_verify_ct"]
        mean_length = 1 + meta["spec_num_correct_drafts"] / meta["spec_verify_ct"]
        assert math.isclose(meta["spec_accept_length"], mean_length)
        verify += meta["spec_verify_ct"]
    verify += body["meta_info"]["spec_verify_ct"]
    assert body["meta_info"]["completion_tokens"] == 100 and body["text"]
    assert verify == grew(before, after, "sglang:spec_verify_calls_total")


def test_cli_flags_turn_the_figures_on(monkeypatch: pytest.MonkeyPatch) -> None:
    served: list[SimServer] = []

    async def serve(server: SimServer, parent_pid: int | None = None) -> int:
        served.append(server)
        return 0

    monkeypatch.setattr(sim_server, "serve_until_signalled", serve)
    flags = ["--per-request-spec-decode-metrics", "summary", "--enable-per-request-metrics"]
    assert main(["sim", "--flavor", "vllm", *flags, "--enable-prompt-tokens-details"]) == 0
    assert [server.responses for server in served] == [ALL_FIGURES]


STEPS = [(1, 1), (2, 3), (0, 1), (3, 3)]  # (accepted, drafted) per verification step


def _request_and_log() -> tuple[SimRequest, StepLog]:
    request = SimRequest(
        request_id="r", number=0, endpoint="chat", prompt_tokens=4, hashes=[],
        max_tokens=16, max_tokens_given=True, output=[], natural_stop=False, stop_reason=None,
        acceptance=[0.5] * 3, rng=random.Random(0), arrival=0.0, not_before=0.0,
        accepted_per_pos=[0, 0, 0],
    )  # fmt: skip
    log = StepLog()
    for accepted, drafted in STEPS:
        request.drafted += drafted
        request.accepted += accepted
        request.verify_steps += 1
        for position in range(accepted):
            request.accepted_per_pos[position] += 1
        record = StepRecord(request, accepted + 1, drafted, accepted, False, 0.0)
        log.step_done(SimpleNamespace(decode_records=[record]))  # type: ignore[arg-type]
    return request, log


def test_vllm_histograms_per_draft_length_and_sglangs_proposed_drafts_follow_each_step() -> None:
    request, log = _request_and_log()
    spec = vllm_metrics(request, ResponseOptions(spec_metrics="detailed"), log)["speculative_decoding"]
    assert spec["acceptance_histogram_by_draft_length"] == {"1": [1, 1], "3": [0, 0, 1, 1]}
    assert spec["per_step_drafted"] == [1, 3, 1, 3] and spec["num_draft_tokens"] == 8
    figures = figures_from_body({"metrics": {"speculative_decoding": spec}})
    assert figures.histograms_by_length == {1: [1, 1], 3: [0, 0, 1, 1]} and figures.k_in_effect == 2.0
    meta = sglang_meta_info(request, "r", details=True)
    assert (meta["spec_num_proposed_drafts"], meta["spec_num_correct_drafts"]) == (8, 6)
    figures = figures_from_body({"text": "x", "meta_info": meta})
    assert figures.figures_note is None and figures.acceptance_histogram == [1, 1, 1, 1]
    assert figures.histograms_by_length is None  # mixed lengths: SGLang does not say which
