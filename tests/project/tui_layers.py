"""The map of tui/: every module is core (never imports textual), UI (Textual: render and dispatch) or an
entry point (the command line, which starts an app). The import tests and README's architecture table
follow it; a new module or folder fails `test_every_module_has_a_layer` until it is placed here."""

from __future__ import annotations

CORE = (
    "tui.telemetry", "tui.configs", "tui.bench", "tui.sim", "tui.sources", "tui.gpu", "tui.fleet",
    "tui.tune", "tui.advice", "tui.autopilot", "tui.board", "tui.settings", "tui.paths", "tui.validators",
    "tui.format", "tui.auth", "tui.sanitize", "tui.fit_text", "tui.debug_log", "tui.safe_output",
    "tui.state", "tui.tables", "tui.bounded_read",
)  # fmt: skip
UI = ("tui.ui", "tui.screens", "tui.widgets")
ENTRY = ("tui.cli", "tui.cli_options", "tui.commands", "tui.__main__")

# The floors of tui's top-level folders and modules: each imports only from its own floor or below, counting
# imports inside functions (a lazy import is still an arrow), and no two of them import each other.
FLOORS = {
    **dict.fromkeys(
        ("format", "sanitize", "validators", "paths", "auth", "fit_text", "safe_output", "bounded_read"), 1
    ),
    **dict.fromkeys(("debug_log", "tables"), 1),
    **dict.fromkeys(("telemetry", "configs", "sim", "gpu", "settings", "state"), 2),
    **dict.fromkeys(("tune", "bench", "fleet"), 3),
    "advice": 4,
    "autopilot": 5,
    **dict.fromkeys(("board", "sources"), 6),
    "widgets": 7.1,
    "screens": 7.2,
    "ui": 7.3,
    **dict.fromkeys(("cli", "cli_options", "commands", "__main__"), 8),
}


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(f"{prefix}.") for prefix in prefixes)
