"""Server and client config documents: round-trip load/save, schemas, lint,
launch commands, atomic writes. Never imports textual."""

from __future__ import annotations

from pathlib import Path


def read_acceptance_threshold(path: Path) -> float | None:
    """`[speculative] acceptance_threshold` of a vLLM-style config.toml, or None. Never raises."""
    try:
        from tui.configs.editing import open_config

        opened = open_config(Path(path))
        if opened.document is None or opened.kind != "vllm_toml":
            return None
        value = opened.document.data.get("speculative", {}).get("acceptance_threshold")
    except Exception:  # any unreadable or odd file simply has no threshold
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        return None
    return float(value)
