"""`spectop bench`: flags, JSON summary names, exports, exit codes, no key in any output."""

from __future__ import annotations

import csv
import json
import shlex
from pathlib import Path

import pytest
from timed_server import Behaviour, TimedServer

from tui.cli import main

FAST = Behaviour(ttft_s=0.01, interval_s=0.003, chunks=8)
ARM_KEYS = {
    "url", "requests", "errors", "ttft_s", "tpot_s", "chunk_gap_s", "e2e_s", "decode_tokens_per_s",
    "output_tokens_per_s", "tokens_per_chunk", "acceptance_rate", "mean_acceptance_length", "requests_detail",
}  # fmt: skip


def test_ab_bench_writes_json_csv_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    with (
        TimedServer(FAST) as a,
        TimedServer(Behaviour(ttft_s=0.01, interval_s=0.003, chunks=4, tokens_per_chunk=2)) as b,
    ):
        code = main(
            [
                "bench", "--a", a.base_url + "/v1", "--b", b.base_url, "--requests", "6",
                "--concurrency", "2",
                "--prompts", "chat", "--max-tokens", "8", "--temperature", "0", "--warmup", "1",
                "--json", str(out / "r.json"), "--csv", str(out / "r.csv"), "--markdown", str(out / "r.md"),
            ]
        )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "decode tok/s pooled" in printed
    assert "B is" in printed or "no significant" in printed
    data = json.loads((out / "r.json").read_text(encoding="utf-8"))
    assert set(data["a"]) >= ARM_KEYS
    assert set(data["b"]) >= ARM_KEYS
    assert set(data["a"]["ttft_s"]) == {"mean", "p50", "p90", "p99"}
    assert set(data["a"]["decode_tokens_per_s"]) == {"pooled", "p10", "p50", "p90"}  # no mean of rates
    assert {"decode_tokens_per_s_ratio", "ci95", "throughput_ratio", "ttft_p50_delta_s", "verdict"} <= set(
        data["comparison"]
    )
    assert {"compared", "identical", "divergences"} <= set(data["equivalence"])
    assert data["equivalence"]["identical"] == 6  # same words, two per chunk on B
    assert len(data["a"]["requests_detail"]) == 6
    rows = list(csv.DictReader((out / "r.csv").open(encoding="utf-8")))
    assert len(rows) == 12 and {r["arm"] for r in rows} == {"a", "b"}
    assert "| TTFT p50 |" in (out / "r.md").read_text(encoding="utf-8")


def test_one_arm_bench_with_client_settings_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-cli-NEVER-PRINT-ME-42"
    monkeypatch.setenv("BENCH_TEST_KEY", secret)
    settings, output = tmp_path / "settings.json", tmp_path / "o.json"
    with TimedServer(FAST) as server:
        settings.write_text(
            json.dumps({"base_url": server.base_url, "api_key_env": "BENCH_TEST_KEY", "max_tokens": 5}),
            encoding="utf-8",
        )
        code = main(["bench", "--client-settings", str(settings), "--requests", "3", "--json", str(output)])
        assert server.records[-1].headers["authorization"] == f"Bearer {secret}"
        assert server.records[-1].body["max_tokens"] == 5
    captured = capsys.readouterr()
    assert code == 0
    data = json.loads(output.read_text(encoding="utf-8"))
    assert data["b"] is None and data["comparison"] is None
    everything = captured.out + captured.err + output.read_text(encoding="utf-8")
    for path in Path(tmp_path / "xdg-data").rglob("*.json"):
        everything += path.read_text(encoding="utf-8")
    assert secret not in everything


def test_failed_requests_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    with TimedServer(Behaviour(status=404)) as server:
        code = main(["bench", "--a", server.base_url, "--requests", "2", "--warmup", "0", "--no-metrics"])
    assert code == 1
    assert "http_status 2" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ("", ""),
        ("--a ftp://x", ""),
        ("--a http://x --b ftp://y", ""),
        ("--a http://x --requests 0", ""),
        ("--a http://x --prompts no-such-set", ""),
        ("--a http://x --concurrency 0", ""),
        ("--a http://x --client-settings /no/such/file.json", ""),
        ("--a http://x --rounds 0", " --rounds: must be at least 1, got 0"),
        ("--a http://x --rate 2 --max-concurrency 0", " --max-concurrency: must be"),
        ("--a http://x --concurrency 2 --rate 3", " error: argument --rate"),
        ("--a http://x --slo ttft=fast", " --slo:"),
        ("--a http://x --a-extra {", " --a-extra:"),
        ("--a http://x --percentiles 200", " --percentiles:"),
        ("""--a http://x --b-extra '{"stream": false}'""", " --b-extra:"),
        ("--compare /no/such/before.json /no/such/after.json", " BEFORE:"),
    ],
)
def test_bad_arguments_exit_2_naming_the_flag(
    args: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(["bench", *shlex.split(args)])
    except SystemExit as exit_info:  # argparse's own refusals (exclusive flags)
        code = exit_info.code
    assert code == 2
    assert f"spectop bench:{said}" in capsys.readouterr().err


def test_a_url_without_scheme_is_taken_as_http_and_said(capsys: pytest.CaptureFixture[str]) -> None:
    # One URL rule (tui.validators.normalize_http_url): host:port gets http://, and the CLI says so.
    with TimedServer(FAST) as server:
        bare = server.base_url.removeprefix("http://")
        code = main(["bench", "--a", bare, "--requests", "2", "--warmup", "0", "--no-metrics"])
        assert len(server.records) == 2  # the two requests went to the server named without scheme
    assert code == 0
    assert f"spectop bench: A: no scheme given, using http://{bare}" in capsys.readouterr().err


def test_unreachable_arm_fails_fast_and_keeps_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with TimedServer(FAST) as b:
        code = main(["bench", "--a", "http://127.0.0.1:1", "--b", b.base_url, "--requests", "32"])
        assert b.records == []  # not one request sent to the arm that is up
    assert code == 1
    captured = capsys.readouterr()
    assert "spectop bench: arm A http://127.0.0.1:1 is not reachable: connection refused" in captured.err
    assert "decode tok/s" not in captured.out  # no table of 32 connection errors
    assert not list((tmp_path / "xdg-data").rglob("*.json"))  # nothing kept in the history
