"""Requests against llama-server and the server's own record of them (log lines, response `timings`).

This is the ground truth the integration tests hold spectop's figures against, so it deliberately parses
the log with its own regex (from the reference's format string), not with spectop's parser.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

REQUEST_TIMEOUT_S = 60.0
ACCEPTANCE_LINE = re.compile(
    r"id\s+(?P<slot>\d+) \| task (?P<task>-?\d+) \| draft acceptance = (?P<rate>[\d.]+) "
    r"\(\s*(?P<acc>\d+) accepted /\s*(?P<gen>\d+) generated\), mean len =\s*(?P<mal>[\d.]+)"
)
# One per verification step with LLAMA_TRACE=1; a "(restore checkpoint)" step is replayed, not counted.
STEP_LINE = re.compile(
    r"id\s+\d+ \| task (?P<task>-?\d+) \| accepted\s+(?P<acc>\d+)/\s*(?P<gen>\d+) draft tokens$", re.MULTILINE
)
EVAL_LINE = re.compile(r"id\s+\d+ \| task -?\d+ \|\s+eval time =")
PROMPT_TIME_LINE = re.compile(r"\| prompt eval time =\s*(?P<ms>[\d.]+) ms /\s*(?P<n>\d+) tokens")
EVAL_TIME_LINE = re.compile(
    r"\|\s+eval time =\s*(?P<ms>[\d.]+) ms /\s*(?P<n>\d+) tokens"
    r" \(.*?,\s*(?P<rate>[\d.]+) tokens per second\)"
)

# This llama-server now and then closes a keep-alive connection right after a streamed response; the next
# request sent on it fails before any byte comes back (about 1 in 7 back-to-back streams with a plain httpx
# client). spectop bench does not retry that yet, so it counts as a broken stream.
STALE_KEEP_ALIVE = ("broken_stream", "RemoteProtocolError: Server disconnected without sending a response.")

PROMPTS = (
    "Tell me a story about a llama",
    "Count from one to three",
    "What is speculative decoding?",
    "Write a poem about the server",
    "hello world, the model is fast",
    "the draft token rate and mean length",
)


@dataclass(frozen=True)
class AcceptanceLine:  # one `draft acceptance = …` line of the server log
    task: int
    rate: float
    accepted: int
    generated: int
    mean_length: float


def complete(
    url: str, prompt: str, max_tokens: int = 64, timeout_s: float = REQUEST_TIMEOUT_S
) -> dict[str, Any]:
    """A non-streamed greedy `/v1/completions` request; returns the response JSON (with `timings`)."""
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0}
    response = httpx.post(f"{url}/v1/completions", json=body, timeout=timeout_s)
    response.raise_for_status()
    return dict(response.json())


def answered(arm: dict[str, Any]) -> list[dict[str, Any]]:
    """The requests of a `spectop bench` arm that were answered; every other one met a stale connection."""
    failures = [(r["error_kind"], r["error"]) for r in arm["requests_detail"] if r.get("error_kind")]
    assert all(failure == STALE_KEEP_ALIVE for failure in failures), failures
    return [r for r in arm["requests_detail"] if not r.get("error_kind")]


def traffic_request(url: str, index: int) -> None:
    """One request of a steady load (vllm_workload.steady_load): PROMPTS in turn."""
    complete(url, PROMPTS[index % len(PROMPTS)], 64, timeout_s=30.0)


def run_requests(url: str, count: int, max_tokens: int = 64, concurrency: int = 1) -> list[dict[str, Any]]:
    """`count` greedy completions over PROMPTS, `concurrency` at a time; returns every response."""
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(count)]
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(lambda p: complete(url, p, max_tokens), prompts))


def log_size(log_file: Path) -> int:
    return log_file.stat().st_size if log_file.exists() else 0


def read_log(log_file: Path, offset: int = 0) -> str:
    with log_file.open("rb") as handle:
        handle.seek(offset)
        return handle.read().decode("utf-8", errors="replace")


def acceptance_lines(log_file: Path, offset: int = 0) -> list[AcceptanceLine]:
    return [
        AcceptanceLine(int(m["task"]), float(m["rate"]), int(m["acc"]), int(m["gen"]), float(m["mal"]))
        for m in ACCEPTANCE_LINE.finditer(read_log(log_file, offset))
    ]


@dataclass(frozen=True)
class VerificationStep:  # one `accepted N/M draft tokens` trace line: a verification step of one request
    task: int
    accepted: int
    drafted: int


def verification_steps(log_file: Path, offset: int = 0) -> list[VerificationStep]:
    return [
        VerificationStep(task=int(m["task"]), accepted=int(m["acc"]), drafted=int(m["gen"]))
        for m in STEP_LINE.finditer(read_log(log_file, offset))
    ]


def wait_until(condition: Callable[[], bool], timeout_s: float, step_s: float = 0.05) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(step_s)


def wait_for_finished_requests(log_file: Path, offset: int, count: int, timeout_s: float = 10.0) -> str:
    """Wait for `count` finished requests (`eval time` lines) in the log after `offset`; return that text.
    llama.cpp writes its log from a background thread, so the lines may trail the HTTP responses a little."""
    wait_until(lambda: len(EVAL_LINE.findall(read_log(log_file, offset))) >= count, timeout_s)
    return read_log(log_file, offset)


@dataclass(frozen=True)
class RequestTiming:  # the `print_timing` lines of one finished request, as the server saw it
    prompt_ms: float
    eval_tokens_per_s: float


def request_timings(log_file: Path, offset: int = 0) -> list[RequestTiming]:
    text = read_log(log_file, offset)
    prompts = PROMPT_TIME_LINE.findall(text)
    evals = EVAL_TIME_LINE.findall(text)
    return [
        RequestTiming(float(p_ms), float(rate))
        for (p_ms, _p_n), (_e_ms, _e_n, rate) in zip(prompts, evals, strict=False)
    ]


def timings_totals(responses: list[dict[str, Any]]) -> tuple[int, int]:
    """(Σ draft_n_accepted, Σ draft_n) over the responses' `timings` (absent means no drafting: 0)."""
    accepted = sum(int(r.get("timings", {}).get("draft_n_accepted", 0)) for r in responses)
    drafted = sum(int(r.get("timings", {}).get("draft_n", 0)) for r in responses)
    return accepted, drafted
