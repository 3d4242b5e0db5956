"""The guard's core controller (no UI): the app's facts in, offers and records out; the advisor's better k
or k-by-batch-size table offered in ask mode (a config edit and a restart, diff shown), never in auto;
the guard's settings field, and how a swept value becomes one edit."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.advice.test_advisor import CONDITIONAL, fitted, unconditional
from tests.tune.conftest import tune_result, write_config
from tui.advice.guard import Advised, GuardInput, GuardRecord, decide, file_k, guard_text
from tui.advice.guard_control import (
    GuardBook,
    GuardController,
    GuardFacts,
    GuardOffer,
    guard_input,
    log_record,
    prepare,
)
from tui.advice.live import ConfigFacts, KeptModels, table_offer
from tui.advice.stepcost import CostPoint, StepCostFile, StepCostModel, config_facts, fit
from tui.board import Board
from tui.configs.document import load_document
from tui.paths import sample_configs_dir
from tui.settings import AlertSettings, EndpointSettings, Settings
from tui.telemetry.alerts import AlertEngine, AlertRules
from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading
from tui.telemetry.recording import GuardLogRecord, parse_record
from tui.tune.plan import TunePlanError, default_key, edited, parse_int_list
from tui.tune.result import analyse, render_csv, render_markdown, render_text

BASE = GuardInput(
    mode="ask", now=1000.0, acceptance_alert_active=False, acceptance=0.7, threshold=0.5, low_since=None,
    speculation_on=True, can_change=True,
)  # fmt: skip
HELD = Advised(held_k=2, now_k=2, current_k=4, words="k=2 would be 1.28x faster than k=4 for 30 s")


def test_ask_offers_the_advisors_k_once_it_has_held() -> None:
    decision = decide(replace(BASE, advised=HELD))
    assert (decision.action, decision.k) == ("offer_k", 2)
    assert decision.reason.startswith("k=2 would be 1.28x")
    assert decide(replace(BASE, advised=replace(HELD, held_k=None))).action is None  # not held yet


def test_auto_never_changes_k_and_the_usual_holds_apply() -> None:
    assert decide(replace(BASE, mode="auto", advised=HELD)).action is None
    editing = decide(replace(BASE, advised=HELD, editing=True))
    assert editing.reason == "the config is open in the editor or a tune"
    assert decide(replace(BASE, advised=HELD, restarting=True)).action is None
    assert "cool-down" in decide(replace(BASE, advised=HELD, last_action_at=900.0)).reason
    assert decide(replace(BASE, advised=replace(HELD, current_k=2))).action is None  # already k=2
    assert decide(replace(BASE, advised=HELD, can_change=False)).action is None


LOW = replace(BASE, acceptance_alert_active=True, acceptance=0.4, low_since=960.0)


@pytest.mark.parametrize(
    "change",
    [
        {"mode": "off"},
        {"acceptance_alert_active": False},
        {"speculation_on": False},
        {"can_change": False},
        {"restarting": True},
        {"last_action_at": 900.0},  # inside the 600 s cool-down
    ],
)
def test_the_guard_holds_back(change: dict[str, object]) -> None:
    decision = decide(replace(LOW, **change))  # type: ignore[arg-type]
    assert decision.action is None and decision.reason


def test_low_acceptance_offers_the_advised_k_before_switching_off() -> None:
    offer = decide(LOW)  # no advice: switch off
    assert offer.action == "offer" and offer.reason == "acceptance 40% below 50% for 40 s"
    assert decide(replace(LOW, mode="auto")).action == "switch_off"
    assert decide(replace(LOW, last_action_at=1000.0 - 601)).action == "offer"  # the cool-down ended
    advised = decide(replace(LOW, advised=replace(HELD, held_k=None)))  # this window's advice is enough
    assert (advised.action, advised.k) == ("offer_k", 2)
    assert advised.reason.startswith("acceptance 40% below 50%; ")
    assert decide(replace(LOW, mode="auto", advised=HELD)).action == "switch_off"


class FakePorts:
    def __init__(self) -> None:
        self.facts_now = GuardFacts()
        self.offers: list[tuple[GuardOffer, Callable[[bool | None], None]]] = []
        self.told: list[GuardRecord] = []
        self.recorded: list[GuardLogRecord] = []
        self.tasks: list[asyncio.Task[None]] = []

    def facts(self, endpoint: EndpointSettings) -> GuardFacts:
        return self.facts_now

    def start(self, work: Coroutine[Any, Any, None], name: str) -> None:
        self.tasks.append(asyncio.ensure_future(work))

    def offer(self, offer: GuardOffer, answered: Callable[[bool | None], None]) -> None:
        self.offers.append((offer, answered))

    def tell(self, record: GuardRecord) -> None:
        self.told.append(record)

    def restart_began(self, health_url: str) -> None: ...

    def restart_ended(self, ok: bool, detail: str) -> None: ...

    def changed(self, name: str) -> None: ...

    async def record(self, record: GuardLogRecord) -> None:
        self.recorded.append(record)

    async def settle(self) -> None:
        while self.tasks:
            await self.tasks.pop(0)


FACTS = ConfigFacts(4, "s")


def _endpoint(tmp_path: Path, guard: str = "ask", k: int = 2, **extra: object) -> EndpointSettings:
    return EndpointSettings(
        name="e",
        url="http://127.0.0.1:8000",
        config_file=write_config(tmp_path / "config.toml", k=k),
        restart_command=["true"],
        guard=guard,  # type: ignore[arg-type]
        **extra,  # type: ignore[arg-type]
    )


def _board(
    tmp_path: Path, model: StepCostModel | None = None, facts: ConfigFacts = FACTS
) -> tuple[Board, EndpointSettings]:
    """A board watching endpoint "e" in ask mode: its config file at k = `facts.k`, one step-cost model."""
    endpoint = _endpoint(tmp_path, k=facts.k or 0)
    board = Board(Settings(alerts=AlertSettings(sustained_s=10.0), endpoints=[endpoint]))
    board.enable_advice(KeptModels(StepCostFile(models=[model or fitted()])))
    board.set_config_facts("e", facts)
    return board, endpoint


def _reading(time: float) -> EndpointReading:
    figures = Figures(
        per_position_acceptance=unconditional(CONDITIONAL[:4]), running=1.0, acceptance_rate=0.7
    )
    return EndpointReading(
        name="e", url="http://127.0.0.1:8000", time=time, up=True, model="m", figures=figures
    )


async def test_the_controller_offers_the_better_k_with_its_diff_and_records_a_decline(tmp_path: Path) -> None:
    board, _ = _board(tmp_path)
    ports = FakePorts()
    now = {"t": 100.0}
    async with httpx.AsyncClient() as client:
        guard = GuardController(board, lambda: client, lambda: now["t"], ports)
        for time in (100.0, 105.0):
            now["t"] = time
            board.add_reading(_reading(time))
            guard.watch(["e"])
        assert ports.tasks == [] and ports.offers == []  # better, but not for sustained_s yet
        ports.facts_now = GuardFacts(editing=True)
        now["t"] = 111.0
        changes = board.add_reading(_reading(111.0))
        assert [alert.kind for alert in changes] == ["advice"]
        guard.watch(["e"])
        assert ports.tasks == []  # the user is at the config: the guard holds back
        ports.facts_now = GuardFacts()
        guard.watch(["e"])
        await ports.settle()
        assert len(ports.offers) == 1
        offer, answer = ports.offers[0]
        assert offer.k == 2 and offer.title == "guard · e: set k=2?" and offer.yes == "set k=2"
        assert "-num_speculative_tokens = 4" in offer.diff and "+num_speculative_tokens = 2" in offer.diff
        guard.watch(["e"])
        assert ports.tasks == []  # one offer at a time
        answer(False)
        await ports.settle()
    assert [record.action for record in ports.recorded] == ["offered", "declined"]
    assert [record.action for record in ports.told] == ["declined"]
    assert guard.book.last_action_at["e"] == 111.0  # the cool-down starts


# --- the per-endpoint state: the first look, busy, the cool-down, the config read, the recording's line ---


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
    quiet = guard_input(_endpoint(tmp_path), AlertEngine(), None, now=1.0, restarting=False)
    assert not quiet.acceptance_alert_active


def test_a_busy_endpoint_is_left_alone_and_an_answer_starts_the_cool_down(tmp_path: Path) -> None:
    endpoint, alerts, book = _endpoint(tmp_path, guard_cooldown_s=60.0), _low_alerts(), GuardBook()

    def acts(now: float, restarting: bool = False) -> bool:  # the controller's first look
        last = book.last_action_at.get("e")
        state = guard_input(endpoint, alerts, None, now=now, restarting=restarting, last_action_at=last)
        return book.free(endpoint) and decide(state).action is not None

    assert acts(111.0)
    assert not acts(111.0, restarting=True)
    book.begin("e", "offered")
    assert not acts(112.0)  # one dialog at a time
    book.acted("e", 112.0)  # declined
    assert not acts(150.0)  # cool-down
    assert acts(173.0)
    assert not GuardBook().free(_endpoint(tmp_path, guard="off"))


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


# --- a k by batch size where one k does not fit all loads: offered in ask mode, written as vLLM's table -----


PER_POSITION = [0.8, 0.56, 0.34]  # a draft's position i accepted: length 1.8 at k=1, 2.36 at k=2, 2.7 at 3


def _model(per_seq_ms: float, per_draft_seq_ms: float) -> StepCostModel:
    """Fitted on points of T(k, c) = 10 + per_seq·c + k·(1 + per_draft_seq·c) ms, at loads 1 and 8."""
    lengths = [1.0, 1.8, 2.36, 2.7]

    def step_s(k: int, c: int) -> float:
        return (10 + per_seq_ms * c + k * (1 + per_draft_seq_ms * c)) / 1e3

    points = [
        CostPoint(k=k, concurrency=c, mean_length=lengths[k], decode_tokens_per_s=lengths[k] / step_s(k, c))
        for k in range(4)
        for c in (1, 8)
    ]
    cost, dependent, residual = fit(points)
    return StepCostModel(
        endpoint="127.0.0.1:8000", model="m", settings="s", key="speculative.num_speculative_tokens",
        fitted_at=datetime(2026, 12, 1, tzinfo=UTC), cost=cost, load_dependent=dependent, k_range=(0, 3),
        loads=[1.0, 8.0], residual=residual, points=points,
    )  # fmt: skip


def test_a_k_that_wins_alone_and_loses_busy_becomes_a_table_and_one_k_for_every_load_none() -> None:
    # load 1: k=1 (1.8 tokens in 29 ms) beats off (1 in 18 ms); load 8: off (74 ms) beats k=1 (155 ms)
    offer = table_offer(PER_POSITION, 3, _model(8.0, 10.0), top=64)
    assert offer is not None
    assert offer.table == [[1, 1, 1], [2, 64, 0]]
    assert (
        offer.words == "batch 1: k=1, 2-64: k=0 (k=1 1.12x over k=0 at load 1; k=0 1.16x over k=1 at load 8)"
    )
    assert table_offer(PER_POSITION, 3, _model(0.1, 0.1)) is None  # cheap verification: k=3 everywhere
    # k=1 is best alone by 1.03x only (within the 5% margin): off fits both loads
    assert table_offer(PER_POSITION, 3, _model(8.0, 12.46), top=64) is None
    assert table_offer(PER_POSITION, 3, None) is None
    assert table_offer(None, 3, _model(8.0, 8.0)) is None


def test_the_guard_offers_the_table_in_ask_mode_and_writes_it_the_settings_digest_kept() -> None:
    offer = table_offer(PER_POSITION, 3, _model(8.0, 10.0), top=64)
    state = GuardInput(
        mode="ask", now=1000.0, acceptance_alert_active=False, acceptance=0.6, threshold=0.5, low_since=None,
        speculation_on=True, can_change=True, table_offer=offer,
    )  # fmt: skip
    decision = decide(state)
    assert decision.action == "offer_table" and decision.table == [[1, 1, 1], [2, 64, 0]]
    assert decision.reason.startswith("one k does not fit every load: batch 1: k=1, 2-64: k=0")
    assert decide(replace(state, mode="auto")).action is None  # never on its own
    assert decide(replace(state, last_action_at=900.0)).action is None  # the cool-down
    doc = load_document('[model]\nname = "m"\n\n[speculative]\nnum_speculative_tokens = 3\n', "vllm_toml")
    text = guard_text(doc, None, decision.table)
    assert (
        "num_speculative_tokens = 1\nnum_speculative_tokens_per_batch_size = [[1, 1, 1], [2, 64, 0]]" in text
    )
    record = GuardRecord("gpu-0", 1000.0, "offered", decision.reason, 0.6, 0.5, table=decision.table)
    assert record.line().startswith("guard offered k by batch size (batch 1: k=1, 2-64: k=0): one k does not")
    # the step-cost model of a server still applies once the guard or tune wrote a table into its file
    assert config_facts(load_document(text, "vllm_toml"))[1] == config_facts(doc)[1]


async def test_the_controller_offers_the_table_with_its_diff(tmp_path: Path) -> None:
    board, endpoint = _board(
        tmp_path, _model(8.0, 10.0), ConfigFacts(3, "s", "speculative.num_speculative_tokens")
    )
    figures = Figures(per_position_acceptance=PER_POSITION, running=1.0, acceptance_rate=0.57)
    board.add_reading(
        EndpointReading(name="e", url=endpoint.url, time=100.0, up=True, model="m", figures=figures)
    )
    ports = FakePorts()
    async with httpx.AsyncClient() as client:
        guard = GuardController(board, lambda: client, lambda: 100.0, ports)
        guard.watch(["e"])
        await ports.settle()
        (offer, answer), *_ = ports.offers
        assert offer.table == [[1, 1, 1], [2, 256, 0]]
        assert offer.title == "guard · e: set k by batch size?" and offer.yes == "write the table"
        assert "+num_speculative_tokens_per_batch_size = [[1, 1, 1], [2, 256, 0]]" in offer.diff
        assert "+num_speculative_tokens = 1" in offer.diff
        answer(False)
        await ports.settle()
    assert [record.words() for record in ports.told] == [
        "offer of k by batch size declined (batch 1: k=1, 2-256: k=0)"
    ]


async def test_a_file_running_the_table_is_advised_at_the_k_of_the_live_batch_and_not_offered_it_again(
    tmp_path: Path,
) -> None:
    table = [[1, 1, 1], [2, 256, 0]]
    board, endpoint = _board(
        tmp_path, _model(8.0, 10.0), ConfigFacts(1, "s", "speculative.num_speculative_tokens", table=table)
    )
    assert board.advice is not None
    for running, in_effect in ((1.0, 1), (8.0, 0)):
        figures = Figures(per_position_acceptance=PER_POSITION, running=running, acceptance_rate=0.57)
        board.add_reading(
            EndpointReading(name="e", url=endpoint.url, time=100.0, up=True, model="m", figures=figures)
        )
        advice = board.advice.advice("e")
        assert advice is not None and advice.current_k == in_effect and advice.better_k is None, advice
        assert board.advice.table_offer("e", endpoint.url, "m", figures) is None  # it runs this table


def test_guard_setting_defaults_off_and_rejects_unknown_modes() -> None:
    endpoint = EndpointSettings(name="a", url="http://127.0.0.1:1")
    assert endpoint.guard == "off" and endpoint.guard_cooldown_s == 600
    assert EndpointSettings(name="a", url="http://127.0.0.1:1", guard="auto").guard == "auto"
    with pytest.raises(ValueError):
        EndpointSettings(name="a", url="http://127.0.0.1:1", guard="sometimes")  # type: ignore[arg-type]


def _lines(before: str, after: str) -> list[tuple[str, str]]:
    return [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]


def test_speculation_off_is_one_line_of_the_vllm_file() -> None:
    text = (sample_configs_dir() / "config.toml").read_text(encoding="utf-8")
    doc = load_document(text, "vllm_toml")
    assert file_k(doc) == 2
    off = guard_text(doc, None)
    assert _lines(text, off) == [("enabled = true", "enabled = false")]
    assert file_k(load_document(off, "vllm_toml")) == 0


def test_sglang_steps_keep_draft_tokens_consistent_for_topk_1() -> None:
    text = (sample_configs_dir() / "sglang_settings.json").read_text(encoding="utf-8")
    doc = load_document(text, "sglang_json", Path("settings.json"))
    key = default_key(doc)
    assert key.name == "speculative_num_steps" and key.current(doc) == 3
    after = edited(doc, key, 5, doc)
    assert after.data["speculative_num_steps"] == 5 and after.data["speculative_num_draft_tokens"] == 6
    off = edited(doc, key, 0, doc)
    assert off.data["speculative_algorithm"] is None and key.current(off) == 0
    back = edited(off, key, 2, doc)
    assert back.data["speculative_algorithm"] == "EAGLE" and back.data["speculative_num_draft_tokens"] == 3


def test_an_explicit_key_must_be_a_whole_number_in_the_file() -> None:
    doc = load_document('[draft]\nmax = 4\nname = "x"\n', "vllm_toml")
    assert default_key(doc, "draft.max").current(doc) == 4
    with pytest.raises(TunePlanError):
        default_key(doc, "draft.name")
    with pytest.raises(TunePlanError):
        default_key(doc, "draft.min")


def test_value_lists() -> None:
    assert parse_int_list("0, 2,2,4", "--values", minimum=0) == (0, 2, 4)
    with pytest.raises(TunePlanError, match="--concurrency"):
        parse_int_list("0", "--concurrency", minimum=1)
    with pytest.raises(TunePlanError):
        parse_int_list("two", "--values", minimum=0)


def test_schedule_and_break_even_from_the_best_values() -> None:
    rows = {1: (10, 20, 25), 4: (10, 14, 12), 16: (10, 9, None), 32: (10, 8, 7)}  # c: k=0, k=2, k=4
    rates = {(k, c): rate for c, row in rows.items() for k, rate in zip((0, 2, 4), row, strict=True)}
    result = analyse(tune_result(rates, original_value=2))
    assert result.best == {1: 4, 4: 2, 16: 0, 32: 0}
    assert [(s.value, s.up_to_concurrency) for s in result.schedule] == [(4, 1), (2, 4), (0, None)]
    assert result.break_even_concurrency == 16
    text = render_text(result)
    assert "k=4 up to 1, k=2 up to 4, k=0 beyond" in text and "stops paying at concurrency 16" in text
    assert "–" in text  # the unmeasured cell: a dash, never 0
    assert "| 4 | 16 |" in render_markdown(result)
    assert render_csv(result).count("\n") == 1 + 12


def test_no_break_even_when_speculation_always_pays() -> None:
    result = analyse(tune_result({(0, 1): 10, (2, 1): 20, (0, 8): 10, (2, 8): 11}, original_value=2))
    assert result.break_even_concurrency is None
    assert "pays at every measured concurrency" in render_text(result)
