"""The summary for a terminal: notes, explanation lines, the plain-text table (80 columns)."""

from __future__ import annotations

from tui.bench.client_check import ClientCheck
from tui.bench.explain import AcceptanceFigures
from tui.bench.report.models import BurstSummary
from tui.bench.report.summary import coalesced_words, sequential_words
from tui.bench.report.table import category_table, table_rows
from tui.format import fmt_count, fmt_rate
from tui.sanitize import safe_line
from tui.tables import Table


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
        for outlier in extra.outliers[:5]:
            lines.append(f"{name} outlier {outlier.describe()}")
        if len(extra.outliers) > 5:
            lines.append(f"{name}: {len(extra.outliers) - 5} more outliers (see the JSON export)")
    return lines


def acceptance_lines(name: str, acceptance: AcceptanceFigures) -> list[str]:
    """The k in effect beside the configured one, and per-position acceptance (per draft length when
    the steps drafted different lengths, or why it is unknown)."""
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
    if not check.ok:
        return [
            f"!!! {name}: THE CLIENT FELL BEHIND: {check.reason}",
            f"!!! {name}: these figures measure spectop, not the server; remedy: {check.remedy}",
        ] + ([coalesced_words(name, check)] if check.coalesced or check.left_out else [])
    if check.coalesced:
        return [coalesced_words(name, check)]
    return []


def equivalence_line(summary: BurstSummary) -> str | None:
    equivalence = summary.equivalence
    if not equivalence:
        return None
    line = f"greedy equivalence: {equivalence.identical}/{equivalence.compared} identical"
    divergences = equivalence.divergences
    if divergences:
        first = divergences[0]
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
            for reason, count in arm.error_reasons:
                lines.append(f"  {fmt_count(count)}× {reason}")
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
        lines.append("")
        lines.append(summary.comparison.verdict)
    equivalence = equivalence_line(summary)
    if equivalence:
        lines.append(equivalence)
    lines += category_text(summary)
    explained = explain_lines(summary)
    if explained:
        lines += ["", *explained]
    return "\n".join(safe_line(line) for line in lines)


def _short(url: str, width: int = 15) -> str:
    text = url.split("://", 1)[-1]
    return text if len(text) <= width else "…" + text[-(width - 1) :]
