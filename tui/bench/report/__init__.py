"""Burst reports: `models` (the typed summary), `summary` (its figures and the verdict),
`text` (for a terminal), `export` (Markdown, CSV, JSON)."""
