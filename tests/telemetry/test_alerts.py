"""Alert rules: sustained low acceptance, critical, down, log errors; each with start and clear times."""

from __future__ import annotations

from tui.telemetry.alerts import AlertEngine, AlertRules
from tui.telemetry.events import ErrorEvent, SpecDecodeEvent

RULES = AlertRules(acceptance_warning=0.6, acceptance_critical=0.3, sustained_s=10.0, log_hold_s=60.0)


def _kinds(engine: AlertEngine, endpoint: str = "a") -> set[str]:
    return {alert.kind for alert in engine.active(endpoint)}


def test_low_acceptance_fires_only_after_the_sustained_period_and_clears() -> None:
    engine = AlertEngine(RULES)
    assert engine.observe_reading("a", 100.0, True, 0.5) == []
    assert engine.observe_reading("a", 105.0, True, 0.5) == []
    started = engine.observe_reading("a", 110.0, True, 0.5)
    assert [alert.kind for alert in started] == ["acceptance_low"]
    assert started[0].severity == "warning"
    assert started[0].started_at == 100.0  # when the condition began, not when the rule noticed
    cleared = engine.observe_reading("a", 120.0, True, 0.7)
    assert cleared == started and cleared[0].cleared_at == 120.0
    assert _kinds(engine) == set()
    assert list(engine.cleared) == started


def test_a_dip_shorter_than_the_period_raises_nothing() -> None:
    engine = AlertEngine(RULES)
    for time, rate in [(0, 0.5), (5, 0.5), (8, 0.7), (12, 0.5), (20, 0.5)]:
        engine.observe_reading("a", float(time), True, rate)
    assert _kinds(engine) == set()
    engine.observe_reading("a", 22.0, True, 0.5)
    assert _kinds(engine) == {"acceptance_low"}


def test_critical_acceptance_raises_both_levels() -> None:
    engine = AlertEngine(RULES)
    engine.observe_reading("a", 0.0, True, 0.2)
    engine.observe_reading("a", 10.0, True, 0.2)
    assert _kinds(engine) == {"acceptance_low", "acceptance_critical"}
    critical = next(alert for alert in engine.active("a") if alert.kind == "acceptance_critical")
    assert critical.severity == "critical"
    engine.observe_reading("a", 11.0, True, 0.45)  # back above critical, still below the threshold
    assert _kinds(engine) == {"acceptance_low"}


def test_per_endpoint_threshold_from_its_config() -> None:
    engine = AlertEngine(RULES)
    engine.set_threshold("strict", 0.8)
    for time in (0.0, 10.0):
        engine.observe_reading("strict", time, True, 0.7)
        engine.observe_reading("default", time, True, 0.7)
    assert _kinds(engine, "strict") == {"acceptance_low"}
    assert _kinds(engine, "default") == set()
    engine.set_threshold("strict", None)
    assert engine.threshold("strict") == 0.6


def test_unknown_acceptance_ends_the_condition() -> None:
    engine = AlertEngine(RULES)
    engine.observe_reading("a", 0.0, True, 0.5)
    engine.observe_reading("a", 10.0, True, 0.5)
    assert _kinds(engine) == {"acceptance_low"}
    engine.observe_reading("a", 11.0, True, None)  # idle or spec decode switched off
    assert _kinds(engine) == set()


def test_down_fires_at_once_and_clears_on_the_next_good_scrape() -> None:
    engine = AlertEngine(RULES)
    started = engine.observe_reading("a", 5.0, False, None)
    assert [(alert.kind, alert.severity) for alert in started] == [("down", "critical")]
    assert engine.observe_reading("a", 7.0, False, None) == []  # no duplicate
    cleared = engine.observe_reading("a", 9.0, True, 0.8)
    assert cleared[0].kind == "down" and cleared[0].started_at == 5.0 and cleared[0].cleared_at == 9.0


def test_oom_in_the_log_clears_after_a_restart() -> None:
    engine = AlertEngine(RULES)
    oom = ErrorEvent(category="oom", message="CUDA out of memory")
    started = engine.observe_log_event("a", 3.0, oom)
    assert started[0].kind == "oom" and "CUDA out of memory" in started[0].message
    engine.observe_reading("a", 4.0, True, 0.8)
    assert "oom" in _kinds(engine)  # still up, same process: the error stands
    engine.observe_reading("a", 5.0, False, None)
    engine.observe_reading("a", 8.0, True, 0.8)  # restarted
    assert _kinds(engine) == set()


def test_log_alert_clears_after_the_hold_time_without_new_errors() -> None:
    engine = AlertEngine(RULES)
    engine.observe_log_event("a", 0.0, ErrorEvent(category="engine_dead"))
    engine.observe_reading("a", 30.0, True, 0.8)
    assert _kinds(engine) == {"engine_error"}
    engine.observe_reading("a", 61.0, True, 0.8)
    assert _kinds(engine) == set()


def test_other_events_raise_nothing() -> None:
    engine = AlertEngine(RULES)
    assert engine.observe_log_event("a", 0.0, SpecDecodeEvent(acceptance_rate=0.1)) == []
    assert engine.observe_log_event("a", 0.0, ErrorEvent(category="other")) == []


def test_all_alerts_lists_active_first_and_the_cleared_list_is_bounded() -> None:
    engine = AlertEngine(RULES)
    for index in range(600):
        engine.observe_reading("a", float(2 * index), False, None)
        engine.observe_reading("a", float(2 * index + 1), True, 0.9)
    engine.observe_reading("b", 5000.0, False, None)
    alerts = engine.all_alerts()
    assert alerts[0].endpoint == "b" and alerts[0].active
    assert len(engine.cleared) == 500
    assert all(not alert.active for alert in alerts[1:])
