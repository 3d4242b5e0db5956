"""Burst summaries, the verdict line, and JSON / CSV / Markdown / plain-text renderings."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from tui.bench.equivalence import compare_outputs
from tui.bench.results import ERROR_KINDS, ArmResult, BurstResult, RequestResult
from tui.bench.stats import bootstrap_pooled_ratio_ci, pooled_rate, summarize
from tui.sanitize import json_safe, safe_line

DASH = "–"
CSV_FIELDS = (
    "arm", "name", "index", "round", "prompt_id", "ok", "error_kind", "http_status", "attempts",
    "scheduled_s", "sent_s", "send_lag_s", "ttft_s", "e2e_s", "output_tokens", "usage_estimated",
    "chunks", "tokens_per_chunk", "tpot_s", "chunk_gap_s", "decode_tokens_per_s", "finish_reason", "error",
)  # fmt: skip


def aggregate_tokens_per_s(arm: ArmResult) -> float | None:
    tokens = sum(r.output_tokens or 0 for r in arm.requests if r.ok)
    if not tokens or not arm.active_s:
        return None
    return tokens / arm.active_s


def tokens_per_chunk(arm: ArmResult) -> float | None:
    ok = [r for r in arm.requests if r.ok and r.output_tokens is not None and r.chunk_times_s]
    chunks = sum(len(r.chunk_times_s) for r in ok)
    return sum(r.output_tokens or 0 for r in ok) / chunks if chunks else None


def _request_detail(result: RequestResult) -> dict[str, Any]:
    detail = result.model_dump(exclude={"text"})
    detail["text_chars"] = len(result.text)
    return detail


def arm_summary(arm: ArmResult, *, with_detail: bool = True) -> dict[str, Any]:
    ok = [r for r in arm.requests if r.ok]
    decode = summarize([r.decode_tokens_per_s for r in ok])
    errors_by_kind = {kind: sum(1 for r in arm.requests if r.error_kind == kind) for kind in ERROR_KINDS}
    summary: dict[str, Any] = {
        "name": arm.name,
        "url": arm.url,
        "model": arm.model,
        "requests": len(arm.requests),
        "errors": len(arm.requests) - len(ok),
        "errors_by_kind": {kind: count for kind, count in errors_by_kind.items() if count},
        "retries": sum(r.attempts - 1 for r in arm.requests),
        "retried_requests": sum(1 for r in arm.requests if r.attempts > 1),
        "ttft_s": summarize([r.ttft_s for r in ok]).as_dict(),
        "tpot_s": summarize([r.tpot_s for r in ok]).as_dict(),
        "chunk_gap_s": summarize([r.chunk_gap_s for r in ok]).as_dict(),
        "e2e_s": summarize([r.e2e_s for r in ok]).as_dict(),
        "decode_tokens_per_s": {"mean": decode.mean, "p50": decode.p50},
        "output_tokens_per_s": aggregate_tokens_per_s(arm),
        "tokens_per_chunk": tokens_per_chunk(arm),
        "send_lag_s": summarize([r.send_lag_s for r in arm.requests]).as_dict(),
        "usage_estimated": any(r.usage_estimated for r in ok),
        "acceptance_rate": arm.server.acceptance_rate,
        "mean_acceptance_length": arm.server.mean_acceptance_length,
        "acceptance_note": arm.server.note,
    }
    if with_detail:
        summary["requests_detail"] = [_request_detail(r) for r in arm.requests]
    return summary


def _paired_samples(
    a: ArmResult, b: ArmResult
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]] | None:
    b_samples = {r.index: (r.prompt_id, r.decode_sample()) for r in b.requests}
    left, right = [], []
    for result in a.requests:
        other = b_samples.get(result.index)
        sample = result.decode_sample()
        if other and other[0] == result.prompt_id and sample and other[1]:
            left.append(sample)
            right.append(other[1])
    return (left, right) if len(left) >= 2 else None


def _fmt_ms_delta(seconds: float | None) -> str:
    return DASH if seconds is None else f"{round(seconds * 1000):+d} ms"


def verdict_text(
    ratio: float | None, ci: tuple[float, float] | None, ttft_delta_s: float | None, acceptance: str | None
) -> str:
    if ratio is None:
        return "no comparison: an arm has no successful request with 2+ tokens"
    tail = f", TTFT {_fmt_ms_delta(ttft_delta_s)}"
    if acceptance:
        tail += f", {acceptance}"
    if ci is None:
        return f"B/A {ratio:.2f}x (too few requests for a confidence interval){tail}"
    interval = f"95% CI {ci[0]:.2f}-{ci[1]:.2f}"
    if ci[0] <= 1.0 <= ci[1]:
        return f"no significant difference (B/A {ratio:.2f}x, {interval}){tail}"
    if ratio >= 1.0:
        return f"B is {ratio:.2f}x faster ({interval}){tail}"
    return f"B is {1 / ratio:.2f}x slower ({ratio:.2f}x, {interval}){tail}"


def _acceptance_words(a: ArmResult, b: ArmResult) -> str | None:
    """Both arms' server acceptance, A → B ("–" for an arm whose server did not say)."""
    rates = (a.server.acceptance_rate, b.server.acceptance_rate)
    if all(rate is None for rate in rates):
        return None
    return "acceptance " + " → ".join(DASH if rate is None else f"{rate * 100:.0f}%" for rate in rates)


def comparison(a: ArmResult, b: ArmResult, *, seed: int = 0) -> dict[str, Any]:
    # Pooled decode rate, Σ(tokens - 1) / Σ(e2e - TTFT) per arm: a ratio of per-request means
    # lets one stream read all at once (near-zero decode time) swing the verdict.
    a_samples = [sample for r in a.requests if (sample := r.decode_sample())]
    b_samples = [sample for r in b.requests if (sample := r.decode_sample())]
    ratio = ci = None
    a_rate, b_rate = pooled_rate(a_samples), pooled_rate(b_samples)
    if a_rate and b_rate:
        ratio = b_rate / a_rate
        paired = _paired_samples(a, b)
        if paired is not None and len(paired[0]) >= 0.8 * min(len(a_samples), len(b_samples)):
            ci = bootstrap_pooled_ratio_ci(paired[0], paired[1], paired=True, seed=seed)
        else:
            ci = bootstrap_pooled_ratio_ci(a_samples, b_samples, seed=seed)
    a_throughput, b_throughput = aggregate_tokens_per_s(a), aggregate_tokens_per_s(b)
    throughput_ratio = b_throughput / a_throughput if a_throughput and b_throughput else None
    a_ttft = summarize([r.ttft_s for r in a.requests if r.ok]).p50
    b_ttft = summarize([r.ttft_s for r in b.requests if r.ok]).p50
    ttft_delta = b_ttft - a_ttft if a_ttft is not None and b_ttft is not None else None
    return {
        "decode_tokens_per_s_ratio": ratio,
        "ci95": list(ci) if ci else None,
        "throughput_ratio": throughput_ratio,
        "ttft_p50_delta_s": ttft_delta,
        "verdict": verdict_text(ratio, ci, ttft_delta, _acceptance_words(a, b)),
    }


def build_summary(
    a: ArmResult, b: ArmResult | None, *, temperature: float, with_detail: bool = True
) -> dict[str, Any]:
    """The JSON summary: {"a": ARM, "b": ARM|None, "comparison": ..., "equivalence": ...}."""
    summary: dict[str, Any] = {
        "a": arm_summary(a, with_detail=with_detail),
        "b": arm_summary(b, with_detail=with_detail) if b else None,
        "comparison": comparison(a, b) if b else None,
        "equivalence": None,
    }
    if b is not None and temperature == 0.0:
        summary["equivalence"] = compare_outputs(a.requests, b.requests).model_dump()
    return summary


def burst_summary(result: BurstResult, *, with_detail: bool = True) -> dict[str, Any]:
    a = result.arms[0]
    b = result.arms[1] if len(result.arms) > 1 else None
    summary = build_summary(a, b, temperature=result.settings.temperature, with_detail=with_detail)
    summary["settings"] = result.settings.model_dump()
    summary["started_at"] = result.started_at.isoformat()
    summary["duration_s"] = result.duration_s
    summary["cancelled"] = result.cancelled
    return summary


# --- rendering ---------------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return DASH if value is None else f"{value * 1000:.1f} ms"


def _s(value: float | None) -> str:
    return DASH if value is None else f"{value:.2f} s"


def _rate(value: float | None) -> str:
    return DASH if value is None else f"{value:.1f}"


def _ratio(value: float | None) -> str:
    return DASH if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return DASH if value is None else f"{value * 100:.1f}%"


def _count(value: int | None) -> str:
    return DASH if value is None else str(value)


def _get(arm: dict[str, Any] | None, *path: str) -> Any:
    value: Any = arm
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


Row = tuple[str, tuple[str, ...], Callable[[Any], str]]
TABLE_ROWS: tuple[Row, ...] = (
    ("requests", ("requests",), _count),
    ("errors", ("errors",), _count),
    ("retries", ("retries",), _count),
    ("TTFT mean", ("ttft_s", "mean"), _ms),
    ("TTFT p50", ("ttft_s", "p50"), _ms),
    ("TTFT p90", ("ttft_s", "p90"), _ms),
    ("TTFT p99", ("ttft_s", "p99"), _ms),
    ("TPOT (per token) p50", ("tpot_s", "p50"), _ms),
    ("chunk gap p50", ("chunk_gap_s", "p50"), _ms),
    ("e2e p50", ("e2e_s", "p50"), _s),
    ("decode tok/s mean", ("decode_tokens_per_s", "mean"), _rate),
    ("decode tok/s p50", ("decode_tokens_per_s", "p50"), _rate),
    ("output tok/s (all)", ("output_tokens_per_s",), _rate),
    ("tokens per chunk", ("tokens_per_chunk",), _ratio),
    ("send lag p99", ("send_lag_s", "p99"), _ms),
    ("acceptance (server)", ("acceptance_rate",), _pct),
    ("mean accept length", ("mean_acceptance_length",), _ratio),
)


def table_rows(summary: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(figure, A, B) rows; B is "" in a one-arm burst."""
    rows = []
    for label, path, formatter in TABLE_ROWS:
        b_text = formatter(_get(summary.get("b"), *path)) if summary.get("b") else ""
        rows.append((label, formatter(_get(summary["a"], *path)), b_text))
    return rows


def equivalence_line(summary: dict[str, Any]) -> str | None:
    equivalence = summary.get("equivalence")
    if not equivalence:
        return None
    line = f"greedy equivalence: {equivalence['identical']}/{equivalence['compared']} identical"
    divergences = equivalence.get("divergences") or []
    if divergences:
        first = divergences[0]
        token = first.get("token_position")
        where = f"char {first['char_position']}" + (f", token {token}" if token is not None else "")
        line += f"; first divergence in {first['prompt_id']} at {where}"
    return line


def note_lines(summary: dict[str, Any]) -> list[str]:
    """Caveats under the table: estimated token counts, errors by kind, missing server figures."""
    lines = []
    arms = [(label, summary.get(label)) for label in ("a", "b") if summary.get(label)]
    if any(arm.get("usage_estimated") for _, arm in arms):
        lines.append("tokens counted from chunks: the server sent no usage (estimated)")
    for label, arm in arms:
        if arm.get("errors_by_kind"):
            kinds = ", ".join(f"{kind} {count}" for kind, count in arm["errors_by_kind"].items())
            lines.append(f"{label.upper()} errors: {kinds}")
    return lines


def render_text(summary: dict[str, Any]) -> str:
    """The summary table for a terminal (fits 80 columns)."""
    has_b = summary.get("b") is not None
    header = f"{'':22}{'A':>16}" + (f"{'B':>16}" if has_b else "")
    lines = [header]
    lines.append(f"{'endpoint':22}{_short(summary['a']['url']):>16}" + (
        f"{_short(summary['b']['url']):>16}" if has_b else ""))  # fmt: skip
    for label, a_text, b_text in table_rows(summary):
        lines.append(f"{label:22}{a_text:>16}" + (f"{b_text:>16}" if has_b else ""))
    lines += note_lines(summary)
    if summary.get("comparison"):
        lines.append("")
        lines.append(summary["comparison"]["verdict"])
    equivalence = equivalence_line(summary)
    if equivalence:
        lines.append(equivalence)
    return "\n".join(safe_line(line) for line in lines)


def _short(url: str, width: int = 15) -> str:
    text = url.split("://", 1)[-1]
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def render_markdown(summary: dict[str, Any]) -> str:
    has_b = summary.get("b") is not None
    lines = ["# spectop burst", ""]
    if summary.get("started_at"):
        lines += [f"Started {summary['started_at']}", ""]
    lines.append("| figure | A |" + (" B |" if has_b else ""))
    lines.append("| --- | --- |" + (" --- |" if has_b else ""))
    lines.append(f"| endpoint | {summary['a']['url']} |" + (f" {summary['b']['url']} |" if has_b else ""))
    for label, a_text, b_text in table_rows(summary):
        lines.append(f"| {label} | {a_text} |" + (f" {b_text} |" if has_b else ""))
    if summary.get("comparison"):
        lines += ["", f"**Verdict:** {summary['comparison']['verdict']}"]
    equivalence = equivalence_line(summary)
    if equivalence:
        lines += ["", equivalence]
        for item in (summary["equivalence"].get("divergences") or [])[:20]:
            lines.append(
                f"- `{item['prompt_id']}` at char {item['char_position']}: "
                f"A `{_md_code(item['a_snippet'])}` / B `{_md_code(item['b_snippet'])}`"
            )
    return "\n".join(safe_line(line) for line in lines) + "\n"


def _md_code(text: str) -> str:
    return text.replace("`", "'").replace("\n", "⏎").replace("|", "\\|")


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
                }
            )  # fmt: skip
    return out.getvalue()


def _blank(value: object) -> object:
    return "" if value is None else value


def render_json(result: BurstResult) -> str:
    """Every request's raw timings (and outputs) plus the summary."""
    payload = burst_summary(result)
    payload["burst"] = result.model_dump(mode="json")
    return json_safe(json.dumps(payload, ensure_ascii=False, indent=1, default=str))


def export_name(kind: str, when: datetime) -> str:
    extension = {"json": "json", "csv": "csv", "markdown": "md"}[kind]
    return f"spectop-burst-{when.strftime('%Y%m%d-%H%M%S')}.{extension}"


def export(result: BurstResult, kind: str, path: Path) -> Path:
    """Write one export; `kind` is json, csv or markdown. Returns the path written."""
    if kind == "json":
        text = render_json(result)
    elif kind == "csv":
        text = render_csv(result)
    elif kind == "markdown":
        text = render_markdown(burst_summary(result, with_detail=False))
    else:
        raise ValueError(f"unknown export kind {kind!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)
    return path
