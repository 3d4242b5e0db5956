"""Burst reports: the typed summary of a burst, the verdict line, and its renderings.

- `models`: the typed summary (ArmSummary, Comparison, BurstSummary)
- `arms`: one arm's figures from its requests
- `comparison`: B against A, the verdict line
- `summary`: a whole burst's summary (`burst_summary`)
- `table`: the (figure, A, B) rows; `text`: notes, explanation lines and the plain-text table
- `markdown`, `export`: the Markdown, CSV and JSON exports and writing them

The public names are re-exported here, so `from tui.bench.report import burst_summary` goes on working.
"""

from __future__ import annotations

from tui.bench.report.arms import DEFAULT_QS, arm_explain, arm_summary, error_reasons, request_figures
from tui.bench.report.comparison import comparison, energy_words, sequential_words, verdict_text
from tui.bench.report.export import CHUNK_FIELDS, CSV_FIELDS, export, export_name, render_csv, render_json
from tui.bench.report.markdown import render_markdown
from tui.bench.report.models import ArmExplain, ArmSummary, BurstSummary, Comparison, DecodeRate
from tui.bench.report.summary import burst_summary
from tui.bench.report.table import category_rows, table_rows
from tui.bench.report.text import (
    client_check_lines,
    equivalence_line,
    explain_block,
    explain_lines,
    note_lines,
    render_text,
)

__all__ = [
    "CHUNK_FIELDS",
    "CSV_FIELDS",
    "DEFAULT_QS",
    "ArmExplain",
    "ArmSummary",
    "BurstSummary",
    "Comparison",
    "DecodeRate",
    "arm_explain",
    "arm_summary",
    "burst_summary",
    "category_rows",
    "client_check_lines",
    "comparison",
    "energy_words",
    "equivalence_line",
    "error_reasons",
    "explain_block",
    "explain_lines",
    "export",
    "export_name",
    "note_lines",
    "render_csv",
    "render_json",
    "render_markdown",
    "render_text",
    "request_figures",
    "sequential_words",
    "table_rows",
    "verdict_text",
]
