"""The advisor in fleet mode: per instance from its PromQL per-position rates (keyed by the `instance`
label), and per group from the members' pooled rates."""

from __future__ import annotations

import pytest

from tests.advice.test_advisor import CONDITIONAL, fitted, unconditional
from tui.advice.fleet import (
    advice_lines,
    group_advice,
    group_advices,
    group_lines,
    instance_advice,
    pooled_positions,
)
from tui.advice.live import KeptModels
from tui.advice.stepcost import StepCostFile
from tui.fleet.poller import FleetReading
from tui.fleet.snapshot import row
from tui.telemetry.figures import Figures

KEPT = KeptModels(StepCostFile(models=[fitted()]))  # calibrated for 127.0.0.1:8000, model "m"


def member(
    instance: str, rates: list[float] | None, tokens: float, length: float, group: str = "vllm"
) -> FleetReading:
    figures = Figures(
        per_position_acceptance=rates,
        generation_tokens_per_s=tokens,
        mean_acceptance_length=length,
        running=1.0,
    )
    return FleetReading(
        name=instance, instance=instance, url=f"http://{instance}", time=1.0, up=True, model="m", group=group,
        figures=figures,
    )  # fmt: skip


def test_an_instance_finds_its_model_by_its_label() -> None:
    reading = member("127.0.0.1:8000", unconditional(CONDITIONAL[:4]), 100.0, 2.5)
    advice = instance_advice(reading, KEPT)
    assert advice is not None and advice.best_k == 2 and advice.basis is not None
    other = instance_advice(member("10.0.0.9:8000", unconditional(CONDITIONAL[:4]), 100.0, 2.5), KEPT)
    assert other is not None and other.basis is None and "--calibrate" in other.note


def test_a_group_pools_its_members_by_draft_steps() -> None:
    fast = member("127.0.0.1:8000", [0.9, 0.6], 300.0, 2.5)  # 120 draft steps/s
    slow = member("10.0.0.2:8000", [0.6, 0.3], 40.0, 2.0)  # 20 draft steps/s
    positions, problem = pooled_positions([fast.figures, slow.figures])
    assert problem is None and positions is not None
    assert positions[0] == pytest.approx((0.9 * 120 + 0.6 * 20) / 140)
    advice = group_advice([fast, slow], KEPT)
    assert advice.current_k == 2 and advice.basis is not None  # the first member's model
    mixed = member("10.0.0.3:8000", [0.9, 0.6, 0.3], 100.0, 2.8)
    assert group_advice([fast, mixed], KEPT).note == "the members run different k"


def test_the_fleet_snapshot_carries_instance_and_group_advice() -> None:
    readings = [member("127.0.0.1:8000", unconditional(CONDITIONAL[:4]), 100.0, 2.5)]
    groups = group_advices(readings, KEPT)
    advice = instance_advice(readings[0], KEPT)
    record = row(readings[0], advice, groups["vllm"])
    assert record["advice"]["best_k"] == 2 and record["group"] == "vllm"
    assert record["group_advice"]["best_k"] == 2
    lines = advice_lines(groups, {"127.0.0.1:8000": advice})
    assert lines[0].startswith("advice · group vllm: k=4 now · k=2 would be")
    assert lines[1].startswith("advice · 127.0.0.1:8000: k=4 now")


def test_group_lines_put_the_groups_advising_another_k_first_and_cut_whole() -> None:
    calibrated = group_advice([member("127.0.0.1:8000", unconditional(CONDITIONAL[:4]), 100.0, 2.5)], KEPT)
    keep = group_advice([member("127.0.0.1:8000", unconditional([0.95] * 4), 100.0, 3.8)], KEPT)
    unknown = group_advice([member("10.0.0.9:8000", unconditional(CONDITIONAL[:4]), 100.0, 2.5)], KEPT)
    lines = group_lines({"a": keep, "b": calibrated, "c": unknown})
    assert [better for _, better in lines] == [True, False]  # "c" has no model: no line
    assert lines[0][0].startswith("advice · group b: k=4 now · k=2 would be")
    many = group_lines({f"g{i}": keep for i in range(5)} | {"z": calibrated}, limit=3)
    assert len(many) == 3 and many[0][0].startswith("advice · group z")
    assert many[2] == ("advice · 4 more groups (spectop snapshot --prometheus URL)", False)


async def test_the_fleet_dashboard_shows_the_group_advice_within_80_columns() -> None:
    from textual.widgets import Static

    from tests.fleet.fake_fleet import ScriptedPoller, fleet_settings
    from tests.ui.ui_waiting import wait_for
    from tui.paths import themes_dir
    from tui.sources.fleet import FleetSource
    from tui.ui.app import SpectopApp

    settings = fleet_settings("http://prometheus.test:9090", poll_interval_s=3600.0)
    assert settings.prometheus is not None
    readings = [
        member("127.0.0.1:8000", unconditional(CONDITIONAL[:4]), 100.0, 2.5),  # calibrated
        member("10.0.0.2:8000", unconditional(CONDITIONAL[:4]), 90.0, 2.5),
        member("10.0.0.3:8000", unconditional(CONDITIONAL[:4]), 90.0, 2.5, group="other"),  # not
    ]
    poller = ScriptedPoller(settings.prometheus, readings)
    source = FleetSource(settings, poller=poller, clock=lambda: 1.0)
    app = SpectopApp(
        settings, source=source, theme_folders=[themes_dir()], remember_theme_choice=False, step_costs=KEPT
    )
    async with app.run_test(size=(80, 24)) as pilot:
        shown = app.screen.query_one("#group-advice", Static)
        await wait_for(pilot, lambda: shown.display and "group vllm" in str(shown.content), "the line")
        text = str(shown.content)
        assert text.startswith("advice · group vllm: k=4 now · k=2 would be")
        assert "group other" not in text
        assert all(len(line) <= 78 for line in text.splitlines())
        for view in ("table", "cards"):  # `v`: the same line above either view
            await pilot.press("v")
            await pilot.pause()
            assert shown.display and str(shown.content) == text, view
