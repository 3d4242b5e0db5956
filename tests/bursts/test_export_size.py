"""A 64-request burst's JSON export is not 1 MB: chunk times only with --json-detail."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from tui.bench.report.export import CHUNK_FIELDS, export
from tui.bench.results import ArmResult, BurstResult, BurstSettingsRecord, RequestResult

REQUESTS, TOKENS = 64, 256


def _arm(label: str) -> ArmResult:
    requests = []
    for index in range(REQUESTS):
        times = [0.05 + 0.0123456 * i + 0.0001 * index for i in range(TOKENS)]
        requests.append(
            RequestResult(
                arm=label,
                index=index,
                prompt_id=f"p{index}",
                scheduled_s=index * 0.5,
                sent_s=index * 0.5,
                ttft_s=times[0],
                e2e_s=times[-1],
                chunk_times_s=times,
                chunk_chars=[4] * TOKENS,
                chunk_tokens=[1] * TOKENS,
                output_tokens=TOKENS,
                text="word " * 50,
                finish_reason="length",
            )
        )
    return ArmResult(
        label=label, name=label, url=f"http://127.0.0.1:9/{label}", active_s=30.0, requests=requests
    )


def _burst() -> BurstResult:
    settings = BurstSettingsRecord(
        prompt_set="mixed",
        prompt_set_digest="x",
        requests=REQUESTS,
        concurrency=8,
        max_tokens=TOKENS,
        temperature=0.0,
    )
    return BurstResult(
        started_at=datetime(2026, 12, 1, tzinfo=UTC),
        duration_s=60.0,
        settings=settings,
        arms=[_arm("a"), _arm("b")],
    )


def test_the_json_export_keeps_chunk_times_for_json_detail_only(tmp_path: Path) -> None:
    burst = _burst()
    plain = export(burst, "json", tmp_path / "plain.json")
    detailed = export(burst, "json", tmp_path / "detail.json", detail=True)
    plain_size, detail_size = plain.stat().st_size, detailed.stat().st_size
    print(
        f"64-request burst export: {plain_size / 1e3:.0f} kB; with --json-detail {detail_size / 1e3:.0f} kB"
    )
    assert plain_size < 1_000_000 <= detail_size  # the detail is what made it 1 MB
    assert plain_size * 4 < detail_size
    data = json.loads(plain.read_text(encoding="utf-8"))
    request = data["burst"]["arms"][0]["requests"][0]
    assert not set(CHUNK_FIELDS) & set(request) and request["ttft_s"] == burst.arms[0].requests[0].ttft_s
    assert not set(CHUNK_FIELDS) & set(data["a"]["requests_detail"][0])
    assert BurstResult.model_validate(json.loads(detailed.read_text(encoding="utf-8"))["burst"]) == burst
