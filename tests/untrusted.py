"""Hostile text as a server, a log, a config file, a kept burst or Prometheus could hand it to spectop, and
the check that none of it reaches a terminal raw. Shared by the tests of each surface: stdout (tests/cli),
the bench report and its exports (tests/bench) and the screens (tests/ui)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "telemetry"))

from metrics_test_server import Reply, ReplyServer, sample_body
from test_snapshot_cli import spectop

from tests.fleet.fake_fleet import Fleet40, instances
from tui.bench.results import ArmResult, BurstResult, BurstSettingsRecord, RequestResult

__all__ = ["Reply", "ReplyServer", "sample_body", "spectop"]  # for the tests of stdout

# An OSC that retitles the pane, a CSI that clears the screen, an OSC 52 clipboard write, an 8-bit CSI and a
# bidi override around the word "evil", which must still be shown.
HOSTILE = "\x1b]0;PWNED\x07\x1b[2J\x1b]52;c;aGVsbG8=\x07evil\x9b31m\u202e"
RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e")  # stdout is decoded as UTF-8: a lone 0x9b byte fails too
OOM_LINE = (
    "(EngineCore pid=9) ERROR 05-01 14:39:06 [core.py:1131] torch.OutOfMemoryError: CUDA out of memory. "
    + HOSTILE
)


def assert_no_raw_controls(out: str) -> None:
    for raw in RAW_CONTROLS:
        assert raw not in out, (raw, out)


def hostile_page(name: str) -> bytes:
    """The vLLM sample page with the hostile string as the model name (the exposition needs no escape)."""
    return sample_body("vllm", name).replace(b'model_name="mimo-7b"', f'model_name="{HOSTILE}"'.encode())


def hostile_log(path: Path) -> Path:
    path.write_text(
        f"(APIServer pid=1) INFO 05-01 14:39:05 [api_server.py:1] Starting vLLM API server\n{OOM_LINE}\n",
        encoding="utf-8",
    )
    return path


def hostile_config(path: Path) -> Path:
    """A valid TOML file that spells the hostile string with escapes, in a value and in an unknown key."""
    escaped = "".join(char if char.isprintable() else f"\\u{ord(char):04x}" for char in HOSTILE)
    path.write_text(f'[model]\nname = "{escaped}"\n"odd{escaped}" = 2\n', encoding="utf-8")
    return path


def hostile_fleet(size: int) -> Fleet40:
    """A fleet whose first instance label and second model name, as Prometheus answers them, are hostile."""
    members = instances(size)
    members[0].name = f"10.1.0.1{HOSTILE}:8000"
    members[1].model = f"qwen{HOSTILE}"
    return Fleet40(members=members)


def hostile_arm(label: str, reply: str) -> ArmResult:
    """An arm whose server answered with control sequences: in the text, the finish reason, an error."""
    ok = [
        RequestResult(
            arm=label,
            index=index,
            prompt_id=f"p{index}{HOSTILE}",  # prompt sets are files too
            scheduled_s=index,
            sent_s=index,
            ttft_s=0.1,
            e2e_s=1.0,
            chunk_times_s=[0.1, 0.5, 1.0],
            chunk_chars=[4, 4, len(reply)],
            output_tokens=3,
            finish_reason=f"stop{HOSTILE}",
            text=f"same{HOSTILE}{reply}",
        )
        for index in range(3)
    ]
    failed = RequestResult(arm=label, index=3, prompt_id=f"p3{HOSTILE}", scheduled_s=3, sent_s=3,
                           error_kind="http_status", http_status=500,
                           error=f"HTTP 500: {HOSTILE}")  # fmt: skip
    return ArmResult(label=label, name=f"{label}{HOSTILE}", url="http://127.0.0.1:1", model=HOSTILE,
                     active_s=3.0, requests=[*ok, failed])  # fmt: skip


def hostile_burst(prompt_set: str = "mixed", replies: tuple[str, ...] = ("A", "Bx")) -> BurstResult:
    settings = BurstSettingsRecord(prompt_set=prompt_set, prompt_set_digest=prompt_set, requests=4,
                                   concurrency=1, max_tokens=8, temperature=0.0)  # fmt: skip
    arms = [hostile_arm(label, HOSTILE + reply) for label, reply in zip("ab", replies, strict=False)]
    started_at = datetime(2026, 12, 1, tzinfo=UTC)
    return BurstResult(started_at=started_at, duration_s=4.0, settings=settings, arms=arms)
