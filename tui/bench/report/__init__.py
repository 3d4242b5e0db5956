"""Burst reports: `models` (the typed summary), `summary` (its figures and the verdict), `table` (its rows),
`text` (for a terminal), `export` (Markdown, CSV, JSON)."""
