"""The fallback guard on the screen: its dialog (an offer, or a past action's diff; y / n) and
`DialogPorts`, how the core's `GuardController` (which makes every decision) shows and records it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, ClassVar

from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel

from tui.advice.guard import GuardRecord
from tui.advice.guard_control import GuardFacts, GuardOffer
from tui.format import fmt_clock
from tui.sanitize import safe_line, safe_text
from tui.settings import EndpointSettings
from tui.telemetry.recording import GuardLogRecord, RecordingError
from tui.widgets.config_dialogs import DiffDialog


class GuardDialog(DiffDialog):
    """The guard's offer (y / n), or a past action's diff (`offer` False)."""

    DEFAULT_CSS = """
    GuardDialog { align: center middle; }
    GuardDialog > Vertical { width: 100%; max-width: 100; height: 100%; max-height: 30;
                             border: thick $warning; background: $surface; padding: 0 1; }
    GuardDialog .figures { height: auto; color: $warning; }
    GuardDialog VerticalScroll { height: 1fr; }
    GuardDialog .keys { height: 1; color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "decide(True)", "switch off"),
        Binding("n,escape", "decide(False)", "decline"),
    ]
    summary_class, diff_id = "figures", "guard-diff"

    def __init__(
        self,
        endpoint: str,
        title: str,
        figures: str,
        diff: str,
        *,
        offer: bool = True,
        yes: str = "switch off",
    ) -> None:
        super().__init__(title, safe_text(diff), safe_line(figures), action=yes)
        self.endpoint = endpoint
        self.figures = figures
        self.offer = offer

    @classmethod
    def of(cls, offer: GuardOffer) -> GuardDialog:
        """The controller's offer: switch speculation off, or set the advisor's k."""
        return cls(offer.endpoint, offer.title, offer.reason, offer.diff, yes=offer.yes)

    @classmethod
    def showing(cls, endpoint: str, time: float, message: str, diff: str) -> GuardDialog:
        return cls(endpoint, f"{endpoint} · {fmt_clock(time)}", message, diff, offer=False)

    def keys(self) -> str:
        if not self.offer:
            return "[esc] close"
        return f"[y/enter] {self.action} (save, restart, /health)   [n/esc] decline"

    def action_decide(self, save: bool) -> None:
        self.dismiss(save and self.offer)


@dataclass
class DialogPorts:
    """The controller's ports (`GuardPorts`) on the screen side, as callables (they never hold the app)."""

    facts: Callable[[EndpointSettings], GuardFacts]
    run: Callable[[Coroutine[Any, Any, None], str], object]
    push: Callable[[GuardDialog, Callable[[bool | None], None]], object]
    notify: Callable[[str, str, SeverityLevel], None]
    restart_began: Callable[[str], None]
    restart_ended: Callable[[bool, str], None]
    changed: Callable[[str], None]
    record_guard: Callable[[GuardLogRecord], Awaitable[None]]

    def start(self, work: Coroutine[Any, Any, None], name: str) -> None:
        self.run(work, name)

    def offer(self, offer: GuardOffer, answered: Callable[[bool | None], None]) -> None:
        self.push(GuardDialog.of(offer), answered)

    def tell(self, record: GuardRecord) -> None:
        severity: SeverityLevel = "error" if record.action == "failed" else "warning"
        self.notify(safe_line(record.line()), safe_line(f"guard · {record.endpoint}"), severity)

    async def record(self, record: GuardLogRecord) -> None:
        try:
            await self.record_guard(record)
        except (OSError, RecordingError) as error:
            self.notify(f"guard action not recorded: {error}", "guard", "warning")
