"""The CSV and JSON exports of a burst, and writing an export to a file."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from pathlib import Path

from tui.bench.report.markdown import render_markdown
from tui.bench.report.summary import burst_summary
from tui.bench.results import BurstResult, RequestResult
from tui.configs.atomic import write_file
from tui.sanitize import json_safe, safe_line

CSV_FIELDS = (
    "arm", "name", "index", "round", "prompt_id", "ok", "error_kind", "http_status", "attempts",
    "scheduled_s", "sent_s", "send_lag_s", "ttft_s", "e2e_s", "output_tokens", "usage_estimated",
    "chunks", "tokens_per_chunk", "tpot_s", "chunk_gap_s", "decode_tokens_per_s", "finish_reason", "error",
    "category", "server_drafted", "server_accepted", "server_acceptance", "server_mean_length",
    "cached_tokens", "prompt_tokens", "server_ttft_ms", "queue_ms",
)  # fmt: skip


def render_csv(result: BurstResult) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS)
    writer.writeheader()
    for arm in result.arms:
        for r in arm.requests:
            writer.writerow(
                {
                    "arm": r.arm, "name": safe_line(arm.name), "index": r.index, "round": r.round,
                    "prompt_id": safe_line(r.prompt_id), "ok": r.ok, "error_kind": r.error_kind or "",
                    "http_status": r.http_status or "", "attempts": r.attempts,
                    "scheduled_s": r.scheduled_s, "sent_s": r.sent_s, "send_lag_s": r.send_lag_s,
                    "ttft_s": _blank(r.ttft_s), "e2e_s": _blank(r.e2e_s),
                    "output_tokens": _blank(r.output_tokens), "usage_estimated": r.usage_estimated,
                    "chunks": len(r.chunk_times_s), "tokens_per_chunk": _blank(r.tokens_per_chunk),
                    "tpot_s": _blank(r.tpot_s), "chunk_gap_s": _blank(r.chunk_gap_s),
                    "decode_tokens_per_s": _blank(r.decode_tokens_per_s),
                    "finish_reason": safe_line(r.finish_reason or ""), "error": safe_line(r.error or ""),
                    **_server_columns(r),
                }
            )  # fmt: skip
    return out.getvalue()


def _server_columns(r: RequestResult) -> dict[str, object]:
    server = r.server
    if server is None:
        return {"category": safe_line(r.category or "")}
    return {
        "category": safe_line(r.category or ""), "server_drafted": _blank(server.drafted),
        "server_accepted": _blank(server.accepted), "server_acceptance": _blank(server.acceptance_rate),
        "server_mean_length": _blank(server.mean_acceptance_length),
        "cached_tokens": _blank(server.cached_tokens), "prompt_tokens": _blank(server.prompt_tokens),
        "server_ttft_ms": _blank(server.server_ttft_ms), "queue_ms": _blank(server.queue_ms),
    }  # fmt: skip


def _blank(value: object) -> object:
    return "" if value is None else value


# Every chunk's arrival, size and tokens: most of a burst's bytes (64 requests of 256 tokens are 1 MB of
# them); in the JSON export only with `detail` (`spectop bench --json-detail`).
CHUNK_FIELDS = ("chunk_times_s", "chunk_chars", "chunk_tokens")


def render_json(result: BurstResult, *, detail: bool = False) -> str:
    """The summary and every request's timings and outputs; with `detail`, every chunk's too (then the
    "burst" part is the whole BurstResult, lossless)."""
    payload = burst_summary(result).model_dump(mode="json")
    payload["burst"] = result.model_dump(mode="json")
    if not detail:
        requests = [r for arm in payload["burst"]["arms"] for r in arm["requests"]]
        for side in ("a", "b"):
            requests += (payload.get(side) or {}).get("requests_detail") or []
        for request in requests:
            for name in CHUNK_FIELDS:
                request.pop(name, None)
    return json_safe(json.dumps(payload, ensure_ascii=False, indent=1, default=str))


def export_name(kind: str, when: datetime) -> str:
    extension = {"json": "json", "csv": "csv", "markdown": "md"}[kind]
    return f"spectop-burst-{when.strftime('%Y%m%d-%H%M%S')}.{extension}"


def export(result: BurstResult, kind: str, path: Path, *, detail: bool = False) -> Path:
    """Write one export; `kind` is json, csv or markdown (`detail`: the JSON with every chunk's
    timing). Returns the path written."""
    if kind == "json":
        text = render_json(result, detail=detail)
    elif kind == "csv":
        text = render_csv(result)
    elif kind == "markdown":
        text = render_markdown(burst_summary(result, with_detail=False))
    else:
        raise ValueError(f"unknown export kind {kind!r}")
    return write_file(path, text)
