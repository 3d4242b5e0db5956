"""The advisor on live figures: one endpoint's window (the dashboard's advice book), and in fleet mode per
instance (keyed by the `instance` label) and per group from the members' pooled rates."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

import tui.advice.live as live_advice
from tests.advice.test_advisor import CONDITIONAL, fitted, unconditional
from tests.sim.conftest import burst, write_vllm_config
from tests.tune.conftest import tune_result
from tui.advice.fleet import (
    advice_lines,
    group_advice,
    group_advices,
    group_lines,
    instance_advice,
    pooled_positions,
)
from tui.advice.live import AdviceBook, ConfigFacts, KeptModels, advice_for, read_context_findings
from tui.advice.stepcost import StepCostFile
from tui.bench.prompts import load_prompt_set
from tui.commands.snapshot import fleet_row
from tui.fleet.poller import FleetReading
from tui.sim.server import SimServer
from tui.telemetry.figures import Figures
from tui.telemetry.scraper import scrape_metrics
from tui.telemetry.window import figures_between
from tui.tune.result import ContextStop, save_tune

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


def test_an_instance_finds_its_model_by_its_label_and_the_snapshot_carries_instance_and_group_advice() -> (
    None
):
    readings = [member("127.0.0.1:8000", unconditional(CONDITIONAL[:4]), 100.0, 2.5)]
    advice = instance_advice(readings[0], KEPT)
    assert advice is not None and advice.best_k == 2 and advice.basis is not None
    other = instance_advice(member("10.0.0.9:8000", unconditional(CONDITIONAL[:4]), 100.0, 2.5), KEPT)
    assert other is not None and other.basis is None and "--calibrate" in other.note
    groups = group_advices(readings, KEPT)
    record = fleet_row(readings[0], advice, groups["vllm"])
    assert record["advice"]["best_k"] == 2 and record["group"] == "vllm"
    assert record["group_advice"]["best_k"] == 2
    lines = advice_lines(groups, {"127.0.0.1:8000": advice})
    assert lines[0].startswith("advice · group vllm: k=4 now · k=2 would be")
    assert lines[1].startswith("advice · 127.0.0.1:8000: k=4 now")


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


# --- the dashboard's advice book and advice_for on one endpoint's window ------------------------------------


URL = "http://127.0.0.1:8000"
FIGURES = Figures(per_position_acceptance=unconditional(CONDITIONAL[:4]), running=1.0, acceptance_rate=0.7)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(str(args[1]))
        return advice_for(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(live_advice, "advice_for", counting)
    return calls


def test_without_a_model_the_advice_is_worked_out_when_asked_once_of_the_newest_reading(
    counted: list[str],
) -> None:
    book = AdviceBook(KeptModels(), sustained_s=30.0)
    book.facts["e"] = ConfigFacts(4, "s")
    for step in range(100):
        assert book.observe("e", URL, "m", FIGURES, up=True, now=float(step)) is None
    assert counted == []
    advice = book.advice("e")
    assert advice == advice_for(FIGURES, URL, "m", KeptModels(), settings="s", current_k=4)
    assert advice is not None and advice.length_by_k and advice.better_k is None
    assert book.advice("e") is advice and book.sustained_better("e", 100.0).now_k is None
    assert counted == [URL]
    # the deferred advice is of the newest reading, and gone when the endpoint is down
    del book.facts["e"]
    newer = Figures(per_position_acceptance=[0.9, 0.8], running=2.0)
    book.observe("e", URL, "m", FIGURES, up=True, now=200.0)
    book.observe("e", URL, "m", newer, up=True, now=202.0)
    advice = book.advice("e")
    assert advice is not None and advice.current_k == 2 and advice.load == 2.0
    book.observe("e", URL, "m", newer, up=False, now=204.0)
    assert book.advice("e") is None
    assert counted == [URL, URL]


def test_with_a_model_the_advice_is_worked_out_at_each_reading_for_the_alert(counted: list[str]) -> None:
    book = AdviceBook(KeptModels(StepCostFile(models=[fitted()])), sustained_s=0.0)
    book.facts["e"] = ConfigFacts(5, "s")
    slow = Figures(per_position_acceptance=[0.9, 0.5, 0.1, 0.05, 0.01], running=1.0)
    first = book.observe("e", URL, "m", slow, up=True, now=0.0)
    second = book.observe("e", URL, "m", slow, up=True, now=1.0)
    assert counted == [URL, URL]
    advice = book.advice("e")
    assert advice is not None and advice.better_k is not None
    assert first is not None and second is not None and f"k={advice.better_k} would be" in second


# --- at this context: a kept tune's context stop says k=0 where the window's prompts are that long ----------


def kept_tune(folder: Path, *, significant: bool = True, endpoint: str = URL) -> None:
    result = tune_result(
        started_at=datetime(2026, 12, 5, 17, 0, tzinfo=UTC), kind="vllm", endpoint=endpoint, outcomes=[],
        values=[0, 2], concurrencies=[1, 8], prompt_tokens=[256, 4096, 16384],
        context_stops=[
            ContextStop(concurrency=1, prompt_tokens=16384, pays_up_to=4096, significant=significant),
            ContextStop(concurrency=8, prompt_tokens=4096, pays_up_to=256, significant=significant),
        ],
    )  # fmt: skip
    save_tune(result, folder)


def advice_line(folder: Path, prompt_tokens: float | None, running: float = 1.0, url: str = URL) -> str:
    kept = KeptModels(contexts=read_context_findings(folder))
    figures = Figures(per_position_acceptance=[0.8, 0.6], running=running, prompt_tokens_mean=prompt_tokens)
    return advice_for(figures, url, None, kept, current_k=2).line()


def test_past_the_tuned_stop_the_advice_is_k0_with_where_it_came_from(tmp_path: Path) -> None:
    kept_tune(tmp_path)
    assert advice_line(tmp_path, 18_000) == (
        "k=2 now · at this context (18,000 prompt tokens), k=0: speculation stops paying from 16,384 at c=1 "
        "(tune 2026-12-05)"
    )
    assert "from 4,096 at c=8" in advice_line(tmp_path, 5_000, running=7)  # the load nearest the window's


@pytest.mark.parametrize(
    ("prompt_tokens", "significant", "url"),
    [
        (8_000, True, URL),  # shorter than the stop at this load
        (None, True, URL),  # unknown (llama.cpp has no prompt lengths): nothing said
        (18_000, False, URL),  # the tune's stop was within noise
        (18_000, True, "http://127.0.0.1:9000"),  # another server's tune
    ],
)
def test_nothing_is_said_unless_the_window_is_past_a_significant_stop_of_this_server(
    tmp_path: Path, prompt_tokens: float | None, significant: bool, url: str
) -> None:
    kept_tune(tmp_path, significant=significant)
    assert "at this context" not in advice_line(tmp_path, prompt_tokens, url=url)


@pytest.mark.parametrize("flavor", ["vllm", "sglang", "llamacpp"])
async def test_the_window_reads_the_prompt_length_from_the_engines_histogram(
    tmp_path: Path, flavor: str
) -> None:
    config = write_vllm_config(tmp_path / "config.toml", k=2, sim="speed = 4.0")
    prompts = [p.completion_text() for p in load_prompt_set("chat@3000").prompts[:4]]
    async with SimServer(flavor=flavor, config_path=config) as sim, httpx.AsyncClient() as http:
        first = await scrape_metrics(http, sim.base_url + "/metrics")
        await burst(sim, prompts, max_tokens=8, concurrency=2)
        last = await scrape_metrics(http, sim.base_url + "/metrics")
    figures = figures_between(first, last)
    if flavor == "llamacpp":
        assert figures.prompt_tokens_mean is None
        assert "no per-request prompt lengths" in figures.notes["prompt_tokens_mean"]
    else:
        assert figures.prompt_tokens_mean == pytest.approx(3000, rel=0.1)
