"""`spectop bench` on real vLLMs: what spectop keeps of each request is what the server answered (a tap
keeps the answers; `usage` is cumulative; at temperature 0 the texts with the draft on and off agree).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from llama_spectop import bench_json
from vllm_server import VllmServer
from vllm_workload import RecordingTap, delta, read_page

REQUESTS = 6  # per arm, over the rounds
MAX_TOKENS = 32


def _bench(a: str, b: str | None, home: Path, name: str) -> dict[str, Any]:
    args = ["--a", a, *(["--b", b] if b else []), "--requests", str(REQUESTS), "--rounds", "2"]
    args += ["--warmup", "0", "--max-tokens", str(MAX_TOKENS), "--temperature", "0", "--api", "completions"]
    report, done = bench_json(args, home, name, timeout_s=1800)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return report


def _answers(tap: RecordingTap) -> list[dict[str, Any]]:
    """Per streamed answer: its text, final usage, metrics, and every chunk's usage."""
    return [
        {
            "prompt": request.get("prompt"),
            "text": "".join(c.get("text") or "" for chunk in chunks for c in chunk.get("choices") or []),
            "usages": [chunk["usage"] for chunk in chunks if chunk.get("usage")],
            "metrics": [chunk["metrics"] for chunk in chunks if chunk.get("metrics")],
        }
        for request, chunks in tap.streams()
    ]


def test_bench_keeps_each_requests_spec_figures_as_the_server_sent_them(
    vllm_servers: dict[str, VllmServer], tmp_path: Path
) -> None:
    server = vllm_servers["noisy"]
    before = read_page(server.url)
    with RecordingTap(server.url) as tap:
        report = _bench(tap.url, None, tmp_path, "bench")
    after = read_page(server.url)
    answers = _answers(tap)
    requests = [row for row in report["a"]["requests_detail"] if row["ok"]]
    assert len(requests) == len(answers) == REQUESTS
    for answer in answers:
        assert len(answer["metrics"]) == 1, "metrics ride the final chunk only"
        # Cumulative usage on every chunk: the last one is the request's, and adding them up overcounts.
        assert len(answer["usages"]) > 1
        completion_tokens = [usage["completion_tokens"] for usage in answer["usages"]]
        assert completion_tokens == sorted(completion_tokens) and completion_tokens[-1] == MAX_TOKENS
    spec = [answer["metrics"][0]["speculative_decoding"] for answer in answers]
    counts = ("num_draft_tokens", "num_accepted_draft_tokens", "num_spec_steps")
    theirs = Counter((*(s[name] for name in counts), tuple(s["acceptance_histogram"])) for s in spec)
    kept = [r["server"] for r in requests]
    ours = Counter(
        (k["drafted"], k["accepted"], k["spec_steps"], tuple(k["acceptance_histogram"])) for k in kept
    )
    assert ours == theirs
    final_usage = Counter(a["usages"][-1]["completion_tokens"] for a in answers)
    assert Counter(r["output_tokens"] for r in requests) == final_usage
    server_ttft = Counter(round(a["metrics"][0]["time_to_first_token_ms"], 6) for a in answers)
    assert Counter(round(r["server"]["server_ttft_ms"], 6) for r in requests) == server_ttft
    # Σ per request = the server's own /metrics delta over the burst (nothing else ran on it).
    drafted = delta(before, after, "vllm:spec_decode_num_draft_tokens_total")
    accepted = delta(before, after, "vllm:spec_decode_num_accepted_tokens_total")
    assert sum(s["num_draft_tokens"] for s in spec) == drafted
    assert sum(s["num_accepted_draft_tokens"] for s in spec) == accepted
    reconciliation = report["a"]["explain"]["reconciliation"]
    assert reconciliation["exact"] and reconciliation["server_drafted"] == drafted, reconciliation
    pooled = report["a"]["explain"]["acceptance"]["pooled"]
    assert pooled == accepted / drafted


def test_greedy_output_is_identical_with_the_draft_on_and_off(
    vllm_servers: dict[str, VllmServer], tmp_path: Path
) -> None:
    with RecordingTap(vllm_servers["nodraft"].url) as off, RecordingTap(vllm_servers["noisy"].url) as on:
        report = _bench(off.url, on.url, tmp_path, "ab")
    texts_off = {answer["prompt"]: answer["text"] for answer in _answers(off)}
    texts_on = {answer["prompt"]: answer["text"] for answer in _answers(on)}
    assert texts_off and texts_off.keys() == texts_on.keys()
    differing = [prompt for prompt in texts_off if texts_off[prompt] != texts_on[prompt]]
    assert not differing, (differing[0], texts_off[differing[0]], texts_on[differing[0]])
    equivalence = report["equivalence"]
    assert equivalence is not None and equivalence["identical"] == equivalence["compared"] > 0, equivalence
