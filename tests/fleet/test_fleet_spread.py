"""Data-parallel imbalance: spread across a group's replicas and across one vLLM's engines, and its alert."""

from __future__ import annotations

import pytest

from tests.fleet.fake_fleet import fleet_reading
from tests.fleet.fake_prometheus import A, Answer, healthy, refresh_with, vector
from tui.fleet.queries import engine_queries
from tui.fleet.spread import ImbalanceAlerts, Spread, engine_spreads, group_spreads, spread_of
from tui.fleet.table_rows import Instance, fleet_rows
from tui.telemetry.figures import Figures

LIMITS = (0.2, 0.1)


def reading(instance: str, group: str, *, acceptance: float | None, tokens: float | None, up: bool = True):
    figures = Figures(acceptance_rate=acceptance, generation_tokens_per_s=tokens)
    return fleet_reading(instance, figures, up=up, group=group)


def test_one_replica_far_off_is_named() -> None:
    spread = spread_of("g", "acceptance_rate", {"a": 0.72, "b": 0.70, "c": 0.74, "d": 0.31}, LIMITS)
    assert spread is not None
    assert (spread.members, spread.median) == (4, pytest.approx(0.71))
    assert [(o.member, o.value) for o in spread.outliers] == [("d", 0.31)]
    assert spread.outliers[0].deviation == pytest.approx((0.31 - 0.71) / 0.71)


@pytest.mark.parametrize(
    "values",
    [
        {"a": 0.72, "b": 0.31},  # two members: neither is "the odd one"
        {"a": 0.72, "b": 0.70, "c": 0.66},  # within 0.1 of each other
        {"a": 0.0, "b": 0.0, "c": 0.05},  # tiny absolute differences do not count
        {"a": 0.7, "b": None, "c": None, "d": 0.7},  # unknown is not 0
    ],
)
def test_no_outlier_without_a_clear_odd_one(values: dict[str, float | None]) -> None:
    spread = spread_of("g", "acceptance_rate", values, LIMITS)
    assert spread is not None and spread.outliers == ()


def test_group_spreads_per_group_and_only_up_instances() -> None:
    readings = [
        reading("a", "vllm", acceptance=0.7, tokens=300),
        reading("b", "vllm", acceptance=0.71, tokens=310),
        reading("c", "vllm", acceptance=0.69, tokens=90),
        reading("d", "vllm", acceptance=0.1, tokens=0, up=False),  # down: not part of the comparison
        reading("e", "sglang", acceptance=None, tokens=None),
    ]
    spreads = {(s.group, s.figure): s for s in group_spreads(readings)}
    assert set(spreads) == {("vllm", "acceptance_rate"), ("vllm", "generation_tokens_per_s")}
    assert spreads["vllm", "acceptance_rate"].outliers == ()
    assert [o.member for o in spreads["vllm", "generation_tokens_per_s"].outliers] == ["c"]


def test_alert_after_sustained_its_text_follows_the_figures_and_clears_when_back() -> None:
    def far(value: float) -> list[Spread | None]:
        return [spread_of("g", "acceptance_rate", {"a": 0.7, "b": 0.7, "c": value}, LIMITS)]

    alerts = ImbalanceAlerts(sustained_s=30)
    assert alerts.observe(0.0, far(0.318)) == []
    assert alerts.observe(20.0, far(0.318)) == []
    started = alerts.observe(31.0, far(0.318))
    assert [(a.endpoint, a.kind, a.active, a.started_at) for a in started] == [("c", "imbalance", True, 0.0)]
    assert started[0].message == "acceptance 32% vs median 70% of 3 in g (-55%)"  # as the rows write it
    alerts.observe(33.0, far(0.25))
    assert [alert.message for alert in alerts.active()] == ["acceptance 25% vs median 70% of 3 in g (-64%)"]
    cleared = alerts.observe(40.0, far(0.68))
    assert cleared == started and not cleared[0].active and alerts.active() == []
    slow = ImbalanceAlerts(sustained_s=0).observe(
        0.0, [spread_of("", "generation_tokens_per_s", {"a": 2000, "b": 2100, "c": 787}, LIMITS)]
    )
    assert slow[0].message == "gen tok/s 787.0 vs median 2.00k of 3 in the fleet (-61%)"


async def test_engines_of_one_vllm_come_from_one_query_and_show_an_imbalance() -> None:
    acceptance_expr, tokens_expr = (query.expr for query in engine_queries("", 30.0))
    engines = {"0": ("0.72", "300"), "1": ("0.70", "310"), "2": ("0.71", "305"), "3": ("0.30", "120")}

    def per_engine(query: str) -> Answer | None:
        if query in (acceptance_expr, tokens_expr):
            column = 0 if query == acceptance_expr else 1
            rows = [({"instance": A, "engine": engine}, values[column]) for engine, values in engines.items()]
            return 200, vector(*rows), 0.0
        return None

    refresh = await refresh_with(healthy(broken=per_engine))
    by_instance = {r.instance: r for r in refresh.readings}
    assert list(by_instance[A].engines) == ["0", "1", "2", "3"]
    assert by_instance[A].engines["3"].acceptance_rate == pytest.approx(0.30)
    spreads = {s.figure: s for s in engine_spreads(by_instance[A])}
    assert [o.member for o in spreads["acceptance_rate"].outliers] == [f"{A} engine=3"]
    assert [o.member for o in spreads["generation_tokens_per_s"].outliers] == [f"{A} engine=3"]
    assert all(not r.engines for r in refresh.readings if r.instance != A)


def test_group_summary_rows() -> None:
    readings = [
        reading("a", "vllm", acceptance=0.7, tokens=300),
        reading("b", "vllm", acceptance=0.8, tokens=100),
        reading("c", "vllm", acceptance=0.6, tokens=None),
        reading("d", "vllm", acceptance=0.1, tokens=999, up=False),  # down: counted, its figures not
        reading("e", "sglang", acceptance=None, tokens=None),
    ]
    rows = fleet_rows([Instance(r.name, r, "up" if r.up else "down") for r in readings])
    summaries = {row.group: row for row in rows if row.summary}
    vllm_row, sglang_row = summaries["vllm"], summaries["sglang"]
    assert vllm_row.status == "3/4 up" and sglang_row.status == "1/1 up"
    assert vllm_row.tokens_per_s == 400 and vllm_row.acceptance_rate == pytest.approx(0.7)
    assert sglang_row.tokens_per_s is None and sglang_row.acceptance_rate is None  # not 0
