"""The bench report says why requests failed, not only how many: a redirect not followed and a
Retry-After beyond spectop's wait were only in `--json`."""

from __future__ import annotations

from datetime import UTC, datetime

from tui.bench.report.summary import burst_summary
from tui.bench.report.text import render_text
from tui.bench.results import ArmResult, BurstResult, BurstSettingsRecord, RequestResult

REDIRECT = "redirected (302) to https://sso.example/login; not followed (it would carry the API key)"
RETRY = "retry after 3600 s, more than the 30 s spectop waits"


def _request(index: int, error: str | None) -> RequestResult:
    if error is None:
        return RequestResult(arm="a", index=index, prompt_id=f"p{index}", scheduled_s=index, sent_s=index,
                             ttft_s=0.1, e2e_s=1.0, chunk_times_s=[0.1, 0.5, 1.0], chunk_chars=[4, 4, 4],
                             output_tokens=3, finish_reason="stop", text="abc")  # fmt: skip
    status = 302 if error is REDIRECT else 429
    return RequestResult(arm="a", index=index, prompt_id=f"p{index}", scheduled_s=index, sent_s=index,
                         error_kind="http_status", http_status=status, error=error)  # fmt: skip


def test_the_text_report_gives_each_reason_with_its_count() -> None:
    requests = [_request(0, None), _request(1, REDIRECT), _request(2, REDIRECT), _request(3, RETRY)]
    settings = BurstSettingsRecord(prompt_set="mixed", prompt_set_digest="mixed", requests=4, concurrency=1,
                                   max_tokens=8, temperature=0.0)  # fmt: skip
    arm = ArmResult(label="a", name="A", url="http://127.0.0.1:1", model="m", active_s=3.0, requests=requests)
    burst = BurstResult(
        started_at=datetime(2026, 12, 1, tzinfo=UTC), duration_s=4.0, settings=settings, arms=[arm]
    )
    text = render_text(burst_summary(burst, with_detail=False))
    assert "A errors: http_status 3" in text
    assert f"2× {REDIRECT}" in text and f"1× {RETRY}" in text
    assert text.index(REDIRECT) < text.index(RETRY)  # the most frequent first
