"""The Markdown, CSV and JSON exports of a burst, and writing an export to a file."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

from tui.bench.report.models import BurstSummary
from tui.bench.report.summary import burst_summary
from tui.bench.report.text import (
    category_table,
    client_check_lines,
    equivalence_line,
    explain_lines,
    table_rows,
)
from tui.bench.results import ArmResult, BurstResult, RequestResult
from tui.configs.atomic import write_file
from tui.sanitize import safe_line
from tui.tables import Table, markdown_escape
from tui.tables import render_json as json_text

R = TypeVar("R")
# The CSV columns: a request's own fields (`name` its arm's, `chunks` counted), then its server's figures.
REQUEST_COLUMNS = (
    "arm", "name", "index", "round", "prompt_id", "ok", "error_kind", "http_status", "attempts",
    "scheduled_s", "sent_s", "send_lag_s", "ttft_s", "e2e_s", "output_tokens", "usage_estimated",
    "chunks", "tokens_per_chunk", "tpot_s", "chunk_gap_s", "decode_tokens_per_s", "finish_reason", "error",
    "category",
)  # fmt: skip
SERVER_COLUMNS = {  # column -> ServerFigures field
    "server_drafted": "drafted", "server_accepted": "accepted", "server_acceptance": "acceptance_rate",
    "server_mean_length": "mean_acceptance_length", "cached_tokens": "cached_tokens",
    "prompt_tokens": "prompt_tokens", "server_ttft_ms": "server_ttft_ms", "queue_ms": "queue_ms",
}  # fmt: skip
CSV_FIELDS = (*REQUEST_COLUMNS, *SERVER_COLUMNS)


def render_csv(result: BurstResult) -> str:
    return Table.of_records(
        CSV_FIELDS, (_csv_record(arm, r) for arm in result.arms for r in arm.requests)
    ).csv()


def _csv_record(arm: ArmResult, r: RequestResult) -> dict[str, object]:
    server = r.server
    return {
        **{column: getattr(r, column, None) for column in REQUEST_COLUMNS},
        "name": arm.name,
        "chunks": len(r.chunk_times_s),
        **{column: getattr(server, name) for column, name in SERVER_COLUMNS.items() if server is not None},
    }


# Most of a burst's bytes: in the JSON export only with `detail` (`spectop bench --json-detail`).
CHUNK_FIELDS = ("chunk_times_s", "chunk_chars", "chunk_tokens")


def render_json(result: BurstResult, *, detail: bool = False) -> str:
    """The summary and every request's timings and outputs; with `detail`, every chunk's too (lossless)."""
    payload = burst_summary(result).model_dump(mode="json")
    payload["burst"] = result.model_dump(mode="json")
    if not detail:
        requests = [r for arm in payload["burst"]["arms"] for r in arm["requests"]]
        for side in ("a", "b"):
            requests += (payload.get(side) or {}).get("requests_detail") or []
        for request in requests:
            for name in CHUNK_FIELDS:
                request.pop(name, None)
    return json_text(payload)


def render_markdown(summary: BurstSummary) -> str:
    lines = ["# spectop burst", ""]
    if summary.started_at:
        lines += [f"Started {summary.started_at.isoformat()}", ""]
    late = [
        line for label, arm in summary.arms for line in client_check_lines(label.upper(), arm.client_check)
    ]
    if late:
        late = [markdown_escape(line) for line in late]
        lines += [f"**{line}**" if line.startswith("!!!") else line for line in late] + [""]
    columns = ["figure", *(label.upper() for label, _ in summary.arms)]
    rows = [("endpoint", *(arm.url for _, arm in summary.arms)), *table_rows(summary)]
    lines += Table(columns, [row[: len(columns)] for row in rows]).markdown()
    categories = category_table(summary)
    if categories is not None:
        lines += ["", *categories.markdown()]
    explained = explain_lines(summary)
    if explained:
        lines += [""] + [f"- {markdown_escape(line)}" for line in explained]
    if summary.comparison:
        lines += ["", f"**Verdict:** {summary.comparison.verdict}"]
    equivalence = equivalence_line(summary)
    if equivalence and summary.equivalence:
        lines += ["", equivalence]
        for item in summary.equivalence.divergences[:20]:
            lines.append(
                f"- `{item.prompt_id}` at char {item.char_position}: "
                f"A `{markdown_escape(item.a_snippet)}` / B `{markdown_escape(item.b_snippet)}`"
            )
    return "\n".join(safe_line(line) for line in lines) + "\n"


def write_export(result: R, kind: str, path: Path, renderers: dict[str, Callable[[R], str]]) -> Path:
    if kind not in renderers:
        raise ValueError(f"unknown export kind {kind!r}")
    return write_file(path, renderers[kind](result))


def export(result: BurstResult, kind: str, path: Path, *, detail: bool = False) -> Path:
    """Write one export (`detail`: the JSON with every chunk's timing)."""
    renderers: dict[str, Callable[[BurstResult], str]] = {
        "json": partial(render_json, detail=detail),
        "csv": render_csv,
        "markdown": lambda r: render_markdown(burst_summary(r, with_detail=False)),
    }
    return write_export(result, kind, path, renderers)
