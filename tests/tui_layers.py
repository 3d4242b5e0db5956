"""The map of tui/: every module is core (never imports textual), UI (Textual: render and dispatch) or an
entry point (the command line, which starts an app). The import tests and README's architecture table
follow it; a new module or folder fails `test_every_module_has_a_layer` until it is placed here."""

from __future__ import annotations

CORE = (
    "tui.telemetry",
    "tui.configs",
    "tui.bench",
    "tui.sim",
    "tui.sources",
    "tui.gpu",
    "tui.fleet",
    "tui.tune",
    "tui.advice",
    "tui.board",
    "tui.settings",
    "tui.paths",
    "tui.validators",
    "tui.format",
    "tui.auth",
    "tui.sanitize",
    "tui.fit_text",
    "tui.debug_log",
    "tui.completion",
    "tui.terminal",
    "tui.safe_output",
    "tui.state",
    "tui.atomic",
)
UI = (
    "tui.ui",
    "tui.screens",
    "tui.widgets",
)
ENTRY = ("tui.cli", "tui.commands", "tui.__main__")


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(f"{prefix}.") for prefix in prefixes)
