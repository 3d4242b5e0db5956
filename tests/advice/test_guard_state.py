"""The guard's per-endpoint state in the app (no UI): the first look, busy, the cool-down, the config read,
and a guard action's line in the recording."""

from __future__ import annotations

from pathlib import Path

from tests.tune.conftest import write_config
from tui.advice.guard import GuardRecord
from tui.advice.guard_control import GuardBook, guard_input, log_record, prepare
from tui.settings import EndpointSettings
from tui.telemetry.alerts import AlertEngine, AlertRules
from tui.telemetry.recording import GuardLogRecord, parse_record


def _endpoint(tmp_path: Path, guard: str = "ask", **extra: object) -> EndpointSettings:
    return EndpointSettings(
        name="e",
        url="http://127.0.0.1:1",
        config_file=write_config(tmp_path / "config.toml"),
        restart_command=["true"],
        guard=guard,  # type: ignore[arg-type]
        **extra,  # type: ignore[arg-type]
    )


def _low_alerts() -> AlertEngine:
    alerts = AlertEngine(AlertRules(sustained_s=10.0))
    alerts.set_threshold("e", 0.6)
    for time in (100.0, 105.0, 111.0):
        alerts.observe_reading("e", time, True, 0.4)
    return alerts


def test_the_input_comes_from_the_acceptance_alert(tmp_path: Path) -> None:
    alerts = _low_alerts()
    state = guard_input(_endpoint(tmp_path, guard_cooldown_s=30.0), alerts, None, now=111.0, restarting=False)
    assert state.acceptance_alert_active and state.low_since == 100.0 and state.threshold == 0.6
    assert state.can_change and state.cooldown_s == 30.0 and state.mode == "ask"
    assert state.acceptance is None  # no reading: unknown, never a guess
    quiet = AlertEngine()
    assert not guard_input(
        _endpoint(tmp_path), quiet, None, now=1.0, restarting=False
    ).acceptance_alert_active


def test_a_busy_endpoint_is_left_alone_and_an_answer_starts_the_cool_down(tmp_path: Path) -> None:
    endpoint, alerts, book = _endpoint(tmp_path, guard_cooldown_s=60.0), _low_alerts(), GuardBook()
    assert book.candidate(endpoint, alerts, None, now=111.0, restarting=False) is not None
    assert book.candidate(endpoint, alerts, None, now=111.0, restarting=True) is None
    book.begin("e", "offered")
    assert book.candidate(endpoint, alerts, None, now=112.0, restarting=False) is None  # one dialog at a time
    book.acted("e", 112.0)  # declined
    assert book.candidate(endpoint, alerts, None, now=150.0, restarting=False) is None  # cool-down
    assert book.candidate(endpoint, alerts, None, now=173.0, restarting=False) is not None
    off = _endpoint(tmp_path, guard="off")
    assert GuardBook().candidate(off, alerts, None, now=111.0, restarting=False) is None


async def test_prepare_reads_the_file_and_the_diff(tmp_path: Path) -> None:
    endpoint = _endpoint(tmp_path)
    prepared = await prepare(endpoint)
    assert prepared.speculation_on is True and not prepared.problem
    assert "-enabled = true" in prepared.diff and "+enabled = false" in prepared.diff
    write_config(tmp_path / "config.toml", enabled=False)
    assert (await prepare(endpoint)).speculation_on is False
    (tmp_path / "config.toml").write_text("[speculative\n", encoding="utf-8")
    broken = await prepare(endpoint)
    assert broken.speculation_on is None and broken.problem


def test_a_guard_action_is_a_recording_line() -> None:
    record = GuardRecord("e", 5.0, "declined", "acceptance 40% below 60% for 30 s", 0.4, 0.6, "-a\n+b\n")
    line = log_record(record).model_dump_json()
    parsed = parse_record(line)
    assert isinstance(parsed, GuardLogRecord)
    assert parsed.message == record.line() and parsed.diff == "-a\n+b\n" and parsed.acceptance == 0.4
