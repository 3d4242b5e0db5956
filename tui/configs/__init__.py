"""Config documents: round-trip load/save, schemas, lint, launch commands, atomic writes (no textual)."""

from __future__ import annotations

from pathlib import Path


def read_acceptance_threshold(path: Path) -> float | None:
    """`[speculative] acceptance_threshold` of a vLLM-style config.toml, or None. Never raises for a file."""
    from tui.configs.editing import open_config
    from tui.configs.errors import ConfigError

    try:
        opened = open_config(Path(path))
    except (ConfigError, OSError):  # an unreadable, oversized or broken file (or gone meanwhile): none
        return None
    if opened.document is None or opened.kind != "vllm_toml":
        return None
    section = opened.document.data.get("speculative")
    value = section.get("acceptance_threshold") if isinstance(section, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        return None
    return float(value)
