"""Schema typing, the acceptance threshold reader, restart + /health."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from tui.configs import read_acceptance_threshold
from tui.configs.restart import run_restart, wait_for_health
from tui.configs.schemas import field_spec, field_specs, typed_value, unknown_keys, validate_data
from tui.paths import sample_configs_dir


def test_typed_values_follow_the_schema() -> None:
    assert typed_value("3", "vllm_toml", ("speculative", "num_speculative_tokens")) == 3
    assert typed_value("1", "vllm_toml", ("model", "gpu_memory_utilization")) == 1.0
    assert isinstance(typed_value("1", "vllm_toml", ("model", "gpu_memory_utilization")), float)
    assert typed_value("123", "vllm_toml", ("model", "name")) == "123"
    assert typed_value('"quoted"', "vllm_toml", ("model", "name")) == "quoted"
    assert typed_value("true", "client_json", ("stream",)) is True
    assert typed_value("90", "client_json", ("timeout",)) == 90
    assert isinstance(typed_value("90", "client_json", ("timeout",)), int)
    assert typed_value("[1, 2]", "client_json", ("whatever",)) == [1, 2]
    assert typed_value("plain text", "sglang_json", ("speculative_algorithm",)) == "plain text"


def test_schema_ranges_and_help() -> None:
    spec = field_spec("vllm_toml", ("speculative", "num_speculative_tokens"))
    assert spec is not None and spec.range_text == "[1, 16]" and spec.help
    assert field_spec("vllm_toml", ("model", "gpu_memory_utilization")).range_text == "(0, 1]"
    kinds = ("vllm_toml", "sglang_json", "client_json")
    assert all(spec.help for kind in kinds for spec in field_specs(kind))
    ok = {"model": {"name": "m", "gpu_memory_utilization": 1.0}, "speculative": {"acceptance_threshold": 0}}
    assert validate_data("vllm_toml", ok) == []
    bad = validate_data("vllm_toml", {"model": {"name": "m", "gpu_memory_utilization": 0}})
    assert [issue.path for issue in bad] == [("model", "gpu_memory_utilization")]
    assert validate_data("vllm_toml", {"speculative": {}})[0].path == ("model",)
    client = {"base_url": "http://x", "extra_body": {"anything": 1}, "typo": 2}
    assert unknown_keys("client_json", client) == [("typo",)]


def test_read_acceptance_threshold(tmp_path: Path) -> None:
    assert read_acceptance_threshold(sample_configs_dir() / "config.toml") == 0.6
    assert read_acceptance_threshold(tmp_path / "missing.toml") is None
    broken = tmp_path / "broken.toml"
    broken.write_text("[speculative\n")
    assert read_acceptance_threshold(broken) is None
    out_of_range = tmp_path / "range.toml"
    out_of_range.write_text('[model]\nname = "m"\n[speculative]\nacceptance_threshold = 2\n')
    assert read_acceptance_threshold(out_of_range) is None
    assert read_acceptance_threshold(sample_configs_dir() / "client_settings.json") is None
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    assert read_acceptance_threshold(binary) is None


async def test_run_restart_streams_output_without_a_shell() -> None:
    lines: list[str] = []
    script = "import sys; print('one'); print('two', file=sys.stderr); sys.exit(3)"
    assert await run_restart([sys.executable, "-c", script], lines.append) == 3
    assert sorted(lines) == ["one", "two"]
    lines.clear()
    assert await run_restart(["echo", "$HOME; rm -rf /"], lines.append) == 0
    assert lines == ["$HOME; rm -rf /"]  # no shell: nothing expanded or chained
    with pytest.raises(OSError):
        await run_restart(["/nonexistent/restart-command"], lines.append)
    with pytest.raises(TimeoutError):
        await run_restart([sys.executable, "-c", "import time; time.sleep(30)"], lines.append, timeout_s=0.5)


async def test_wait_for_health_gives_up() -> None:
    polls: list[bool] = []

    def on_poll(ok: bool, *_: object) -> None:
        polls.append(ok)

    async with httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(503))) as client:
        back = await wait_for_health(client, "http://h:1/health", on_poll, timeout_s=0.05, interval_s=0.01)
    assert back is False
    assert polls and not any(polls)


@pytest.mark.parametrize(
    ("kind", "data", "expected"),
    [
        ("vllm_toml", {"model": {"name": "m", "gpu_memory_utilization": 1.5}}, "must be at most 1"),
        ("vllm_toml", {"model": {"name": "m", "gpu_memory_utilization": "abc"}}, "expected a number"),
        ("vllm_toml", {"model": {"name": "m"}, "speculative": {"num_speculative_tokens": 2.5}}, "whole"),
        ("client_json", {"base_url": "http://h", "timeout": -1}, "must be greater than 0"),
    ],
)
def test_schema_issues_are_said_in_spectops_words(kind: str, data: dict[str, object], expected: str) -> None:
    """`config set` and the editor's field errors read "must be at most 1", not pydantic's "Input should be
    less than or equal to 1"."""
    (issue,) = validate_data(kind, data)  # type: ignore[arg-type]
    assert expected in issue.message and "(got " in issue.message
    for prefix in ("Value error", "Input should", "Extra inputs", "Field required"):
        assert prefix not in issue.message
