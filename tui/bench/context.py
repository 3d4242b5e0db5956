"""Context as an axis of a burst: the prompt tokens the server counted, and one row per prompt length."""

from __future__ import annotations

from tui.bench.prompts import counted_line
from tui.bench.report.models import BurstSummary
from tui.bench.results import ArmResult
from tui.format import UNKNOWN, fmt_times, fmt_times_interval, fmt_tokens_per_s
from tui.tables import Table


def counted_prompt_tokens(arm: ArmResult) -> list[int]:
    """The prompt tokens the server reported (`usage.prompt_tokens`) for each measured request."""
    return [r.prompt_tokens for r in arm.requests if r.ok and r.prompt_tokens is not None]


def length_check(tokens: int, arms: list[ArmResult]) -> str:
    """One line per arm: the length asked against what the server counted."""
    return "\n".join(
        f"{arm.label.upper()}: {counted_line(tokens, counted_prompt_tokens(arm))}" for arm in arms
    )


def context_table(rows: list[tuple[int, list[ArmResult], BurstSummary]]) -> list[str]:
    """Per prompt length: what each arm's server counted (median), A's and B's decode tokens/s and B/A."""
    columns = ["prompt tokens", "counted", "A decode tok/s", "B decode tok/s", "B/A (95% CI)"]
    table = []
    for tokens, arms, summary in rows:
        counted = sorted(n for arm in arms for n in counted_prompt_tokens(arm))
        middle = f"{counted[len(counted) // 2]:,}" if counted else UNKNOWN
        b = summary.b.decode_tokens_per_s.pooled if summary.b else None
        ratio = UNKNOWN  # one arm
        if (comparison := summary.comparison) is not None:
            ratio = (
                f"{fmt_times(comparison.decode_tokens_per_s_ratio)} ({fmt_times_interval(comparison.ci95)})"
            )
        table.append(
            [
                f"{tokens:,}",
                middle,
                fmt_tokens_per_s(summary.a.decode_tokens_per_s.pooled),
                fmt_tokens_per_s(b),
                ratio,
            ]
        )
    return ["by context length", *Table(columns, table).text(gap="  ")]
