# ruff: noqa: E501  (real log lines)
"""Property tests of the log grammars: generated lines parse back, and no input makes them raise."""

from __future__ import annotations

import random
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui.telemetry.events import LogEvent
from tui.telemetry.logs import LogParser, errors, fastpath, llamacpp, parse_events, parse_line, sglang, vllm

SAMPLES = Path(__file__).parent / "log_samples"
REAL_LINES = [
    line
    for name in ("vllm", "sglang", "llamacpp")
    for line in (SAMPLES / f"{name}.server.log").read_text(encoding="utf-8").splitlines()
] + [
    "INFO 10-16 19:05:47 metrics.py:367] Speculative metrics: Draft acceptance rate: 0.642, System efficiency: 0.598, Number of speculative tokens: 3, Number of accepted tokens: 8547, Number of draft tokens: 13311, Number of emitted tokens: 10616.",
    "0.00.701.728 I spec common_specu: statistics     draft-simple: #calls(b,g,a) =    1     21     21, #gen drafts =     21, #acc drafts =    17, #gen tokens =    162, #acc tokens =    42, #mean acc len = 3.00, #acc rate/pos = (0.810, 0.476), dur(b,g,a) = 0.029, 44.037, 0.017 ms",
    "0.00.701.695 I slot print_timing: id  1 | task 2 |      acc per pos = (0.810, 0.476, 0.286)",
    "(EngineCore pid=1) ERROR 05-01 14:39:06 [core.py:1131] Traceback (most recent call last):",
    "[gpu_id=0] #running-req: 1, #token: 100, token usage: 0.01, gen throughput (token/s): 50.00, #queue-req: 0",
    "INFO 10-16 19:06:01 metrics.py:361] Prefix cache hit rate: GPU: 94.35%, CPU: 0.00%",
]
# fmt: off
INTERESTING_TEXT = st.sampled_from([
    ": ", ", ", "%", "nan", "inf", "-1", "1e309", "(", ")", "[", "]", "\r", "\n", "\x1b[0m", " batch",
    "[1]", "Traceback (most recent call last):", "  File", "draft acceptance = ", "acc per pos = (",
    "#acc tokens = ", "Avg prompt throughput: ", "SpecDecoding metrics: ", "Per-position acceptance rate: ",
    "\x00", "\ufffd",
])
# fmt: on


def _assert_events_valid(events: Sequence[LogEvent]) -> None:
    for event in events:
        assert event.kind in ("stats", "spec_decode", "error")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a serializer warning means a field holds the wrong type
            event.model_dump_json()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.text() | st.binary().map(lambda data: data.decode("utf-8", errors="replace")), max_size=40)
)
def test_no_text_or_bytes_make_the_parsers_raise(lines: list[str]) -> None:
    parser = LogParser()
    for line in lines:
        event = parse_line(line)
        _assert_events_valid([] if event is None else [event])
        _assert_events_valid(parse_events(line, backend="sglang"))
        _assert_events_valid(parser.feed(line))
    _assert_events_valid(parser.flush())


@st.composite
def mangled_real_line(draw: st.DrawFn) -> str:
    line = draw(st.sampled_from(REAL_LINES))
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(line)))
        end = draw(st.integers(start, min(len(line), start + 12)))
        insert = draw(st.one_of(INTERESTING_TEXT, st.text(max_size=6)))
        line = line[:start] + insert + line[end:]
    return line


@settings(max_examples=200, deadline=None)
@given(st.lists(mangled_real_line(), min_size=1, max_size=8))
def test_mangled_real_lines_never_raise(lines: list[str]) -> None:
    parser = LogParser()
    for line in lines:
        _assert_events_valid(parse_events(line))
        _assert_events_valid(parser.feed(line))
    _assert_events_valid(parser.flush())


# --- The grammars themselves: a line printed from generated figures parses back to those figures -------------
#
# These go through `parse_events` and `LogParser.feed` (no safety net there: a grammar that raises fails them),
# and compare the regex fast paths with the general grammars they shortcut.

_DECIMAL = st.decimals(min_value=0, max_value=99_999, places=1, allow_nan=False, allow_infinity=False).map(
    str
)
_PERCENT = st.decimals(min_value=0, max_value=100, places=1, allow_nan=False, allow_infinity=False).map(str)
_FRACTION = st.decimals(min_value=0, max_value=1, places=3, allow_nan=False, allow_infinity=False).map(str)
_COUNT = st.integers(0, 10**7)


def _percent(text: str) -> float:
    return float(text + "e-2")


def _only(events: list[LogEvent], kind: str) -> Any:
    (event,) = [event for event in events if event.kind == kind]
    return event


def _both_ways(line: str) -> list[LogEvent]:
    """The events of `line` from the stateless and the stateful parser, which must agree."""
    stateless: list[LogEvent] = list(parse_events(line))
    stateful = LogParser().feed(line)
    assert [event.model_dump() for event in stateless] == [event.model_dump() for event in stateful]
    _assert_events_valid(stateless)
    return stateless


@settings(max_examples=150, deadline=None)
@given(
    prompt=_DECIMAL,
    generation=_DECIMAL,
    running=_COUNT,
    waiting=_COUNT,
    kv=_PERCENT,
    hit=_PERCENT,
    engine=st.integers(0, 999),
    preemptions=st.none() | _COUNT,
    device=st.sampled_from(["GPU", "CPU"]),  # vLLM's CPU build names its KV device
)
def test_vllm_stats_line_round_trips(
    prompt: str,
    generation: str,
    running: int,
    waiting: int,
    kv: str,
    hit: str,
    engine: int,
    preemptions: int | None,
    device: str,
) -> None:
    extra = "" if preemptions is None else f"Preemptions: {preemptions}, "  # off the fast path
    line = (
        f"(APIServer pid=1) INFO 08-20 14:04:17 [loggers.py:310] Engine {engine:03d}: Avg prompt throughput: "
        f"{prompt} tokens/s, Avg generation throughput: {generation} tokens/s, Running: {running} reqs, "
        f"Waiting: {waiting} reqs, {extra}{device} KV cache usage: {kv}%, Prefix cache hit rate: {hit}%"
    )
    event = _only(_both_ways(line), "stats")
    assert (event.backend, event.time, event.engine) == ("vllm", "08-20 14:04:17", str(engine))
    assert (event.prompt_tokens_per_s, event.generation_tokens_per_s) == (float(prompt), float(generation))
    assert (event.running, event.waiting) == (running, waiting)
    assert (event.kv_cache_usage, event.prefix_cache_hit_rate) == (_percent(kv), _percent(hit))
    assert event.extra == (None if preemptions is None else {"Preemptions": preemptions})
    general = vllm.parse_stats(line, line.find(vllm.STATS_MARKER))
    fast = fastpath.vllm_stats(line)
    assert (fast is None) == (preemptions is not None)
    assert general is not None and (fast is None or fast.model_dump() == general.model_dump())


@settings(max_examples=150, deadline=None)
@given(
    positions=st.lists(_FRACTION, min_size=1, max_size=8),
    accepted=_COUNT,
    extra_drafted=_COUNT,
    accepted_per_s=_DECIMAL,
    drafted_per_s=_DECIMAL,
    rate=_PERCENT,
)
def test_vllm_spec_decoding_line_round_trips(
    positions: list[str],
    accepted: int,
    extra_drafted: int,
    accepted_per_s: str,
    drafted_per_s: str,
    rate: str,
) -> None:
    mean = f"{1 + sum(float(position) for position in positions):.2f}"
    drafted = accepted + extra_drafted
    line = (
        f"(APIServer pid=1) INFO 08-20 14:04:17 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: "
        f"{mean}, Accepted throughput: {accepted_per_s} tokens/s, Drafted throughput: {drafted_per_s} tokens/s, "
        f"Accepted: {accepted} tokens, Drafted: {drafted} tokens, Per-position acceptance rate: "
        f"{', '.join(positions)}, Avg Draft acceptance rate: {rate}%"
    )
    event = _only(_both_ways(line), "spec_decode")
    assert (event.backend, event.time, event.scope) == ("vllm", "08-20 14:04:17", "interval")
    assert event.mean_acceptance_length == float(mean)
    assert event.acceptance_rate == _percent(rate)
    assert event.per_position_acceptance == [float(position) for position in positions]
    assert (event.accepted_tokens, event.drafted_tokens) == (accepted, drafted)
    assert event.accepted_tokens_per_s == float(accepted_per_s)
    assert event.drafted_tokens_per_s == float(drafted_per_s)
    marker = vllm.SPEC_MARKERS[0]
    general = vllm.parse_spec(line, line.find(marker), marker)
    fast = fastpath.vllm_spec(line)
    assert general is not None and fast is not None and fast.model_dump() == general.model_dump()


@settings(max_examples=150, deadline=None)
@given(
    running=_COUNT,
    tokens=_COUNT,
    usage=_FRACTION,
    accept=st.none() | st.tuples(st.decimals(1, 16, places=2).map(str), _FRACTION),
    generation=_DECIMAL,
    queue=_COUNT,
    timestamp=st.booleans(),
)
def test_sglang_decode_line_round_trips(
    running: int,
    tokens: int,
    usage: str,
    accept: tuple[str, str] | None,
    generation: str,
    queue: int,
    timestamp: bool,
) -> None:
    spec = "" if accept is None else f"accept len: {accept[0]}, accept rate: {accept[1]}, "
    stamp = ", timestamp: 2026-07-20T09:49:58.123" if timestamp else ""  # off the fast path
    line = (
        f"[2026-07-20 09:49:58 TP0] Decode batch, #running-req: {running}, #token: {tokens}, token usage: {usage}, "
        f"{spec}cuda graph: True, gen throughput (token/s): {generation}, #queue-req: {queue}{stamp}"
    )
    events = _both_ways(line)
    stats = _only(events, "stats")
    assert (stats.backend, stats.phase, stats.engine) == ("sglang", "decode", "TP0")
    assert (stats.running, stats.waiting, stats.kv_cache_usage) == (running, queue, float(usage))
    assert stats.generation_tokens_per_s == float(generation)
    if accept is None:
        assert [event.kind for event in events] == ["stats"]
    else:
        spec_event = _only(events, "spec_decode")
        assert (spec_event.mean_acceptance_length, spec_event.acceptance_rate) == tuple(map(float, accept))
    found = sglang.find_batch(line)
    assert found is not None
    general = sglang.parse_batch(line, found)
    fast = fastpath.sglang_batch(line)
    assert (fast is None) == timestamp
    assert fast is None or [event.model_dump() for event in fast] == [event.model_dump() for event in general]


@settings(max_examples=150, deadline=None)
@given(
    new=_COUNT,
    cached=_COUNT,
    usage=_FRACTION,
    running=_COUNT,
    queue=_COUNT,
    prompt=_DECIMAL,
    ranks=st.sampled_from(["", " TP0", " DP1 TP1"]),
    ms=st.sampled_from(["", ".123", ".007"]),
)
def test_sglang_prefill_line_round_trips(
    new: int, cached: int, usage: str, running: int, queue: int, prompt: str, ranks: str, ms: str
) -> None:
    line = (
        f"[2026-07-20 09:49:58{ms}{ranks}] Prefill batch, #new-seq: 1, #new-token: {new}, #cached-token: {cached}, "
        f"token usage: {usage}, #running-req: {running}, #queue-req: {queue}, #pending-token: 7, cuda graph: "
        f"False, input throughput (token/s): {prompt}"
    )
    stats = _only(_both_ways(line), "stats")
    assert (stats.phase, stats.engine) == ("prefill", ranks.strip() or None)
    assert (stats.new_tokens, stats.cached_tokens) == (new, cached)
    assert (stats.running, stats.waiting, stats.kv_cache_usage) == (running, queue, float(usage))
    assert stats.prompt_tokens_per_s == float(prompt)
    found = sglang.find_batch(line)
    fast = fastpath.sglang_batch(line)
    assert found is not None and fast is not None
    assert [event.model_dump() for event in fast] == [
        event.model_dump() for event in sglang.parse_batch(line, found)
    ]


@pytest.mark.parametrize(
    "line",
    [
        # an optional segment, the old mean-length convention, a trailing comma, a prefix with a period
        "(APIServer pid=1) INFO 08-20 14:05:00 [loggers.py:310] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 4 reqs, Waiting: 6 reqs, Preemptions: 3, GPU KV cache usage: 50.0%, Prefix cache hit rate: 25.0%",
        "INFO 04-30 10:00:00 [metrics.py:80] SpecDecoding metrics: Mean acceptance length: 1.40, Accepted throughput: 1.00 tokens/s, Drafted throughput: 2.00 tokens/s, Accepted: 140 tokens, Drafted: 200 tokens, Per-position acceptance rate: 0.800, 0.600, Avg Draft acceptance rate: 70.0%",
        "[2025-10-22 08:00:00 TP0] Decode batch. #running-req: 1, #token: 108, token usage: 0.00, accept len: 2.17, accept rate: 0.54, cuda graph: True, gen throughput (token/s): 0.39, #queue-req: 0, ",
        "[2026-07-20 09:50:00 TP0] Decode batch, #running-req: 2, #full token: 500, full token usage: 0.01, mamba num: 1, mamba usage: 0.1, cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 0",
        "[2026-02-01 10:00:00 TP0] Prefill batch, #new-seq: 1, #new-token: 100, #cached-token: 0, token usage: 0.01, #running-req: 0, #queue-req: 0, input throughput (token/s): 100.00, cuda graph: False",
        "[2026-07-20 09:50:00 TP0] Decode batch [12], #running-req: 1, #token: 2, token usage: 0.01, cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0",
    ],
)
def test_fast_paths_decline_other_variants(line: str) -> None:
    fast = (fastpath.vllm_stats(line), fastpath.vllm_spec(line), fastpath.sglang_batch(line))
    assert fast == (None, None, None) and parse_events(line)


@settings(max_examples=150, deadline=None)
@given(accepted=_COUNT, extra_drafted=_COUNT, mean=st.decimals(1, 64, places=2).map(str))
def test_llamacpp_acceptance_line_round_trips(accepted: int, extra_drafted: int, mean: str) -> None:
    drafted = accepted + extra_drafted
    rate = f"{accepted / drafted:.5f}" if drafted else "0.00000"
    line = (
        f"0.00.674.091 I slot print_timing: id  1 | task 2 | draft acceptance = {rate} "
        f"(   {accepted} accepted /    {drafted} generated), mean len =  {mean}"
    )
    event = _only(_both_ways(line), "spec_decode")
    assert (event.backend, event.uptime, event.scope) == ("llamacpp", "0.00.674.091", "request")
    assert (event.accepted_tokens, event.drafted_tokens) == (accepted, drafted)
    assert (event.acceptance_rate, event.mean_acceptance_length) == (float(rate), float(mean))


@settings(max_examples=150, deadline=None)
@given(positions=st.lists(_FRACTION, min_size=1, max_size=16))
def test_llamacpp_per_position_line_round_trips(positions: list[str]) -> None:
    line = f"0.00.701.695 I slot print_timing: id  1 | task 2 |      acc per pos = ({', '.join(positions)})"
    event = _only(_both_ways(line), "spec_decode")
    assert (event.backend, event.uptime) == ("llamacpp", "0.00.701.695")
    assert event.per_position_acceptance == [float(position) for position in positions]


@settings(max_examples=150, deadline=None)
@given(drafts=_COUNT, accepted=_COUNT, extra_drafted=_COUNT, mean=st.decimals(1, 64, places=2).map(str))
def test_llamacpp_statistics_line_round_trips(
    drafts: int, accepted: int, extra_drafted: int, mean: str
) -> None:
    drafted = accepted + extra_drafted
    line = (
        f"0.00.701.728 I spec common_specu: statistics     draft-simple: #calls(b,g,a) =    1     21     21, "
        f"#gen drafts = {drafts:5d}, #acc drafts =    17, #gen tokens = {drafted:6d}, #acc tokens = {accepted:5d}, "
        f"#mean acc len = {mean}, dur(b,g,a) = 0.029, 44.037, 0.017 ms"
    )
    event = _only(_both_ways(line), "spec_decode")
    assert (event.backend, event.scope, event.num_drafts) == ("llamacpp", "lifetime", drafts)
    assert (event.accepted_tokens, event.drafted_tokens) == (accepted, drafted)
    assert event.acceptance_rate == (accepted / drafted if drafted else None)
    assert event.mean_acceptance_length == float(mean)


@settings(max_examples=100, deadline=None)
@given(
    mib=st.integers(1, 10**6),
    prefix=st.sampled_from(
        [
            "(EngineCore pid=1) ERROR 05-01 14:39:06 [core.py:1131] ",
            "[2026-07-20 09:49:58 TP0] ",
            "0.00.701.728 E ",
        ]
    ),
)
def test_an_out_of_memory_line_is_an_oom_error(mib: int, prefix: str) -> None:
    line = f"{prefix}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {mib} MiB."
    event = _only(_both_ways(line), "error")
    assert event.category == "oom" and f"{mib} MiB" in event.message


# --- The properties can fail: with every grammar raising, they do; the tailer's net counts, never hides -------

GRAMMARS = (
    (fastpath, ("vllm_stats", "vllm_spec", "sglang_batch")),
    (vllm, ("parse_stats", "parse_spec", "parse_v0_prefix_hit")),
    (sglang, ("find_batch", "parse_batch")),
    (llamacpp, ("parse_acceptance", "parse_per_position", "parse_statistics")),
    (errors, ("classify",)),
)
GRAMMAR_PROPERTIES = (
    test_vllm_stats_line_round_trips,
    test_vllm_spec_decoding_line_round_trips,
    test_sglang_decode_line_round_trips,
    test_sglang_prefill_line_round_trips,
    test_llamacpp_acceptance_line_round_trips,
    test_llamacpp_per_position_line_round_trips,
    test_llamacpp_statistics_line_round_trips,
    test_an_out_of_memory_line_is_an_oom_error,
    test_mangled_real_lines_never_raise,
)


EVENT_LINES = [line for line in REAL_LINES if parse_events(line)]  # read before any grammar is broken


class GrammarBug(Exception):
    pass


@pytest.fixture
def broken_grammars(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: object) -> None:
        raise GrammarBug("a grammar regression")

    for module, names in GRAMMARS:
        for name in names:
            monkeypatch.setattr(module, name, broken)


@pytest.mark.parametrize("prop", GRAMMAR_PROPERTIES, ids=lambda prop: prop.__name__)
def test_every_property_fails_when_the_grammars_raise(broken_grammars: None, prop: Any) -> None:
    # Examples one at a time (seeded), not a whole run: shrinking a failure every example has takes seconds.
    rng = random.Random(0)
    with pytest.raises(GrammarBug):
        for _ in range(100):
            prop.hypothesis.fuzz_one_input(rng.randbytes(4096))


def test_the_parser_raises_and_the_tailer_boundary_counts(broken_grammars: None) -> None:
    figure_lines = EVENT_LINES
    parser = LogParser()
    for line in figure_lines:
        with pytest.raises(GrammarBug):
            parse_events(line)
        with pytest.raises(GrammarBug):
            parser.feed(line)
    for line in figure_lines:
        assert parser.feed_guarded(line) == []
    assert parser.failed_lines == len(figure_lines)
    assert parser.last_failure == "GrammarBug: a grammar regression"
    assert parser.unread == 0  # a line that raised is not an impossible figure


def test_the_tailer_boundary_counts_nothing_on_real_logs() -> None:
    parser = LogParser()
    events = [event for line in REAL_LINES for event in parser.feed_guarded(line)]
    assert events and parser.failed_lines == 0 and parser.last_failure is None
