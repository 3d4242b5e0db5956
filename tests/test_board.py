"""The dashboard's plain state: bounded log buffer, endpoints first seen in data, alert counting."""

from __future__ import annotations

from tui.board import LOG_LINES_KEPT, Board, log_kind
from tui.settings import AlertSettings, EndpointSettings, Settings
from tui.sources.updates import ThresholdRead
from tui.telemetry.events import ErrorEvent, SpecDecodeEvent, StatsEvent
from tui.telemetry.reading import EndpointReading
from tui.telemetry.recording import RecordedEndpoint


def test_log_buffer_is_bounded_and_lines_are_classified() -> None:
    board = Board(Settings(endpoints=[EndpointSettings(name="a", url="http://127.0.0.1:9")]))
    for index in range(LOG_LINES_KEPT + 50):
        board.add_log_line("a", float(index), f"line {index}", [])
    entries = board.log_entries("a")
    assert len(entries) == LOG_LINES_KEPT
    assert entries[-1].line == f"line {LOG_LINES_KEPT + 49}"
    assert log_kind([StatsEvent(), SpecDecodeEvent()]) == "spec"
    assert log_kind([ErrorEvent(), StatsEvent()]) == "error"
    assert log_kind([]) == "plain"


def test_endpoints_first_seen_in_a_recording_are_added_once() -> None:
    board = Board(Settings())
    recorded = RecordedEndpoint(name="x", url="not a url", acceptance_threshold=0.8)
    assert board.ensure_endpoint("x", recorded) is True
    assert board.ensure_endpoint("x") is False
    assert [endpoint.name for endpoint in board.endpoints] == ["x"]
    assert board.alerts.threshold("x") == 0.6  # the bad URL made the recorded details unusable
    board.add_reading(EndpointReading(name="y", time=1.0, up=True))
    assert [endpoint.name for endpoint in board.endpoints] == ["x", "y"]


def test_a_threshold_read_from_a_config_file_applies_once_and_says_where_it_comes_from() -> None:
    config = EndpointSettings(name="a", url="http://127.0.0.1:9", config_file="server.toml")  # type: ignore[arg-type]
    own = EndpointSettings(name="b", url="http://127.0.0.1:9", acceptance_threshold=0.5)
    board = Board(Settings(endpoints=[config, own]))
    assert (board.alerts.threshold("a"), board.alerts.threshold_source("a")) == (0.6, "default")
    assert (board.alerts.threshold("b"), board.alerts.threshold_source("b")) == (0.5, "spectop.toml")
    assert board.apply(ThresholdRead("a", 0.6)).changed == ("a",)  # the same figure, from the file now
    assert board.alerts.threshold_source("a") == "server.toml"
    assert board.apply(ThresholdRead("a", 0.7)).changed == ("a",)
    assert board.alerts.threshold("a") == 0.7
    assert board.apply(ThresholdRead("a", 0.7)).changed == ()  # the same value: nothing to redraw
    assert board.apply(ThresholdRead("a", None)).changed == ("a",)  # unset: the settings' value again
    assert (board.alerts.threshold("a"), board.alerts.threshold_source("a")) == (0.6, "default")
    warned = Board(Settings(alerts=AlertSettings(acceptance_warning=0.7), endpoints=[config]))
    assert (warned.alerts.threshold("a"), warned.alerts.threshold_source("a")) == (0.7, "spectop.toml")
