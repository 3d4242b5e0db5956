"""The autopilot: keeps a server or a fleet at its best speculative k, proving each change."""

from pathlib import Path

from tui.paths import user_data_dir


def audit_file() -> Path:
    """The audit trail of the CLI and the dashboard unless told otherwise."""
    return user_data_dir() / "autopilot.jsonl"
