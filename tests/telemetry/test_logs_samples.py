"""Each reference sample `server.log` (copied to `log_samples/`) gives exactly the events its README lists."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tui.cli import main
from tui.telemetry.events import ErrorEvent, SpecDecodeEvent, StatsEvent
from tui.telemetry.logs import LogParser
from tui.telemetry.logs.startup import is_process_start

SAMPLES = Path(__file__).parent / "log_samples"


def _events(name: str) -> list[StatsEvent | SpecDecodeEvent | ErrorEvent]:
    parser = LogParser()
    events = []
    with open(SAMPLES / f"{name}.server.log", encoding="utf-8", errors="replace", newline="") as handle:
        for line in handle:
            events.extend(parser.feed(line))
    events.extend(parser.flush())
    return events


def _fields(event: object, names: str) -> tuple:
    return tuple(getattr(event, name) for name in names.split())


# vLLM README: "Expected values parsed from server.log"
VLLM_STATS = [
    ("08-20 14:04:17", 387.9, 277.9, 2, 0, 0.007, 0.346),
    ("08-20 14:04:27", 228.6, 590.0, 4, 0, 0.009, 0.499),
    ("08-20 14:04:37", 472.2, 930.8, 5, 0, 0.013, 0.509),
]
VLLM_SPEC = [
    ("08-20 14:04:17", 2.42, 39.17, 55.20, 1629, 2296, [0.807, 0.612], 0.709),
    ("08-20 14:04:27", 2.41, 345.40, 488.80, 3454, 4888, [0.806, 0.607], 0.707),
    ("08-20 14:04:37", 2.43, 547.90, 765.60, 5479, 7656, [0.812, 0.620], 0.716),
]


def test_vllm_sample_gives_three_stats_and_three_spec_events() -> None:
    events = _events("vllm")
    stats = [e for e in events if isinstance(e, StatsEvent)]
    spec = [e for e in events if isinstance(e, SpecDecodeEvent)]
    assert len(events) == 6
    assert len(stats) == 3 and len(spec) == 3
    names = "time prompt_tokens_per_s generation_tokens_per_s running waiting kv_cache_usage"
    for event, row in zip(stats, VLLM_STATS, strict=True):
        assert _fields(event, names + " prefix_cache_hit_rate backend engine") == pytest.approx(
            (*row, "vllm", "0")
        )
    names = "time mean_acceptance_length accepted_tokens_per_s drafted_tokens_per_s accepted_tokens"
    for event, (*row, positions, rate) in zip(spec, VLLM_SPEC, strict=True):
        # The engine comes from the stats line it follows.
        assert _fields(event, names + " drafted_tokens acceptance_rate scope engine") == pytest.approx(
            (*row, rate, "interval", "0")
        )
        assert event.per_position_acceptance == pytest.approx(positions)


# SGLang README: the Decode table
SGLANG_DECODE = [
    ("2026-07-20T09:49:58", 32, 90512, 0.16, 2.90, 0.63, 2264.12, 0),
    ("2026-07-20T09:50:00", 32, 91874, 0.16, 2.93, 0.64, 2281.38, 0),
    ("2026-07-20T09:50:01", 32, 92407, 0.16, 2.95, 0.65, 2298.61, 0),
    ("2026-07-20T09:50:03", 33, 95318, 0.17, 2.91, 0.64, 2277.04, 0),
    ("2026-07-20T09:50:04", 32, 93055, 0.16, 2.97, 0.66, 2322.50, 0),
    ("2026-07-20T09:50:06", 33, 94811, 0.17, 2.94, 0.65, 2306.77, 0),
    ("2026-07-20T09:50:08", 33, 96270, 0.17, 2.92, 0.64, 2290.45, 0),
    ("2026-07-20T09:50:09", 32, 93512, 0.16, 2.96, 0.65, 2315.09, 1),
]


def test_sglang_sample_decode_lines_match_the_readme_table_and_prefill_lines_sum_to_the_token_deltas() -> (
    None
):
    events = _events("sglang")
    decode = [e for e in events if isinstance(e, StatsEvent) and e.phase == "decode"]
    spec = [e for e in events if isinstance(e, SpecDecodeEvent)]
    assert len(decode) == 8 and len(spec) == 8
    for stats, accept, row in zip(decode, spec, SGLANG_DECODE, strict=True):
        time, running, tokens, usage, accept_len, accept_rate, gen, queue = row
        assert stats.extra is not None and stats.extra["#token"] == tokens
        assert _fields(stats, "time engine running kv_cache_usage generation_tokens_per_s waiting") == (
            pytest.approx((time, "TP0", running, usage, gen, queue))
        )
        # SGLang prints no per-position figures.
        assert _fields(
            accept, "time engine mean_acceptance_length acceptance_rate per_position_acceptance"
        ) == (pytest.approx((time, "TP0", accept_len, accept_rate, None)))
    # the prefill lines sum to the realtime token deltas
    prefill = [e for e in events if isinstance(e, StatsEvent) and e.phase == "prefill"]
    warmup, before_t0, window = prefill[0], prefill[1], prefill[2:]
    assert warmup.time == "2026-07-20T09:15:13"
    assert warmup.new_tokens == 7 and warmup.prompt_tokens_per_s == pytest.approx(0.04)
    assert before_t0.time == "2026-07-20T09:49:59"
    assert len(window) == 8
    assert all(e.extra is not None and e.extra["cuda graph"] is False for e in prefill)
    assert sum(e.extra["#new-seq"] for e in window) == 9  # type: ignore[index]
    assert sum(e.new_tokens for e in window) == 13442  # type: ignore[misc]
    assert sum(e.cached_tokens for e in window) == 2624  # type: ignore[misc]
    last = window[-1]
    assert last.time == "2026-07-20T09:50:10"
    assert (last.new_tokens, last.cached_tokens, last.waiting) == (1260, 320, 1)
    assert last.extra is not None and last.extra["#pending-token"] == 1712
    assert last.prefix_cache_hit_rate == pytest.approx(320 / 1580)
    assert not [e for e in events if isinstance(e, ErrorEvent)]


def test_llamacpp_sample_gives_eleven_draft_acceptance_events() -> None:
    events = _events("llamacpp")
    assert len(events) == 11
    names = "backend accepted_tokens drafted_tokens acceptance_rate mean_acceptance_length scope"
    for event in events:
        assert isinstance(event, SpecDecodeEvent)
        assert _fields(event, names) == pytest.approx(("llamacpp", 56, 56, 1.0, 9.0, "request"))
    assert events[0].time is None and events[0].uptime == "0.00.674.091"  # time since start, not wall time
    assert sum(e.accepted_tokens for e in events) == 616  # type: ignore[misc]


@pytest.mark.parametrize(
    ("name", "expected_kinds"),
    [
        ("vllm", {"stats": 3, "spec_decode": 3}),
        ("sglang", {"stats": 18, "spec_decode": 8}),
        ("llamacpp", {"spec_decode": 11}),
    ],
)
def test_spectop_logs_json_on_each_sample_and_its_process_start_line(
    name: str, expected_kinds: dict[str, int], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["logs", str(SAMPLES / f"{name}.server.log"), "--json"]) == 0
    out, err = capsys.readouterr()
    assert "unreadable" not in err  # every line was read: nothing said
    records = [json.loads(line) for line in out.splitlines()]
    assert all("kind" in record and "time" in record for record in records)
    assert Counter(record["kind"] for record in records) == expected_kinds
    spec = [r for r in records if r["kind"] == "spec_decode"]
    assert all("accepted_tokens" in r or r.get("mean_acceptance_length") for r in spec)
    # A restart's start-failure watch counts errors only after a line that says a process started
    # (tui/configs/restart.py): every engine's log has one.
    lines = (SAMPLES / f"{name}.server.log").read_text(encoding="utf-8", errors="replace").splitlines()
    assert any(is_process_start(line) for line in lines)
