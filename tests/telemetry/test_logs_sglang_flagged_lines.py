"""SGLang's text-only lines a monitor should flag (sglang.md §2.4 "Lines a monitor should flag"): the
memory-leak and config-file rows, which carry no level and none of the usual error words. (The KV-pool
retraction is a scheduler warning under load, kept out: tests/telemetry/test_logs_reference_lines.py.)"""

from __future__ import annotations

import pytest

from tui.telemetry.events import ErrorEvent
from tui.telemetry.logs.parser import LogParser


def _errors(line: str) -> list[ErrorEvent]:
    parser = LogParser()
    events = [*parser.feed(line), *parser.flush()]
    return [event for event in events if isinstance(event, ErrorEvent)]


@pytest.mark.parametrize(
    "message",
    [
        "token_to_kv_pool_allocator memory leak detected! available_size=100, total=200",
        "Config file must be YAML format, got: .json",
        "Config file not found: /etc/sglang/config.yaml",
        "Multiple config files specified! Only one allowed.",
        "Unsupported config option 'foo' with action 'store_true'",
    ],
)
def test_sglang_degraded_and_config_file_lines_are_flagged(message: str) -> None:
    errors = _errors(f"[2026-07-20 09:50:12 TP0] {message}")
    assert [error.category for error in errors] == ["other"]
    assert errors[0].backend == "sglang"


def test_an_ordinary_sglang_line_about_the_config_is_not_flagged() -> None:
    assert _errors("[2026-07-20 09:15:12] Loading the config file /etc/sglang/config.yaml") == []
