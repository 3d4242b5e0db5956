"""SGLang variants from `shared/reference/sglang.md` that the line tables elsewhere do not cover."""

from __future__ import annotations

import pytest
from metrics_test_server import scrape

from tui.telemetry.events import SpecDecodeEvent, StatsEvent
from tui.telemetry.logs.dispatch import parse_events
from tui.telemetry.window import figures_between

# §2.3, row "2025-10-13 (b6fb5d766) → 2025-10-23": `…, accept len: x.xx, accept rate: x.xx, cuda graph: …,
# gen throughput (token/s): …, #queue-req: N, ` with the period head and the trailing ", ". §5.1: in that
# commit the rate was accepted_tokens_incl_bonus / (verify_steps · num_steps), "This could exceed 1"
# (accept len 3.50 with num_steps 3 prints 1.17).
B6FB5D766_DECODE = (
    "[2025-10-13 10:00:00 TP0] Decode batch. #running-req: 4, #token: 900, token usage: 0.01, accept len: "
    "3.50, accept rate: 1.17, cuda graph: True, gen throughput (token/s): 90.00, #queue-req: 0, "
)


def test_accept_rate_above_one_keeps_the_accept_length_and_drops_only_the_rate() -> None:
    events = parse_events(B6FB5D766_DECODE)
    assert [event.kind for event in events] == ["stats", "spec_decode"]
    spec = events[1]
    assert isinstance(spec, SpecDecodeEvent)
    assert spec.mean_acceptance_length == pytest.approx(3.5)
    assert spec.acceptance_rate is None  # that build's "rate" is no fraction: unknown, never clipped to 1


# §0 / §2.3 last row: "version 00df707e inserts `#cached-token: N, ` right after `#running-req` in the
# Decode line": `Decode batch, #running-req: N, #cached-token: N, #token: …`.
DECODE_WITH_CACHED_TOKEN = (
    "[2026-07-20 09:50:00 TP0] Decode batch, #running-req: 32, #cached-token: 1200, #token: 91874, token "
    "usage: 0.16, accept len: 2.93, accept rate: 0.64, cuda graph: True, gen throughput (token/s): 2281.38, "
    "#queue-req: 0"
)


def test_decode_cached_token_field_is_not_a_prefill_prefix_hit_count() -> None:
    stats = parse_events(DECODE_WITH_CACHED_TOKEN)[0]
    assert isinstance(stats, StatsEvent) and stats.phase == "decode"
    assert (stats.running, stats.kv_cache_usage, stats.generation_tokens_per_s) == (32, 0.16, 2281.38)
    # `cached_tokens` is the prefill batch's `#cached-token` (prefix hits); on a decode line the field
    # means something else, so it is kept as an extra field, not mixed into the prefill counts.
    assert stats.cached_tokens is None and stats.new_tokens is None
    assert stats.prefix_cache_hit_rate is None
    assert stats.extra is not None and stats.extra["#cached-token"] == 1200


LABELS = 'engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"'
TOKENIZER = 'engine_type="unified",model_name="m"'


def _before_realtime_counter(generated: float, prompt: float) -> str:
    """A page of a server older than `realtime_tokens_total` (§1.5: "since 2025-12-24")."""
    return (
        f"sglang:num_running_reqs{{{LABELS}}} 4.0\n"
        f"sglang:generation_tokens_total{{{TOKENIZER}}} {generated}\n"
        f"sglang:prompt_tokens_total{{{TOKENIZER}}} {prompt}\n"
    )


def test_without_realtime_counter_the_token_rates_say_they_count_finished_requests() -> None:
    # §1.3: generation_tokens_total "+ completion tokens at finish", prompt_tokens_total "+ prompt tokens at
    # request finish"; the cheat sheet: "moves only at request finish (lumpy)".
    figures = figures_between(
        scrape(_before_realtime_counter(1000.0, 500.0), 0.0),
        scrape(_before_realtime_counter(3000.0, 1500.0), 10.0),
    )
    assert figures.generation_tokens_per_s == pytest.approx(200.0)
    assert figures.prompt_tokens_per_s == pytest.approx(100.0)
    assert "finished" in figures.notes["generation_tokens_per_s"]
    assert "finished" in figures.notes["prompt_tokens_per_s"]


def test_with_realtime_counter_the_token_rates_carry_no_note() -> None:
    page = 'sglang:realtime_tokens_total{{{labels},mode="decode"}} {value}\n'
    figures = figures_between(
        scrape(page.format(labels=LABELS, value=100.0) + _before_realtime_counter(1000.0, 500.0), 0.0),
        scrape(page.format(labels=LABELS, value=2100.0) + _before_realtime_counter(3000.0, 1500.0), 10.0),
    )
    assert figures.generation_tokens_per_s == pytest.approx(200.0)
    assert "generation_tokens_per_s" not in figures.notes


def _gauges_only(draft_tokens_gauge: bool) -> str:
    """A server without spec_verify_calls_total (§1.3: "added 2026-05-18"): only the live spec gauges.
    t0 of the sample set: accept len 3752/1280 = 2.93125, accept rate 0.64375."""
    page = (
        f"sglang:num_running_reqs{{{LABELS}}} 32.0\n"
        f"sglang:spec_accept_length{{{LABELS}}} 2.93125\n"
        f"sglang:spec_accept_rate{{{LABELS}}} 0.64375\n"
    )
    if draft_tokens_gauge:
        page += f"sglang:spec_num_draft_tokens{{{LABELS}}} 4.0\n"
    return page


@pytest.mark.parametrize("draft_tokens_gauge", [False, True])
def test_a_rate_gauge_older_than_its_current_definition_says_so(
    draft_tokens_gauge: bool,
) -> None:
    # §5.1: the gauge was accept_len / num_draft_tokens (bonus counted) until 2026-04-28 and
    # (accept_len - 1) / (num_draft_tokens - 1) since; a page without spec_num_draft_tokens
    # (§1.5: "since 2026-06-01") cannot tell which one it prints.
    page = _gauges_only(draft_tokens_gauge)
    figures = figures_between(scrape(page, 0.0), scrape(page, 10.0))
    assert figures.mean_acceptance_length == pytest.approx(2.93125)
    assert figures.acceptance_rate == pytest.approx(0.64375)  # the server's own figure, shown as printed
    assert ("2026-04-28" in figures.notes.get("acceptance_rate", "")) is not draft_tokens_gauge
