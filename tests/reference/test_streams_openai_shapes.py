"""The llama.cpp captures (`samples/llamacpp/stream.txt`, `stream_chat_no_usage_draft_same.txt`) and
SGLang's OpenAI chunk shapes (sglang.md §4) through `run_request`, served by a real local HTTP server,
against every per-request figure the sample README and per-request.md give."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from reference_streams import run_stream, sse

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
