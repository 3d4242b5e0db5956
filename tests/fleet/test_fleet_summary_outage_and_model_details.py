"""The fleet table's details: the summary row's cells at 200 instances, the group rows during a
Prometheus outage, the model column of a llama.cpp instance, the fleet benchmark's quarter matcher."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any, cast

import pytest
from rich.text import Text

from tests.fleet.fake_fleet import fleet_reading
from tui.fleet.poller import FleetReading
from tui.fleet.table_rows import Instance, fleet_rows
from tui.telemetry.figures import Figures
from tui.widgets.fleet_table import NARROW_COLUMNS, WIDE_COLUMNS, FleetTable

STYLES = {"success": "", "error": "", "warning": "", "critical": "", "trend": ""}
BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_fleet.py"


def _reading(index: int, *, failed: bool = False, **extra: Any) -> FleetReading:
    figures = Figures(
        generation_tokens_per_s=1234.5 + index,
        acceptance_rate=0.7,
        mean_acceptance_length=2.5,
        ttft_p95_s=0.00085,  # "0.85 ms": 7 characters
        running=2.5,  # 200 of them: "500"
        waiting=6.0,  # "1200"
        kv_cache_usage=1.0,
    )
    error = "Prometheus unreachable: refused" if failed else None
    return fleet_reading(
        f"replica-{index:03d}",
        None if failed else figures,
        up=not failed,
        error=error,
        group="fleet",
        prometheus_error=failed,
        **extra,
    )


def _cells(rows: list[Any], columns: tuple[Any, ...]) -> list[list[Text]]:
    table = cast(Any, FleetTable.__new__(FleetTable))  # cells need no app
    return [[FleetTable.cell(table, column, row, (), STYLES) for column in columns] for row in rows]


def test_every_figure_cell_has_a_space_before_it_at_200_instances() -> None:
    """`2.50496/100`: the summary row's summed running/waiting ran into the mean length."""
    rows = fleet_rows([Instance(r.name, r, "up") for r in (_reading(i) for i in range(200))])
    assert rows[0].summary and rows[0].running == 500 and rows[0].waiting == 1200
    for columns in (NARROW_COLUMNS, WIDE_COLUMNS):
        for row, cells in zip(rows, _cells(rows, columns), strict=True):
            for column, cell in zip(columns, cells, strict=True):
                if column.figure is None:
                    continue
                assert len(cell.plain) == column.width and cell.plain.startswith(" "), (column, cell.plain)
                assert cell.plain.strip() in (column.figure(row), "…")
        texts = [cell.plain.strip() for cell in _cells(rows, columns)[0]]
        summary = dict(zip((column.header for column in columns), texts, strict=True))
        assert summary["run/wt"] == "500/1200" and summary["len"] == "2.50" and summary["tok/s"] == "267k"
    assert sum(column.width for column in NARROW_COLUMNS) == 78  # 80 columns less the scrollbar
    assert sum(column.width for column in WIDE_COLUMNS) == 130


def test_group_rows_say_no_data_while_prometheus_is_down() -> None:
    """The rows said "no data", their group "0/3 up" (as if all were down)."""
    readings = [_reading(i, failed=True) for i in range(3)]
    rows = fleet_rows([Instance(r.name, r, "no data") for r in readings])
    assert [row.status for row in rows] == ["no data"] * 4
    assert rows[0].summary and rows[0].tokens_per_s is None  # "–", not 0
    one_up = [_reading(0), *readings[1:]]
    rows = fleet_rows([Instance(r.name, r, "up" if r.up else "no data") for r in one_up])
    assert rows[0].status == "1/3 up"


def test_the_model_column_of_a_llamacpp_instance_is_unknown_not_the_backend() -> None:
    reading = _reading(0, backend="llamacpp", model=None)
    rows = fleet_rows([Instance(reading.name, reading, "up")])
    model = next(i for i, column in enumerate(WIDE_COLUMNS) if column.sort == "model")
    assert _cells(rows, WIDE_COLUMNS)[1][model].plain == "–"


def test_the_benchmarks_quarter_matcher_selects_a_quarter_at_any_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`instance=~"replica-0[0--1].*"` below 40 instances: the constant-queries check had nothing."""
    spec = importlib.util.spec_from_file_location("bench_fleet", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, bench)  # its dataclasses look their module up
    spec.loader.exec_module(bench)
    name, value = re.fullmatch(r'(\w+)="([^"]*)"', bench.QUARTER_MATCH).groups()  # type: ignore[union-attr]
    for count in (1, 3, 4, 8, 39, 40, 200, 1000):
        config = tmp_path / f"p{count}.yml"
        bench._prometheus_config(config, 9, count, 5.0)
        selected = config.read_text().count(f"{name}: '{value}'")
        assert selected == -(-count // 4), count  # a quarter, at least one
