"""No control sequence from a server or a file reaches stdout: `spectop snapshot` and `spectop logs`, text and
JSON, run as subprocesses against a real local /metrics server and a real log file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "telemetry"))

from metrics_test_server import Reply, ReplyServer, sample_body
from test_snapshot_cli import spectop

from tests.test_sanitize import HOSTILE

OOM_LINE = (
    "(EngineCore pid=9) ERROR 05-01 14:39:06 [core.py:1131] torch.OutOfMemoryError: CUDA out of memory. "
    + HOSTILE
)
RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e")  # stdout is decoded as UTF-8: a lone 0x9b byte fails too


def hostile_page(name: str) -> bytes:
    """The vLLM sample page with the hostile string as the model name (the exposition needs no escape)."""
    return sample_body("vllm", name).replace(b'model_name="mimo-7b"', f'model_name="{HOSTILE}"'.encode())


def hostile_log(path: Path) -> Path:
    path.write_text(
        f"(APIServer pid=1) INFO 05-01 14:39:05 [api_server.py:1] Starting vLLM API server\n{OOM_LINE}\n",
        encoding="utf-8",
    )
    return path


def assert_no_raw_controls(out: str) -> None:
    for raw in RAW_CONTROLS:
        assert raw not in out, (raw, out)


@pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
async def test_snapshot_prints_no_control_sequence(json_output: bool) -> None:
    replies = [Reply(hostile_page("metrics_t0.txt")), Reply(hostile_page("metrics_t1.txt"))]
    async with ReplyServer(replies) as server:
        code, out, err = await spectop(
            "snapshot", server.url, "--window", "0.2", *(["--json"] if json_output else [])
        )
    assert code == 0, err
    assert_no_raw_controls(out)
    if json_output:
        assert json.loads(out)["model"] == HOSTILE  # escaped, not lost
    else:
        assert "evil" in out


@pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
async def test_logs_prints_no_control_sequence(tmp_path: Path, json_output: bool) -> None:
    log = hostile_log(tmp_path / "server.log")
    code, out, err = await spectop("logs", str(log), *(["--json"] if json_output else []))
    assert code == 0, err
    assert_no_raw_controls(out)
    if json_output:
        (record,) = [json.loads(line) for line in out.splitlines()]
        assert record["category"] == "oom" and "evil\x9b31m\u202e" in record["message"]
        assert "PWNED" not in record["message"]  # the OSC went with the colour codes when the line was read
    else:
        assert "ERROR oom" in out and "evil" in out


def hostile_config(path: Path) -> Path:
    """A valid TOML file that spells the hostile string with escapes, in a value and in an unknown key."""
    escaped = "".join(char if char.isprintable() else f"\\u{ord(char):04x}" for char in HOSTILE)
    path.write_text(f'[model]\nname = "{escaped}"\n"odd{escaped}" = 2\n', encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "action",
    [["show"], ["get", "model.name"], ["lint"], ["lint", "--json"], ["launch"]],
    ids=lambda action: "-".join(action),
)  # fmt: skip
async def test_config_prints_no_control_sequence(tmp_path: Path, action: list[str]) -> None:
    config = hostile_config(tmp_path / "config.toml")
    code, out, err = await spectop("config", action[0], str(config), *action[1:])
    assert code in (0, 1), err
    assert_no_raw_controls(out + err)
    assert "evil" in out or "\\u001b" in out
