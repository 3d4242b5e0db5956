"""A deterministic recording (no clocks, no randomness): three endpoints over four minutes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from tui.telemetry.events import ErrorEvent, SpecDecodeEvent, StatsEvent
from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading
from tui.telemetry.recording import HeaderRecord, LogRecord, RecordedEndpoint

START = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC
STEP_S = 2.0
STEPS = 120
MODEL = "deepseek-ai/DeepSeek-V3"


def _mtp_on(step: int) -> Figures:
    wave = math.sin(step / 6.0)
    acceptance = 0.72 + 0.08 * wave if step < 80 else 0.25 + 0.02 * wave  # drafting goes bad at step 80
    return Figures(
        generation_tokens_per_s=600 + 120 * wave, prompt_tokens_per_s=1500 + 200 * math.cos(step / 5.0),
        requests_per_s=2.0, acceptance_rate=acceptance, mean_acceptance_length=1 + 2 * acceptance,
        per_position_acceptance=[min(1.0, acceptance + 0.1), max(0.0, acceptance - 0.1)],
        ttft_mean_s=0.055 + 0.01 * wave, ttft_p50_s=0.051 + 0.01 * wave, ttft_p95_s=0.120 + 0.02 * wave,
        tpot_mean_s=0.0123 + 0.001 * wave, e2e_mean_s=3.2, running=3 + (step % 4), waiting=step % 2,
        kv_cache_usage=0.0057 + step / 10_000, prefix_cache_hit_rate=0.475892,
    )  # fmt: skip


def _mtp_off(step: int) -> Figures:
    wave = math.cos(step / 8.0)
    return Figures(
        generation_tokens_per_s=410 + 40 * wave, prompt_tokens_per_s=1450.0, requests_per_s=1.9,
        ttft_mean_s=0.06, ttft_p50_s=0.058 + 0.005 * wave, ttft_p95_s=0.131, tpot_mean_s=0.0205,
        e2e_mean_s=5.1, running=4, waiting=0, kv_cache_usage=0.012, prefix_cache_hit_rate=0.41,
    )  # fmt: skip


# name, URL, backend, and the model its readings name (in the order of their readings at each step)
ENDPOINTS = (
    ("mtp-on", "http://127.0.0.1:8000", "vllm", MODEL),
    ("mtp-off", "http://127.0.0.1:8001", "vllm", MODEL),
    ("llama-draft", "http://127.0.0.1:8080", "llamacpp", "qwen2.5-0.5b"),
)
LLAMA_DRAFT = Figures(
    generation_tokens_per_s=52.0, acceptance_rate=1.0, mean_acceptance_length=9.0,
    per_position_acceptance=[1.0] * 8, tpot_mean_s=0.0042, running=1, waiting=0,
)  # fmt: skip


def _reading(index: int, now: float, figures: Figures, **fields: Any) -> str:
    """Endpoint `index`'s reading of the step at `now`, a tenth of a second after the one before it."""
    name, url, backend, model = ENDPOINTS[index]
    fields = {"up": True, "backend": backend, "model": model, "window_s": 60.0, **fields}
    return EndpointReading(
        name=name, url=url, time=now + index / 10, figures=figures, **fields
    ).model_dump_json()


def recording_lines() -> list[str]:
    endpoints = [
        RecordedEndpoint(name=name, url=url, backend=backend, model=MODEL if backend == "vllm" else None,
                         acceptance_threshold=0.6 if name == "mtp-on" else None)
        for name, url, backend, _ in ENDPOINTS
    ]  # fmt: skip
    header = HeaderRecord(time=START, endpoints=endpoints)
    lines = [header.model_dump_json()]
    for step in range(STEPS):
        now = START + step * STEP_S
        lines += [_reading(0, now, _mtp_on(step)), _reading(1, now, _mtp_off(step))]
        down = 100 <= step < 110
        failed = {"error": "connection refused", "consecutive_failures": step - 99} if down else {}
        lines.append(_reading(2, now, Figures() if down else LLAMA_DRAFT, up=not down, **failed))
        if step % 5 == 0:
            rate = _mtp_on(step).acceptance_rate or 0.0
            event = SpecDecodeEvent(
                backend="vllm", acceptance_rate=rate, mean_acceptance_length=1 + 2 * rate,
                line=f"INFO SpecDecoding metrics: Mean acceptance length: {1 + 2 * rate:.2f}, "
                f"Avg Draft acceptance rate: {rate * 100:.1f}%",
            )  # fmt: skip
            lines.append(LogRecord(endpoint="mtp-on", time=now + 0.3, event=event).model_dump_json())
            line = "INFO Avg generation throughput: 600.0 tokens/s, Running: 3 reqs"
            stats = StatsEvent(backend="vllm", generation_tokens_per_s=600.0, line=line)
            lines.append(LogRecord(endpoint="mtp-on", time=now + 0.4, event=stats).model_dump_json())
        if step == 95:
            line = "E srv  load_model: failed to allocate KV cache (out of memory)"
            error = ErrorEvent(
                backend="llamacpp", category="oom", message="failed to allocate KV cache", line=line
            )
            lines.append(LogRecord(endpoint="llama-draft", time=now + 0.5, event=error).model_dump_json())
    return lines


def write_recording(path: Path) -> Path:
    path.write_text("\n".join(recording_lines()) + "\n", encoding="utf-8")
    return path
