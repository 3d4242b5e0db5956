"""The summary for a terminal: the table's rows, notes, explanation lines (80 columns)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tui.bench import explain
from tui.bench.explain import AcceptanceFigures
from tui.bench.report.models import ArmExplain, ArmSummary, BurstSummary
from tui.bench.report.summary import DEFAULT_QS, coalesced_words, sequential_words
from tui.bench.results import ClientCheck
from tui.format import UNKNOWN, fmt_count, fmt_latency, fmt_length, fmt_per_s, fmt_rate, fmt_tokens_per_s
from tui.sanitize import safe_line
from tui.tables import Table

Row = tuple[str, Callable[[ArmSummary], Any], Callable[[Any], str]]
TABLE_ROWS: tuple[Row, ...] = (
    ("requests", lambda arm: arm.requests, fmt_count),
    ("errors", lambda arm: arm.errors, fmt_count),
    ("retries", lambda arm: arm.retries, fmt_count),
    ("TTFT mean", lambda arm: arm.ttft_s.mean, fmt_latency),
    ("TTFT p50", lambda arm: arm.ttft_s.p50, fmt_latency),
    ("TTFT p90", lambda arm: arm.ttft_s.p90, fmt_latency),
    ("TTFT p99", lambda arm: arm.ttft_s.p99, fmt_latency),
    ("TPOT (per token) p50", lambda arm: arm.tpot_s.p50, fmt_latency),
    ("chunk gap p50", lambda arm: arm.chunk_gap_s.p50, fmt_latency),
    ("e2e p50", lambda arm: arm.e2e_s.p50, fmt_latency),
    ("decode tok/s p10", lambda arm: arm.decode_tokens_per_s.p10, fmt_tokens_per_s),
    ("decode tok/s p50", lambda arm: arm.decode_tokens_per_s.p50, fmt_tokens_per_s),
    ("decode tok/s p90", lambda arm: arm.decode_tokens_per_s.p90, fmt_tokens_per_s),
    ("output tok/s (all)", lambda arm: arm.output_tokens_per_s, fmt_tokens_per_s),
    ("tokens per chunk", lambda arm: arm.tokens_per_chunk, fmt_length),
    ("send lag p99", lambda arm: arm.send_lag_s.p99, fmt_latency),
    ("acceptance (server)", lambda arm: arm.acceptance_rate, fmt_rate),
    ("mean accept length", lambda arm: arm.mean_acceptance_length, fmt_length),
)


def _x(get: Callable[[ArmExplain], Any]) -> Callable[[ArmSummary], Any]:
    return lambda arm: get(arm.explain) if arm.explain is not None else None


def _spread(value: tuple[float | None, float | None, float | None] | None) -> str:
    if value is None or any(v is None for v in value):
        return UNKNOWN
    return "/".join(fmt_rate(v) for v in value)


def _goodput(value: explain.Goodput | None) -> str:
    if value is None or value.fraction is None:
        return UNKNOWN
    rate = f" {fmt_per_s(value.per_s)}/s" if value.per_s is not None else ""
    return f"{fmt_rate(value.fraction)}{rate}"


def _milliseconds(value: float | None) -> str:
    return fmt_latency(None if value is None else value / 1000)


# Rows from the servers' per-request figures, the SLOs and the cache: shown when an arm has them.
EXPLAIN_ROWS: tuple[Row, ...] = (
    ("decode tok/s pooled", _x(lambda e: e.decode_tokens_per_s_pooled), fmt_tokens_per_s),
    ("requests/s", _x(lambda e: e.request_throughput), fmt_per_s),
    ("goodput (SLO)", _x(lambda e: e.goodput), _goodput),
    ("accept/request pooled", _x(lambda e: e.acceptance.pooled), fmt_rate),
    ("accept/req p10/50/90", _x(lambda e: (e.acceptance.p10, e.acceptance.p50, e.acceptance.p90)), _spread),
    ("accept length/request", _x(lambda e: e.acceptance.mean_length), fmt_length),
    ("TTFT server p50", _x(lambda e: e.timing.server_ttft_p50_ms), _milliseconds),
    ("TTFT client-server p50", _x(lambda e: e.timing.overhead_p50_ms), _milliseconds),
    ("queue (server) p50", _x(lambda e: e.timing.queue_p50_ms), _milliseconds),
    ("prompt cached", _x(lambda e: e.cache.share), fmt_rate),
)
_ALWAYS = frozenset({"decode tok/s pooled", "requests/s"})


def _rows_for(
    summary: BurstSummary, rows: tuple[Row, ...], *, skip_empty: bool
) -> list[tuple[str, str, str]]:
    out = []
    for label, figure, formatter in rows:
        values = [figure(arm) for _, arm in summary.arms]
        if skip_empty and label not in _ALWAYS and all(_empty(value) for value in values):
            continue
        texts = [formatter(value) for value in values]
        out.append((label, texts[0], texts[1] if len(texts) > 1 else ""))
    return out


def _empty(value: Any) -> bool:
    return all(item is None for item in value) if isinstance(value, tuple) else value is None


def _percentile(key: str, q: str) -> Callable[[ArmExplain], float | None]:
    return lambda e: e.percentiles.get(key, {}).get(q)


def _percentile_rows(summary: BurstSummary) -> tuple[Row, ...]:
    """Rows for --percentiles beyond the table's own p50 / p90 / p99."""
    qs = [f"{q:g}" for q in summary.settings.percentiles or () if q not in DEFAULT_QS]
    return tuple(
        (f"{name} p{q}", _x(_percentile(key, q)), fmt_latency)
        for name, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"), ("e2e", "e2e_s"))
        for q in qs
    )


def _gpu(spec: str, unit: str = "") -> Callable[[float | None], str]:
    """GPU energy figures (joules, tokens per joule): not in the live vocabulary, "–" when unknown."""
    return lambda value: UNKNOWN if value is None else f"{value:{spec}}{unit}"


GPU_ROWS: tuple[Row, ...] = (  # shown when an arm's GPUs were watched
    ("GPU energy", lambda arm: arm.energy_j, _gpu(".0f", " J")),
    ("energy per token", lambda arm: arm.energy_per_token_j, _gpu(".3g", " J")),
    ("tokens per joule", lambda arm: arm.tokens_per_joule, _gpu(".3g")),
    ("clocks throttled", lambda arm: arm.throttled, lambda v: UNKNOWN if v is None else "yes" if v else "no"),
)


def table_rows(summary: BurstSummary) -> list[tuple[str, str, str]]:
    """(figure, A, B) rows (B "" for one arm); per-request server rows that no arm has are left out."""
    rows = _rows_for(summary, TABLE_ROWS, skip_empty=False)
    rows += _rows_for(summary, _percentile_rows(summary), skip_empty=False)
    rows += _rows_for(summary, EXPLAIN_ROWS, skip_empty=True)
    if any(arm.gpu is not None for _, arm in summary.arms):  # shown when an arm's GPUs were watched
        rows += _rows_for(summary, GPU_ROWS, skip_empty=False)
    return rows


def category_table(summary: BurstSummary) -> Table | None:
    """Acceptance and decode tok/s per prompt category, per arm; None when there is nothing to tell."""
    tables = [
        {row.category: row for row in arm.explain.categories} if arm.explain else {}
        for _, arm in summary.arms
    ]
    names = list(dict.fromkeys(name for table in tables for name in table))
    if len(names) < 2 and not any(row.acceptance is not None for t in tables for row in t.values()):
        return None

    def cells(row: explain.CategoryRow | None) -> tuple[str, str]:
        acceptance, rate = (row.acceptance, row.decode_tokens_per_s) if row else (None, None)
        return fmt_rate(acceptance), fmt_tokens_per_s(rate)

    rows = [[name, *(cell for table in tables for cell in cells(table.get(name)))] for name in names]
    columns = [
        "category",
        *(f"{arm.upper()} {what}" for arm, _ in summary.arms for what in ("accept", "tok/s")),
    ]
    return Table(columns, rows)


def explain_lines(summary: BurstSummary) -> list[str]:
    """Under the table: the schedule, what the arms differ by, warnings, reconciliation, outliers."""
    lines: list[str] = []
    settings, comparison_ = summary.settings, summary.comparison
    if settings.schedule_reason:
        lines.append(f"schedule: {settings.schedule_reason}")
    if settings.stop_reason:
        words = sequential_words(settings.ci_level or 0.95, settings.looks or 1)
        lines.append(
            f"until significant: {settings.rounds} rounds, stopped: {settings.stop_reason} ({words})"
        )
    if comparison_ is not None:
        if comparison_.arms_differ_by:
            lines.append(comparison_.arms_differ_by)
        lines += [f"warning: {warning}" for warning in comparison_.warnings]
    for label, arm in summary.arms:
        extra = arm.explain
        if extra is None:
            continue
        name = label.upper()
        lines += [f"{name}: {note}" for note in extra.notes]
        if extra.acceptance.note and extra.acceptance.note != "no request succeeded":
            lines.append(f"{name}: {extra.acceptance.note}")
        lines += acceptance_lines(name, extra.acceptance)
        if extra.reconciliation is not None and extra.acceptance.requests:
            lines.append(f"{name} /metrics: {extra.reconciliation.message}")
        if extra.goodput is not None and extra.slo:
            lines.append(
                f"{name} SLO {extra.slo}: {extra.goodput.good}/{extra.goodput.requests} requests met all"
            )
        lines += [f"{name} outlier {outlier.describe()}" for outlier in extra.outliers[:5]]
        if len(extra.outliers) > 5:
            lines.append(f"{name}: {len(extra.outliers) - 5} more outliers (see the JSON export)")
    return lines


def acceptance_lines(name: str, acceptance: AcceptanceFigures) -> list[str]:
    """The k in effect beside the configured one, and per-position acceptance (or why it is unknown)."""
    lines = []
    if acceptance.k_in_effect is not None:
        configured = f" (configured {acceptance.k_configured})" if acceptance.k_configured is not None else ""
        lines.append(f"{name} k in effect: {fmt_count(acceptance.k_in_effect)} drafts per step{configured}")
    if acceptance.per_position:
        shown = " ".join(fmt_rate(value) for value in acceptance.per_position[:8])
        lines.append(f"{name} acceptance by position (per-request histograms): {shown}")
    for length, rates in (acceptance.per_position_by_length or {}).items():
        shown = " ".join(fmt_rate(value) for value in rates[:8])
        lines.append(f"{name} acceptance by position, drafts of {length}: {shown}")
    if acceptance.per_position_note:
        lines.append(f"{name} per position: {acceptance.per_position_note}")
    return lines


def explain_block(summary: BurstSummary) -> list[str]:
    """The per-category table and the explanation lines, for a screen's explain view."""
    lines = category_text(summary)[1:]
    explained = explain_lines(summary)
    if explained:
        lines += ([""] if lines else []) + explained
    return lines


def category_text(summary: BurstSummary) -> list[str]:
    table = category_table(summary)
    if table is None:
        return []
    rows = [[row[0][:14], *row[1:]] for row in table.rows]
    return ["", *Table(table.columns, rows).text([14] + [10] * (len(table.columns) - 1))]


def client_check_lines(name: str, check: ClientCheck | None) -> list[str]:
    """Loud lines when the measuring client fell behind; a quiet note of coalesced streams otherwise."""
    if check is None:
        return []
    coalesced = [coalesced_words(name, check)] if check.coalesced or (check.left_out and not check.ok) else []
    if check.ok:
        return coalesced
    return [
        f"!!! {name}: THE CLIENT FELL BEHIND: {check.reason}",
        f"!!! {name}: these figures measure spectop, not the server; remedy: {check.remedy}",
        *coalesced,
    ]


def equivalence_line(summary: BurstSummary) -> str | None:
    equivalence = summary.equivalence
    if not equivalence:
        return None
    line = f"greedy equivalence: {equivalence.identical}/{equivalence.compared} identical"
    if equivalence.divergences:
        first = equivalence.divergences[0]
        token = first.token_position
        where = f"char {first.char_position}" + (f", token {token}" if token is not None else "")
        line += f"; first divergence in {first.prompt_id} at {where}"
    return line


def note_lines(summary: BurstSummary) -> list[str]:
    """Caveats under the table: estimated token counts, errors by kind, missing server figures."""
    lines = []
    arms = summary.arms
    if any(arm.usage_estimated for _, arm in arms):
        lines.append("tokens counted from chunks: the server sent no usage (estimated)")
    for label, arm in arms:
        if arm.errors_by_kind:
            kinds = ", ".join(f"{kind} {count}" for kind, count in arm.errors_by_kind.items())
            lines.append(f"{label.upper()} errors: {kinds}")
            lines += [f"  {fmt_count(count)}× {reason}" for reason, count in arm.error_reasons]
    for label, arm in arms:
        lines += client_check_lines(label.upper(), arm.client_check)
    for label, arm in arms:
        if arm.gpu is not None and arm.gpu.throttle_note:
            lines.append(f"WARNING {label.upper()} GPU: {arm.gpu.throttle_note}")
        elif arm.gpu is not None and arm.gpu.note:
            lines.append(f"{label.upper()} GPU: {arm.gpu.note}")
        if arm.gpu is not None and arm.gpu.energy_scope:
            lines.append(f"{label.upper()} GPU energy: {arm.gpu.energy_scope}")
    return lines


def render_text(summary: BurstSummary) -> str:
    """The summary table for a terminal (fits 80 columns)."""
    columns = ["", *(label.upper() for label, _ in summary.arms)]
    endpoints = ("endpoint", *(_short(arm.url) for _, arm in summary.arms))
    rows = [endpoints, *(row[: len(columns)] for row in table_rows(summary))]
    lines = Table(columns, rows).text([22] + [16] * len(summary.arms))
    lines += note_lines(summary)
    if summary.comparison:
        lines += ["", summary.comparison.verdict]
    equivalence = equivalence_line(summary)
    if equivalence:
        lines.append(equivalence)
    block = explain_block(summary)
    lines += ["", *block] if block else []
    return "\n".join(safe_line(line) for line in lines)


def _short(url: str, width: int = 15) -> str:
    text = url.split("://", 1)[-1]
    return text if len(text) <= width else "…" + text[-(width - 1) :]
