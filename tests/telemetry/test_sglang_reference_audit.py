"""SGLang metrics variants from `shared/reference/sglang.md` (log-line ones: test_logs_reference_lines)."""

from __future__ import annotations

import pytest
from metrics_test_server import scrape

from tui.telemetry.window import figures_between

LABELS = 'engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"'
TOKENIZER = 'engine_type="unified",model_name="m"'


def _before_realtime_counter(generated: float, prompt: float) -> str:
    """A page of a server older than `realtime_tokens_total` (§1.5: "since 2025-12-24")."""
    return (
        f"sglang:num_running_reqs{{{LABELS}}} 4.0\n"
        f"sglang:generation_tokens_total{{{TOKENIZER}}} {generated}\n"
        f"sglang:prompt_tokens_total{{{TOKENIZER}}} {prompt}\n"
    )


@pytest.mark.parametrize("realtime", [False, True])
def test_without_realtime_counter_the_token_rates_say_they_count_finished_requests(realtime: bool) -> None:
    # §1.3: generation_tokens_total "+ completion tokens at finish", prompt_tokens_total "+ prompt tokens at
    # request finish"; the cheat sheet: "moves only at request finish (lumpy)".
    def page(decode: float, generated: float, prompt: float) -> str:
        counter = f'sglang:realtime_tokens_total{{{LABELS},mode="decode"}} {decode}\n' if realtime else ""
        return counter + _before_realtime_counter(generated, prompt)

    figures = figures_between(
        scrape(page(100.0, 1000.0, 500.0), 0.0), scrape(page(2100.0, 3000.0, 1500.0), 10.0)
    )
    assert figures.generation_tokens_per_s == pytest.approx(200.0)
    assert ("finished" in figures.notes.get("generation_tokens_per_s", "")) is not realtime
    if not realtime:
        assert figures.prompt_tokens_per_s == pytest.approx(100.0)
        assert "finished" in figures.notes["prompt_tokens_per_s"]


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
def test_a_rate_gauge_older_than_its_current_definition_says_so(draft_tokens_gauge: bool) -> None:
    # §5.1: the gauge was accept_len / num_draft_tokens (bonus counted) until 2026-04-28 and
    # (accept_len - 1) / (num_draft_tokens - 1) since; a page without spec_num_draft_tokens
    # (§1.5: "since 2026-06-01") cannot tell which one it prints.
    page = _gauges_only(draft_tokens_gauge)
    figures = figures_between(scrape(page, 0.0), scrape(page, 10.0))
    assert figures.mean_acceptance_length == pytest.approx(2.93125)
    assert figures.acceptance_rate == pytest.approx(0.64375)  # the server's own figure, shown as printed
    assert ("2026-04-28" in figures.notes.get("acceptance_rate", "")) is not draft_tokens_gauge
