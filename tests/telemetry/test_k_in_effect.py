"""The k in effect on the dashboard: vLLM's drafts per verify step derived from
its counters beside the configured k (the per-position labels), per position "mixed" when k varied
(a per-batch-size table); SGLang's adaptive tier from `spec_num_steps`."""

from __future__ import annotations

import pytest
from metrics_test_server import scrape

from tui.format import MIXED, figure_text, fmt_k_in_effect
from tui.telemetry.window import figures_between


def _vllm_page(drafts: float, draft_tokens: float, positions: tuple[float, ...]) -> str:
    labels = 'engine="0",model_name="m"'
    lines = [
        f"vllm:spec_decode_num_drafts_total{{{labels}}} {drafts}",
        f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {draft_tokens}",
        f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {sum(positions)}",
        *(
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{i}"}} {value}'
            for i, value in enumerate(positions)
        ),
        f"vllm:num_requests_running{{{labels}}} 4",
    ]
    return "\n".join(lines) + "\n"


def test_vllm_static_k_keeps_per_position_and_shows_the_k() -> None:
    first = scrape(_vllm_page(0, 0, (0, 0, 0)), 0.0)
    last = scrape(_vllm_page(100, 300, (80, 50, 20)), 10.0)
    f = figures_between(first, last)
    assert (f.k_in_effect, f.k_configured, f.k_in_effect_derived) == (3.0, 3, True)
    assert f.per_position_acceptance == pytest.approx([0.8, 0.5, 0.2]) and not f.per_position_mixed
    assert fmt_k_in_effect(f) == "3 of 3 (derived)"


def test_vllm_table_mixes_draft_lengths_per_position_says_mixed() -> None:
    # 100 steps, 180 draft tokens: some steps drafted 1 token, others 3 (a per-batch-size table).
    first = scrape(_vllm_page(0, 0, (0, 0, 0)), 0.0)
    last = scrape(_vllm_page(100, 180, (70, 30, 10)), 10.0)
    f = figures_between(first, last)
    assert f.k_in_effect == pytest.approx(1.8) and f.k_configured == 3
    assert f.per_position_acceptance is None and f.per_position_mixed
    assert figure_text(f, "per_position_acceptance") == MIXED
    assert "mixed: steps drafted 1.80 tokens on average of 3 positions" in f.notes["per_position_acceptance"]
    assert fmt_k_in_effect(f) == "1.8 of 3 (derived)"


def _sglang_page(steps: float | None, running: float = 4) -> str:
    labels = 'engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"'
    text = f"sglang:num_running_reqs{{{labels}}} {running}\nsglang:spec_accept_length{{{labels}}} 2.5\n"
    if steps is not None:
        text += f"sglang:spec_num_steps{{{labels}}} {steps}\n"
    return text


@pytest.mark.parametrize(
    ("steps", "running", "shown"),
    [(3.0, 4, "3"), (1.0, 4, "1"), (None, 4, "–"), (3.0, 0, "–")],  # idle: the gauge goes stale
)
def test_sglang_tier_in_use_from_spec_num_steps(steps: float | None, running: float, shown: str) -> None:
    f = figures_between(scrape(_sglang_page(steps, running), 0.0), scrape(_sglang_page(steps, running), 5.0))
    assert fmt_k_in_effect(f) == shown and not f.k_in_effect_derived
