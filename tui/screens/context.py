"""What the dashboard's screens are given when they are made: the board, the clock and what they may ask
(screens never reach into the app)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType
from textual.screen import Screen

from tui.board import Board
from tui.sources.base import Clock
from tui.state import TableChoice
from tui.widgets.card_view import CardData, reading_status

if TYPE_CHECKING:
    from tui.fleet.table_rows import Instance
    from tui.widgets.fleet_table import FleetView


def _nothing(*_args: object) -> None:
    return None


def back_bindings(key: str) -> list[BindingType]:
    """Escape, and the key that opened the screen, go back to the screen before."""
    return [
        Binding(name, "app.pop_screen", "Back", show=name == "escape", tooltip="back to the screen before")
        for name in ("escape", key)
    ]


@dataclass(frozen=True)
class ScreenContext:
    board: Board
    clock: Clock
    editable: bool = True  # the endpoints' config files can be edited (live endpoints, not a replay)
    open_editor: Callable[[str], None] = _nothing  # the config editor for an endpoint
    open_tune: Callable[[str], None] = _nothing  # the tune screen (sweep k with restarts) for an endpoint
    open_log: Callable[[str], None] = _nothing  # the log viewer (full screen) for an endpoint
    reread_thresholds: Callable[[], None] = _nothing  # after the editor: config files may have changed
    intro: str | None = None  # a line at the top of the dashboard until the first key (`spectop demo`)
    table_choice: TableChoice | None = None  # the table view's columns and sort, as remembered
    remember_table: Callable[[TableChoice], None] = _nothing  # keep a new choice (state.json)

    @property
    def stale_after_s(self) -> float:
        """An endpoint whose newest scrape is older than this is "stale"."""
        return max(10.0, 3 * self.board.settings.poll_interval_s)

    def card_data(self, name: str) -> CardData:
        """The view model of one endpoint's card (and the detail screen's figures)."""
        board = self.board
        endpoint = board.endpoint(name)
        return CardData(
            name=name,
            backend=endpoint.backend if endpoint and endpoint.backend != "auto" else None,
            model=endpoint.model if endpoint else None,
            url=endpoint.url if endpoint else None,
            reading=board.readings.get(name),
            history=board.series.endpoint(name),
            alerts=board.alerts.active(name),
            now=self.clock.time(),
            stale_after_s=self.stale_after_s,
            threshold=board.alerts.threshold(name),
            threshold_source=board.alerts.threshold_source(name),
            critical=board.alerts.rules.acceptance_critical,
            window_s=board.settings.window_s,
            restarting=board.alerts.restarting(name),
            gpu=board.gpus.get(name),
            gpu_shared=board.gpu_shared,
            gpu_views=board.gpus,
            advice=board.advice.advice(name) if board.advice is not None else None,
            adaptive_steps=board.advice.adaptive_steps(name) if board.advice is not None else None,
            peer_models=board.peer_models(),
        )

    def fleet_view(self) -> FleetView:
        """The view model of the fleet table (tui/widgets/fleet_table.py), read again at each refresh."""
        from tui.widgets.fleet_table import FleetView

        return FleetView(self._fleet_instances, self._trend)

    def _fleet_instances(self) -> list[Instance]:
        """Each instance's reading, card status and alert severities (not its whole card)."""
        from tui.fleet.table_rows import Instance

        board, now = self.board, self.clock.time()
        result = []
        for name in (endpoint.name for endpoint in board.endpoints):
            reading, restarting = board.readings.get(name), board.alerts.restarting(name)
            status = reading_status(reading, now, self.stale_after_s, restarting=restarting)
            result.append(Instance(name, reading, status, board.alerts.active_severities(name)))
        return result

    def _trend(self, name: str, columns: int) -> Sequence[float | None]:
        return self.board.series.endpoint(name).tail("generation_tokens_per_s", columns)

    def group_advice_lines(self) -> list[tuple[str, bool]]:
        """Fleet mode: the advisor's line per calibrated group, and whether it advises another k."""
        from tui.advice.fleet import group_lines

        return group_lines(self.board.group_advice())


class EndpointScreen(Screen[None]):
    """A screen of the dashboard that may have one endpoint in view."""

    shows_log_lines: ClassVar[bool] = False

    def __init__(self, context: ScreenContext, endpoint: str | None = None) -> None:
        super().__init__()
        self.context = context
        self.endpoint = endpoint

    @property
    def endpoint_in_view(self) -> str | None:
        return self.endpoint
