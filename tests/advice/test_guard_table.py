"""Where one k does not fit all loads, the guard offers vLLM's k-by-batch-size table."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import httpx

from tests.advice.test_guard_control import FakePorts
from tests.tune.conftest import write_config
from tui.advice.guard import GuardInput, GuardRecord, decide, guard_text
from tui.advice.guard_control import GuardController
from tui.advice.guard_table import table_offer
from tui.advice.live import ConfigFacts, KeptModels
from tui.advice.stepcost import CostPoint, StepCostFile, StepCostModel, config_facts, fit
from tui.board import Board
from tui.configs.document import load_document
from tui.settings import AlertSettings, EndpointSettings, Settings
from tui.telemetry.figures import Figures
from tui.telemetry.reading import EndpointReading

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


def test_a_k_that_wins_alone_and_loses_busy_becomes_a_table() -> None:
    # load 1: k=1 (1.8 tokens in 29 ms) beats off (1 in 18 ms); load 8: off (74 ms) beats k=1 (155 ms)
    offer = table_offer(PER_POSITION, 3, _model(8.0, 10.0), top=64)
    assert offer is not None
    assert offer.table == [[1, 1, 1], [2, 64, 0]]
    assert (
        offer.words == "batch 1: k=1, 2-64: k=0 (k=1 1.12x over k=0 at load 1; k=0 1.16x over k=1 at load 8)"
    )


def test_one_k_for_every_load_offers_no_table() -> None:
    assert table_offer(PER_POSITION, 3, _model(0.1, 0.1)) is None  # cheap verification: k=3 everywhere
    # k=1 is best alone by 1.03x only (within the 5% margin): off fits both loads
    assert table_offer(PER_POSITION, 3, _model(8.0, 12.46), top=64) is None
    assert table_offer(PER_POSITION, 3, None) is None
    assert table_offer(None, 3, _model(8.0, 8.0)) is None


def test_the_guard_offers_the_table_in_ask_mode_and_writes_it() -> None:
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


def test_a_table_leaves_the_settings_digest_as_it_was() -> None:
    """The step-cost model of a server still applies once the guard or tune wrote a table into its file."""
    doc = load_document('[model]\nname = "m"\n\n[speculative]\nnum_speculative_tokens = 3\n', "vllm_toml")
    with_table = load_document(guard_text(doc, None, [[1, 1, 1], [2, 64, 0]]), "vllm_toml")
    assert config_facts(with_table)[1] == config_facts(doc)[1]


async def test_the_controller_offers_the_table_with_its_diff(tmp_path: Path) -> None:
    endpoint = EndpointSettings(
        name="e", url="http://127.0.0.1:8000", config_file=write_config(tmp_path / "config.toml", k=3),
        restart_command=["true"], guard="ask",
    )  # fmt: skip
    board = Board(Settings(alerts=AlertSettings(sustained_s=10.0), endpoints=[endpoint]))
    board.enable_advice(KeptModels(StepCostFile(models=[_model(8.0, 10.0)])))
    board.set_config_facts("e", ConfigFacts(3, "s", "speculative.num_speculative_tokens"))
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
