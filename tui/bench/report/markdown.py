"""The Markdown export of a burst summary."""

from __future__ import annotations

from tui.bench.report.models import BurstSummary
from tui.bench.report.table import category_rows, table_rows
from tui.bench.report.text import client_check_lines, equivalence_line, explain_lines
from tui.sanitize import safe_line


def render_markdown(summary: BurstSummary) -> str:
    has_b = summary.b is not None
    lines = ["# spectop burst", ""]
    if summary.started_at:
        lines += [f"Started {summary.started_at.isoformat()}", ""]
    late = [
        line for label, arm in summary.arms for line in client_check_lines(label.upper(), arm.client_check)
    ]
    if late:
        lines += [f"**{_md_code(line)}**" if line.startswith("!!!") else _md_code(line) for line in late] + [
            ""
        ]
    lines.append("| figure | A |" + (" B |" if has_b else ""))
    lines.append("| --- | --- |" + (" --- |" if has_b else ""))
    lines.append(f"| endpoint | {summary.a.url} |" + (f" {summary.b.url} |" if summary.b else ""))
    for label, a_text, b_text in table_rows(summary):
        lines.append(f"| {label} | {a_text} |" + (f" {b_text} |" if has_b else ""))
    categories_ = category_rows(summary)
    if categories_:
        arms = ["A"] + (["B"] if has_b else [])
        lines += ["", "| category | " + " | ".join(f"{arm} accept | {arm} tok/s" for arm in arms) + " |"]
        lines.append("| --- |" + " --- | --- |" * len(arms))
        lines += ["| " + " | ".join(_md_code(cell) for cell in row) + " |" for row in categories_]
    explained = explain_lines(summary)
    if explained:
        lines += [""] + [f"- {_md_code(line)}" for line in explained]
    if summary.comparison:
        lines += ["", f"**Verdict:** {summary.comparison.verdict}"]
    equivalence = equivalence_line(summary)
    if equivalence and summary.equivalence:
        lines += ["", equivalence]
        for item in summary.equivalence.divergences[:20]:
            lines.append(
                f"- `{item.prompt_id}` at char {item.char_position}: "
                f"A `{_md_code(item.a_snippet)}` / B `{_md_code(item.b_snippet)}`"
            )
    return "\n".join(safe_line(line) for line in lines) + "\n"


def _md_code(text: str) -> str:
    return text.replace("`", "'").replace("\n", "⏎").replace("|", "\\|")
