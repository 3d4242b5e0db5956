"""Alerts, active first, with start and clear times; the fallback guard's actions with them (enter shows
a guard action's diff)."""

from __future__ import annotations

import textwrap
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.content import Content
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import DataTable, Header

from tui.format import fmt_clock
from tui.sanitize import safe_line
from tui.screens.context import back_bindings
from tui.screens.guard import GuardDialog
from tui.telemetry.alerts import Alert, AlertEngine
from tui.widgets.footer import Footer
from tui.widgets.messages import EndpointsUpdated, EndpointUpdated

COLUMNS: tuple[tuple[str, int | None], ...] = (
    ("level", 5), ("endpoint", 16), ("started", 8), ("cleared", 8), ("alert", None),
)  # fmt: skip


class AlertsScreen(Screen[None]):
    DEFAULT_CSS = "AlertsScreen DataTable { height: 1fr; }"
    BINDINGS: ClassVar[list[BindingType]] = back_bindings("a")

    _shown_version = -1

    def __init__(self, alerts: AlertEngine) -> None:
        super().__init__()
        self.alerts = alerts
        self._rows: list[Alert] = []  # the alerts as the table shows them, row by row

    def compose(self) -> ComposeResult:
        yield Header(icon="◆")
        yield DataTable(cursor_type="row", zebra_stripes=True)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.sub_title = "alerts"
        table = self.query_one_optional(DataTable)
        if table is None:
            return  # the app is shutting down
        for label, width in COLUMNS:
            table.add_column(label, width=width, key=label)
        self._fill()
        table.focus()

    def on_resize(self, event: Resize) -> None:
        self._fill()

    @on(EndpointUpdated)
    @on(EndpointsUpdated)
    def _endpoints_changed(self) -> None:
        # The engine's version also moves when an active alert's text or severity follows its figure.
        if self.alerts.version != self._shown_version:
            self._fill()

    def _fill(self) -> None:
        table = self.query_one_optional(DataTable)
        if table is None or not table.columns:
            return
        # The alert column takes the rest of the row: its text wraps there, whole (never cut at the edge).
        fixed = sum(width + 2 * table.cell_padding for _label, width in COLUMNS if width is not None)
        width = max(20, table.size.width - fixed - 2 * table.cell_padding - 2)  # 2: the scrollbar
        table.columns["alert"].width = width  # type: ignore[index]
        table.columns["alert"].auto_width = False  # type: ignore[index]
        self._shown_version = self.alerts.version
        self._rows = alerts = self.alerts.all_alerts()
        table.clear()
        for alert in alerts:
            severity = alert.severity if alert.active else alert.worst  # a past alert: the worst it got
            style = "$error bold" if severity == "critical" else "$warning bold"
            level = "CRIT" if severity == "critical" else "GUARD" if alert.kind == "guard" else "WARN"
            cleared = Content.styled("active", style)
            if alert.kind == "guard":
                cleared = Content("diff ⏎" if alert.diff else "")  # an action, not a condition
            elif alert.cleared_at is not None:
                cleared = Content(fmt_clock(alert.cleared_at))
            table.add_row(
                Content.styled(level, style if alert.active else "$text-muted"),
                Text(safe_line(alert.endpoint)),  # Text: no markup, measured for the column width
                fmt_clock(alert.started_at),
                cleared,
                Text("\n".join(textwrap.wrap(safe_line(alert.message), width)) or ""),
                height=None,
            )
        if not alerts:
            table.add_row("", "", "", "", "no alerts so far")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        row = event.cursor_row
        if 0 <= row < len(self._rows) and self._rows[row].kind == "guard":
            alert = self._rows[row]
            self.app.push_screen(
                GuardDialog.showing(alert.endpoint, alert.started_at, alert.message, alert.diff)
            )
