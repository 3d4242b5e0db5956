"""OpenAI-compatible stream shapes through `run_request`, each sent chunked by a real local HTTP server
(127.0.0.1, port 0), against every per-request figure the references give: the llama.cpp captures
(`samples/llamacpp/stream.txt`, `stream_chat_no_usage_draft_same.txt`, figures from the sample README and
per-request.md), SGLang's chunk shapes (sglang.md §4), and vLLM's own chunks (vllm.md §4, per-request.md)
with per-request.md's workload (43 steps, the acceptance histogram [39, 1, 0, 3] with k = 3:
1 + 39·1 + 1·2 + 3·4 = 54 tokens)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "telemetry"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from metrics_test_server import Reply, ReplyServer
from test_server_figures import VLLM_METRICS

from tui.bench.request import RequestSpec, RetryBudget, endpoint_url, run_request
from tui.bench.results import RequestResult


def sse(events: Sequence[dict[str, Any] | str]) -> bytes:
    """`data: <json>\\n\\n` per event; the stream always ends with `data: [DONE]\\n\\n` (vllm.md §4)."""
    parts = [f"data: {event if isinstance(event, str) else json.dumps(event)}\n\n" for event in events]
    return "".join(parts).encode() + b"data: [DONE]\n\n"


async def run_stream(body: bytes, api: str = "chat") -> RequestResult:
    """`body` (SSE text) sent chunked to one `run_request`, as a server streaming it would."""
    async with ReplyServer([Reply(body, chunked=True)]) as server:
        asked = {"model": "m", "stream": True, "stream_options": {"include_usage": True}}
        url = endpoint_url(server.url, api)
        spec = RequestSpec(url=url, body=asked, headers={}, arm="a", index=0, round=0, prompt_id="p0")
        async with httpx.AsyncClient() as client:
            return await run_request(
                client,
                spec,
                t0=time.perf_counter(),
                scheduled_s=0.0,
                timeout_s=10.0,
                max_retries=0,
                budget=RetryBudget(0),
            )


LLAMACPP = Path("/work/shared/reference/samples/llamacpp")


def _capture_body(name: str) -> bytes:
    raw = (LLAMACPP / name).read_bytes()
    return raw.split(b"\r\n\r\n", 1)[1] if raw.startswith(b"HTTP/") else raw


async def test_llamacpp_stream_capture_with_usage() -> None:
    """68 events: role chunk (`"content":null`), 64 one-token chunks, the `finish_reason` chunk, the
    `"choices":[]` usage chunk with `timings`, `[DONE]` (samples/llamacpp/README.md)."""
    result = await run_stream(_capture_body("stream.txt"))
    assert result.ok, result.error
    assert len(result.chunk_times_s) == 64 and result.chunk_tokens == [1] * 64
    assert (result.output_tokens, result.prompt_tokens, result.finish_reason) == (64, 112, "length")
    server = result.server
    assert server is not None and server.source == "llamacpp"
    assert (server.drafted, server.accepted, server.acceptance_rate) == (56, 56, 1.0)
    assert (server.cached_tokens, server.prompt_tokens) == (111, 112)
    assert server.server_ttft_ms == 2.174  # prompt_ms: the server's share of TTFT
    assert server.generation_ms == 49.53
    assert server.mean_itl_ms == pytest.approx(49.53 / 63)  # predicted_per_token_ms 0.7862
    assert server.spec_steps is None and server.mean_acceptance_length is None  # llama.cpp does not say


async def test_llamacpp_stream_capture_without_usage() -> None:
    """No usage chunk: `timings` rides on the finish chunk; tokens come from `predicted_n`."""
    result = await run_stream(_capture_body("stream_chat_no_usage_draft_same.txt"))
    assert result.ok, result.error
    assert (result.output_tokens, len(result.chunk_times_s)) == (8, 8)
    assert not result.usage_estimated
    server = result.server
    assert server is not None
    assert (server.drafted, server.accepted) == (6, 6)
    assert server.mean_itl_ms == pytest.approx(0.949, abs=5e-4)  # 6.643 / 7
    assert (server.cached_tokens, server.prompt_tokens) == (0, 52)  # cache_n, cache_n + prompt_n


def _sglang_chunk(delta: dict[str, Any], finish: str | None = None, matched: Any = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish, "matched_stop": matched}
    envelope = {"id": "0f3c2a9d41", "object": "chat.completion.chunk", "created": 1755702742}
    return {**envelope, "model": "deepseek-ai/DeepSeek-V3-0324", "choices": [choice]}


@pytest.mark.parametrize("cache_report", [False, True], ids=["no-cache-report", "enable-cache-report"])
async def test_sglang_chat_stream_shape(cache_report: bool) -> None:
    """sglang.md §4: `reasoning_content: null` in every delta, several tokens per chunk under spec
    decoding, `matched_stop` on the final chunk, and a `"choices": []` usage chunk whose
    `prompt_tokens_details` is null unless `--enable-cache-report`: then the cached share is unknown,
    never 0. The OpenAI response carries no spec statistics."""
    texts = ["Hello", " there,", " how are", " you today"]
    events: list[dict[str, Any]] = [
        _sglang_chunk({"reasoning_content": None, "role": "assistant", "content": ""})
    ]
    events += [_sglang_chunk({"reasoning_content": None, "content": text}) for text in texts]
    events.append(_sglang_chunk({"reasoning_content": None, "content": ""}, "stop", 1))
    usage = {
        "prompt_tokens": 20,
        "total_tokens": 29,
        "completion_tokens": 9,
        "prompt_tokens_details": {"cached_tokens": 16} if cache_report else None,
        "reasoning_tokens": 0,
    }
    events.append({**_sglang_chunk({}), "choices": [], "usage": usage})
    result = await run_stream(sse(events))
    assert result.ok, result.error
    assert result.text == "".join(texts)
    assert (result.output_tokens, len(result.chunk_times_s), result.prompt_tokens) == (9, 4, 20)
    assert result.finish_reason == "stop"
    server = result.server
    assert server is not None and server.source is None
    assert server.drafted is None and server.acceptance_rate is None
    assert server.cached_tokens == (16 if cache_report else None)


@pytest.mark.parametrize("reason", ["abort", "error"])
async def test_a_stream_the_server_ends_with_abort_or_error_is_a_failed_request(reason: str) -> None:
    """sglang.md §4 (`finish_reason` … `abort`) and vLLM's finished_reason values (vllm.md): a request the
    server dropped ends with a final chunk and [DONE] like any other; it was not answered, so it is a
    failed request, never a short success in the burst's figures."""
    events: list[dict[str, Any]] = [_sglang_chunk({"role": "assistant", "content": ""})]
    events += [_sglang_chunk({"content": "Hello"}), _sglang_chunk({"content": ""}, reason, None)]
    result = await run_stream(sse(events))
    assert not result.ok
    assert result.error is not None and reason in result.error


CREATED = 1755702742
MODEL = "mimo-7b"
METRICS = VLLM_METRICS  # per-request.md's example, verbatim
# Tokens per content chunk: the prefill's first token, then one chunk per verification step.
CHUNK_TOKENS = [1] + [1] * 39 + [2] * 1 + [4] * 3
PROMPT_TOKENS = 142
CACHED_TOKENS = 128


def _chunk(
    kind: str, choices: list[dict[str, Any]], chunk_id: str = "chatcmpl-8a1f0c2e9b", **extra: Any
) -> dict[str, Any]:
    return {"id": chunk_id, "object": kind, "created": CREATED, "model": MODEL, "choices": choices, **extra}


def _chat_chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return _chunk("chat.completion.chunk", [choice], **extra)


def _completion_chunk(text: str, finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish, "stop_reason": None}
    return _chunk(
        "text_completion", [{**choice, "prompt_token_ids": None, "token_ids": None}], "cmpl-8a1f0c2e9b"
    )


def _usage(completion: int) -> dict[str, Any]:
    return {
        "prompt_tokens": PROMPT_TOKENS,
        "total_tokens": PROMPT_TOKENS + completion,
        "completion_tokens": completion,
        "prompt_tokens_details": {"cached_tokens": CACHED_TOKENS},
    }


def _usage_chunk(object_name: str, metrics: Any = METRICS) -> dict[str, Any]:
    fingerprint = "vllm-0.28.0-tp1-3f9a2c1d"
    chunk = _chunk(object_name, [], usage=_usage(sum(CHUNK_TOKENS)), system_fingerprint=fingerprint)
    return chunk if metrics is ... else {**chunk, "metrics": metrics}


def _chat_stream(*, usage: bool = True, continuous: bool = False, metrics: Any = METRICS) -> bytes:
    events: list[dict[str, Any] | str] = [
        _chat_chunk({"role": "assistant", "content": ""}, prompt_token_ids=None, prompt_text=None)
    ]
    done = 0
    for index, tokens in enumerate(CHUNK_TOKENS):
        done += tokens
        extra = {"usage": _usage(done)} if continuous else {}
        events.append(_chat_chunk({"content": f"<{index}:{tokens}>"}, **extra))
    events.append(_chat_chunk({"content": ""}, "stop", **({"usage": _usage(done)} if continuous else {})))
    if usage:
        events.append(_usage_chunk("chat.completion.chunk", metrics))
    return sse(events)


async def test_chat_stream_counts_usage_not_chunks_and_reads_the_metrics_of_the_usage_chunk() -> None:
    result = await run_stream(_chat_stream())
    assert result.ok, result.error
    # The role chunk (content "") is not the first token; the finish chunk (content "") is no chunk.
    assert len(result.chunk_times_s) == len(CHUNK_TOKENS) == 44
    assert result.output_tokens == 54 and not result.usage_estimated
    assert result.prompt_tokens == PROMPT_TOKENS
    assert result.finish_reason == "stop"
    assert result.text.startswith("<0:1><1:1>")
    assert result.chunk_tokens is None  # usage only at the end: not said per chunk
    server = result.server
    assert server is not None and server.source == "vllm"
    assert (server.drafted, server.accepted, server.spec_steps, server.spec_tokens) == (129, 10, 43, 3)
    assert server.acceptance_histogram == [39, 1, 0, 3]
    assert server.acceptance_rate == pytest.approx(0.07751937984496124)
    assert server.mean_acceptance_length == pytest.approx(1.2325581395348837)
    timings = (server.server_ttft_ms, server.queue_ms, server.generation_ms, server.mean_itl_ms)
    assert timings == (85.2, 12.3, 1240.5, 9.1)
    assert (server.cached_tokens, server.prompt_tokens) == (CACHED_TOKENS, PROMPT_TOKENS)


async def test_continuous_usage_stats_give_the_tokens_of_every_chunk() -> None:
    result = await run_stream(_chat_stream(continuous=True))
    assert result.ok, result.error
    assert result.output_tokens == 54
    assert result.chunk_tokens == CHUNK_TOKENS


async def test_chat_stream_without_include_usage_is_a_marked_estimate() -> None:
    """Without `stream_options.include_usage` vLLM sends no usage chunk: the chunk count is only a
    lower bound under speculative decoding (several tokens per chunk), so it is marked estimated."""
    result = await run_stream(_chat_stream(usage=False))
    assert result.ok, result.error
    assert result.usage_estimated
    assert result.output_tokens == 44 < 54
    assert result.server is None


@pytest.mark.parametrize("metrics", [None, ...], ids=["metrics-null-for-n>1", "no-metrics-flag"])
async def test_usage_chunk_without_per_request_metrics_leaves_them_unknown(metrics: Any) -> None:
    result = await run_stream(_chat_stream(metrics=metrics))
    assert result.ok, result.error
    assert result.output_tokens == 54
    server = result.server
    assert server is not None  # usage still says the cached prompt tokens
    assert server.source is None
    assert server.drafted is None and server.accepted is None and server.acceptance_rate is None
    assert server.server_ttft_ms is None and server.mean_acceptance_length is None
    assert server.cached_tokens == CACHED_TOKENS


async def test_timing_only_metrics_without_speculative_decoding() -> None:
    """`--enable-per-request-metrics` without `--per-request-spec-decode-metrics`: timing only."""
    timing = {key: value for key, value in METRICS.items() if key != "speculative_decoding"}
    result = await run_stream(_chat_stream(metrics=timing))
    server = result.server
    assert server is not None and server.source == "vllm"
    assert server.server_ttft_ms == 85.2 and server.queue_ms == 12.3
    assert server.drafted is None and server.spec_steps is None and server.acceptance_histogram is None


async def test_completions_stream_shape() -> None:
    events: list[dict[str, Any] | str] = [_completion_chunk(f"<{i}>") for i in range(len(CHUNK_TOKENS))]
    events.append(_completion_chunk("", "length"))
    events.append(_usage_chunk("text_completion"))
    result = await run_stream(sse(events), api="completions")
    assert result.ok, result.error
    assert result.output_tokens == 54 and not result.usage_estimated
    assert len(result.chunk_times_s) == 44
    assert result.finish_reason == "length"
    assert result.chunk_tokens is None  # "token_ids": null says nothing
    assert result.server is not None and result.server.spec_steps == 43


async def test_error_inside_the_stream_then_done_is_a_broken_stream_with_the_message() -> None:
    message = "The model `x` does not exist."
    error = {"error": {"message": message, "type": "NotFoundError", "param": "model", "code": 404}}
    body = sse([_chat_chunk({"role": "assistant", "content": ""}), _chat_chunk({"content": "a"}), error])
    result = await run_stream(body)
    assert result.error_kind == "broken_stream"
    assert message in (result.error or "")
