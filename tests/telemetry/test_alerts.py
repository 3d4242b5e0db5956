"""Alert rules: sustained low acceptance, critical, down, log errors; each with start and clear times."""

from __future__ import annotations

from tui.telemetry.alerts import AlertEngine, AlertRules
from tui.telemetry.events import ErrorEvent, SpecDecodeEvent

RULES = AlertRules(acceptance_warning=0.6, acceptance_critical=0.3, sustained_s=10.0, log_hold_s=60.0)


def _kinds(engine: AlertEngine, endpoint: str = "a") -> set[str]:
    return {alert.kind for alert in engine.active(endpoint)}


def _sustained(
    engine: AlertEngine, rate: float, times: tuple[float, ...] = (0.0, 10.0), **seen: float
) -> AlertEngine:
    """`rate` read at each of `times` (by default a sustained period apart): an alert's condition holds."""
    for time in times:
        engine.observe_reading("a", time, True, rate, **seen)
    return engine


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


def test_critical_acceptance_is_one_alert_at_the_worst_severity() -> None:
    engine = AlertEngine(RULES)
    engine.observe_reading("a", 0.0, True, 0.2)
    changed = engine.observe_reading("a", 10.0, True, 0.2)
    assert [(alert.kind, alert.severity) for alert in changed] == [("acceptance_critical", "critical")]
    assert [(alert.kind, alert.severity) for alert in engine.active("a")] == [
        ("acceptance_critical", "critical")
    ]  # never a WARN next to the CRIT of the same condition
    engine.observe_reading("a", 11.0, True, 0.45)  # back above critical, still below the threshold
    (alert,) = engine.active("a")
    assert (alert.kind, alert.severity, alert.worst) == ("acceptance_low", "warning", "critical")
    assert alert.message.startswith("acceptance 45% below 60%")
    assert alert.started_at == 0.0  # the same condition, not a new alert


def test_warning_escalates_to_critical_in_place() -> None:
    engine = _sustained(AlertEngine(RULES), 0.5)
    (warning,) = engine.active("a")
    engine.observe_reading("a", 12.0, True, 0.2)
    assert [alert.severity for alert in engine.active("a")] == ["warning"]  # not sustained yet
    (escalated,) = engine.observe_reading("a", 22.0, True, 0.2)
    assert (escalated.severity, escalated.kind) == ("critical", "acceptance_critical")
    assert escalated.started_at == warning.started_at  # the same condition, escalated in place
    assert warning.severity == "warning"  # what a card was given earlier does not change under it
    assert engine.active("a") == [escalated]


def test_the_text_follows_the_current_figure_and_an_unknown_one_ends_it() -> None:
    engine = _sustained(AlertEngine(RULES), 0.54)
    (alert,) = engine.active("a")
    assert alert.message.startswith("acceptance 54% below 60%")
    version = engine.version
    assert engine.observe_reading("a", 12.0, True, 0.41) == []  # no new alert, no toast
    (alert,) = engine.active("a")
    assert alert.message.startswith("acceptance 41% below 60%")
    assert engine.version > version  # an alert screen knows to redraw
    engine.observe_reading("a", 13.0, True, None)  # unknown (idle, spec decode off) ends the condition
    assert _kinds(engine) == set()


def test_acceptance_text_gives_the_mean_length_and_the_k_change() -> None:
    engine = AlertEngine(RULES)
    engine.observe_reading("a", 0.0, True, 0.75, mean_length=2.53, k=2)  # fine at k=2
    engine.observe_reading("a", 5.0, False, None)  # the user raises k to 4 and restarts
    (alert,) = _sustained(engine, 0.54, (10.0, 20.0), mean_length=3.15, k=4).active("a")
    assert alert.message == (
        "acceptance 54% below 60%; k 2→4: mean length 2.53→3.15, up (more tokens per step)"
    )


def test_critical_text_says_drafting_slows_only_when_the_mean_length_did_not_rise() -> None:
    engine = AlertEngine(RULES)
    engine.observe_reading("a", 0.0, True, 0.7, mean_length=2.4, k=3)
    (alert,) = _sustained(engine, 0.2, (1.0, 11.0), mean_length=1.6, k=3).active("a")
    assert alert.message == "acceptance 20% below 30%: drafting slows; mean length 2.40→1.60, down"
    rising = AlertEngine(RULES)
    rising.observe_reading("a", 0.0, True, 0.7, mean_length=1.8, k=1)
    _sustained(rising, 0.25, (1.0, 11.0), mean_length=2.0, k=8)
    assert "drafting slows" not in rising.active("a")[0].message
    assert "k 1→8" in rising.active("a")[0].message


def test_a_planned_restart_is_restarting_not_down() -> None:
    engine = AlertEngine(RULES)
    engine.observe_reading("a", 0.0, True, 0.8)
    engine.begin_restart("a", 1.0)
    assert engine.restarting("a")
    assert engine.observe_reading("a", 2.0, False, None) == []
    assert engine.observe_reading("a", 4.0, False, None) == []
    assert engine.active("a") == []
    assert engine.end_restart("a", 5.0, ok=True) == []  # /health answers ...
    engine.observe_reading("a", 6.0, True, 0.8)  # ... and the next scrape is good: over
    assert not engine.restarting("a")
    assert engine.active("a") == [] and list(engine.cleared) == []


def test_health_answering_before_the_server_went_down_does_not_end_the_restart() -> None:
    engine = AlertEngine(RULES)  # `kill -HUP` returns at once: /health may answer before the server stops
    engine.observe_reading("a", 0.0, True, 0.8)
    engine.begin_restart("a", 1.0)
    engine.end_restart("a", 1.1, ok=True)
    assert engine.restarting("a")
    assert engine.observe_reading("a", 1.5, False, None) == []  # it goes down now: still the restart
    assert engine.restarting("a")
    engine.observe_reading("a", 3.0, True, 0.8)  # back after the down: the restart is over
    assert not engine.restarting("a")
    assert [alert.kind for alert in engine.observe_reading("a", 4.0, False, None)] == ["down"]


def test_a_restart_that_never_went_down_ends_after_the_settle_time() -> None:
    engine = AlertEngine(AlertRules(sustained_s=10.0, restart_settle_s=5.0))
    engine.begin_restart("a", 0.0)
    engine.observe_reading("a", 0.5, True, 0.8)
    engine.end_restart("a", 1.0, ok=True)
    engine.observe_reading("a", 3.0, True, 0.8)
    assert engine.restarting("a")
    engine.observe_reading("a", 6.0, True, 0.8)
    assert not engine.restarting("a")


def test_a_failed_restart_raises_down() -> None:
    engine = AlertEngine(RULES)
    engine.begin_restart("a", 1.0)
    engine.observe_reading("a", 2.0, False, None)
    raised = engine.end_restart("a", 60.0, ok=False, detail="/health never answered")
    assert [(alert.kind, alert.severity) for alert in raised] == [("down", "critical")]
    assert "restart failed" in raised[0].message and "/health never answered" in raised[0].message
    assert not engine.restarting("a")


def test_a_failed_restart_of_an_endpoint_that_is_up_raises_nothing_until_it_is_seen_down() -> None:
    engine = AlertEngine(RULES)
    engine.begin_restart("a", 1.0)
    engine.observe_reading("a", 2.0, True, 0.8)  # no failed scrape yet
    assert engine.end_restart("a", 3.0, ok=False, detail="the command exited with 1") == []
    (down,) = engine.observe_reading("a", 3.5, False, None)  # the next scrape finds it down: says why
    assert down.kind == "down" and down.message == "endpoint down: restart failed (the command exited with 1)"
    later = AlertEngine(RULES)
    later.begin_restart("a", 1.0)
    later.end_restart("a", 3.0, ok=False, detail="the command exited with 1")
    later.observe_reading("a", 4.0, True, 0.8)  # it was up after all: the failure is old news
    assert later.observe_reading("a", 500.0, False, None)[0].message == "endpoint down"


def test_a_restart_never_reported_over_becomes_down_after_the_grace_time() -> None:
    rules = AlertRules(sustained_s=10.0, restart_grace_s=100.0)
    engine = AlertEngine(rules)
    engine.begin_restart("a", 0.0)
    assert engine.observe_reading("a", 50.0, False, None) == []
    assert [alert.kind for alert in engine.observe_reading("a", 101.0, False, None)] == ["down"]
    assert not engine.restarting("a")


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


def test_down_fires_at_once_and_clears_on_the_next_good_scrape() -> None:
    engine = AlertEngine(RULES)
    started = engine.observe_reading("a", 5.0, False, None)
    assert [(alert.kind, alert.severity) for alert in started] == [("down", "critical")]
    assert engine.observe_reading("a", 7.0, False, None) == []  # no duplicate
    cleared = engine.observe_reading("a", 9.0, True, 0.8)
    assert cleared[0].kind == "down" and cleared[0].started_at == 5.0 and cleared[0].cleared_at == 9.0


def test_log_alerts_clear_after_a_restart_or_the_hold_time_and_other_events_raise_nothing() -> None:
    engine = AlertEngine(RULES)
    oom = ErrorEvent(category="oom", message="CUDA out of memory")
    started = engine.observe_log_event("a", 3.0, oom)
    assert started[0].kind == "oom" and "CUDA out of memory" in started[0].message
    engine.observe_reading("a", 4.0, True, 0.8)
    assert "oom" in _kinds(engine)  # still up, same process: the error stands
    engine.observe_reading("a", 5.0, False, None)
    engine.observe_reading("a", 8.0, True, 0.8)  # restarted
    assert _kinds(engine) == set()
    engine.observe_log_event("a", 10.0, ErrorEvent(category="engine_dead"))
    engine.observe_reading("a", 40.0, True, 0.8)
    assert _kinds(engine) == {"engine_error"}
    engine.observe_reading("a", 71.0, True, 0.8)  # the hold time passed without new errors
    assert _kinds(engine) == set()
    assert engine.observe_log_event("a", 80.0, SpecDecodeEvent(acceptance_rate=0.1)) == []
    assert engine.observe_log_event("a", 80.0, ErrorEvent(category="other")) == []


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


def test_active_severities_follow_the_active_alerts_without_copies() -> None:
    engine = AlertEngine(RULES)
    assert engine.active_severities("a") == ()
    assert _sustained(engine, 0.5).active_severities("a") == ("warning",)
    _sustained(engine, 0.2, (12.0, 22.0))
    assert engine.active_severities("a") == tuple(alert.severity for alert in engine.active("a"))
    assert engine.active_severities("a") == ("critical",)
    engine.observe_reading("a", 30.0, True, 0.9)
    assert engine.active_severities("a") == ()
