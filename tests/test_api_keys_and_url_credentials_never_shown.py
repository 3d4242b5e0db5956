"""Secrets: a key no header may carry is refused by the variable's name, never printed; every config
diff masks credential values (`config set` too); a URL with a user or password is refused, never echoed."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import httpx
import pytest

from tests.cli.conftest import spectop_here
from tests.tune.conftest import write_config
from tui.advice.guard_control import prepare
from tui.auth import ApiKeyError, api_key_from_env, bearer_headers, endpoint_headers
from tui.configs.editing import masked_diff
from tui.settings import EndpointSettings
from tui.tune.runner import TuneOptions, TuneRun

sys.path.insert(0, str(Path(__file__).parent / "telemetry"))

from metrics_test_server import Reply, ReplyServer, sample_body

from tui.telemetry.monitor import EndpointMonitor

KEY = "sk-live-7f3a9c"
SAMPLES = Path(__file__).parents[1] / "sample_configs"


@pytest.mark.parametrize("bad", [f"{KEY}\r", f"{KEY}\n", f"{KEY}\r\nX-Evil: 1", f"{KEY}é"])
async def test_snapshot_refuses_a_key_no_header_may_carry(
    bad: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SPECTOP_TEST_KEY", bad)
    async with ReplyServer([Reply(sample_body("vllm", "metrics_t0.txt"))] * 2) as server:
        argv = ("snapshot", server.url, "--window", "0.1", "--api-key-env", "SPECTOP_TEST_KEY")
        code, out, err = await asyncio.to_thread(spectop_here, capsys, *argv)
    assert code == 2
    assert "SPECTOP_TEST_KEY" in err and "invalid" in err
    assert KEY not in out + err and "Illegal header" not in err


async def test_the_dashboards_scrape_says_the_key_is_invalid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECTOP_TEST_KEY", f"{KEY}\r")  # a key file saved with CRLF
    endpoint = EndpointSettings(name="gpu", url="http://127.0.0.1:9", api_key_env="SPECTOP_TEST_KEY")
    async with (
        ReplyServer([Reply(sample_body("vllm", "metrics_t0.txt"))]) as server,
        httpx.AsyncClient() as c,
    ):
        monitor = EndpointMonitor(endpoint.model_copy(update={"url": server.url}), window_s=60.0)
        reading = await monitor.poll(c)
    assert not reading.up and reading.error is not None
    assert "SPECTOP_TEST_KEY" in reading.error and "carriage return" in reading.error
    assert KEY not in reading.model_dump_json()


def _client_settings(tmp_path: Path) -> Path:
    text = (SAMPLES / "client_settings.json").read_text(encoding="utf-8")
    path = tmp_path / "settings.json"
    path.write_text(
        text.replace('"api_key_env": "SPECTOP_API_KEY",', f'"api_key": "{KEY}",'), encoding="utf-8"
    )
    return path


def _vllm_config(tmp_path: Path) -> Path:
    text = (SAMPLES / "config.toml").read_text(encoding="utf-8")
    path = tmp_path / "config.toml"
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("num_speculative_tokens"))
    lines.insert(at, f'api_key = "{KEY}"\n')  # diff context of a change of k
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("make", "key", "value"),
    [(_client_settings, "model", "other"), (_vllm_config, "speculative.num_speculative_tokens", "3")],
    ids=["client-json", "vllm-toml"],
)
def test_config_set_masks_a_credential_in_the_diffs_context(
    tmp_path: Path, make: object, key: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    code, out, err = spectop_here(capsys, "config", "set", str(path), key, value, "--new-key")
    assert code == 0, err
    assert "api_key" in out and "****" in out  # the context line is there, its value masked
    assert KEY not in out + err
    assert KEY in path.read_text(encoding="utf-8")  # the file keeps it


@pytest.mark.parametrize(
    "argv",
    [
        ["snapshot", "http://ops:hunter2@127.0.0.1:9", "--window", "0.1"],
        ["snapshot", "ftp://ops:hunter2@127.0.0.1:9/x", "--window", "0.1"],
        ["bench", "--a", "http://ops:hunter2@127.0.0.1:9", "--requests", "1"],
        ["--endpoint", "http://ops:hunter2@127.0.0.1:9"],
    ],
    ids=["snapshot", "snapshot-bad-scheme", "bench", "dashboard"],
)
def test_a_url_with_a_password_is_refused_without_echoing_it(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = spectop_here(capsys, *argv)
    assert code == 2, (out, err)
    assert "hunter2" not in out + err
    assert "no user or password in the URL" in err


def test_settings_file_endpoint_with_a_password(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "spectop.toml"
    config.write_text('[[endpoints]]\nname = "a"\nurl = "http://ops:hunter2@127.0.0.1:9"\n', encoding="utf-8")
    code, out, err = spectop_here(capsys, "--config", str(config))
    assert code == 2 and "no user or password in the URL" in err
    assert "hunter2" not in out + err


def test_without_credentials() -> None:
    from tui.validators import has_credentials, without_credentials

    assert without_credentials("http://u:p@h:1/x?a@b") == "http://****@h:1/x?a@b"
    assert without_credentials("u:p@h:1") == "****@h:1"
    assert without_credentials("http://h:1/x?a@b") == "http://h:1/x?a@b"
    assert not has_credentials("http://h:1/path@x") and has_credentials("https://tok@h")


TUI = Path(__file__).resolve().parents[1] / "tui"
# A header written by hand: {"Authorization": ...} or headers["Authorization"] = ...
HAND_MADE = re.compile(r"""["']Authorization["']\s*[:\]]""", re.IGNORECASE)


def test_the_key_comes_from_the_named_variable_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECTOP_AUTH_TEST_KEY", "s3cret")
    monkeypatch.setenv("SPECTOP_AUTH_EMPTY", "")
    assert api_key_from_env("SPECTOP_AUTH_TEST_KEY") == "s3cret"
    assert api_key_from_env("SPECTOP_AUTH_EMPTY") is None  # empty is no key, not an empty Bearer
    assert api_key_from_env(None) is None
    assert api_key_from_env("K", {"K": "from a mapping"}) == "from a mapping"
    with pytest.raises(ApiKeyError, match="K is invalid: it ends in a carriage return") as caught:
        api_key_from_env("K", {"K": f"{KEY}\r"})
    assert KEY not in str(caught.value)
    endpoint = EndpointSettings(name="a", url="http://127.0.0.1:1", api_key_env="SPECTOP_AUTH_TEST_KEY")
    assert endpoint_headers(endpoint) == {"Authorization": "Bearer s3cret"}
    assert endpoint_headers(EndpointSettings(name="b", url="http://127.0.0.1:1")) == {}
    assert bearer_headers(None) == bearer_headers("") == {}
    assert "s3cret" not in endpoint.model_dump_json()  # settings hold the variable's name, not the key


def test_the_authorization_header_is_built_in_tui_auth_only() -> None:
    """The monitor, `spectop snapshot`, bursts and the fleet client all go through tui/auth.py (the
    simulator, a server, checks the header and is left out)."""
    hand_made = [
        f"{path.relative_to(TUI)}:{number}"
        for path in sorted(TUI.rglob("*.py"))
        if path.name != "auth.py" and "sim" not in path.relative_to(TUI).parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if HAND_MADE.search(line)
    ]
    assert hand_made == []


SECRET = "sk-live-NEVER-IN-A-DIFF-42"


async def test_the_guards_and_the_tunes_diffs_mask_the_key(tmp_path: Path) -> None:
    # The server's API key right above the speculative section and in the section right below it: either
    # is context of a diff of that section.
    config = write_config(tmp_path / "config.toml", k=1)
    text = config.read_text(encoding="utf-8")
    text = text.replace("\n[speculative]", f'api_key = "{SECRET}"\n\n[speculative]')
    text = text.replace("\n[scheduler]", f'[server]\napi_key = "{SECRET}"\n\n[scheduler]')
    config.write_text(text, encoding="utf-8")
    prepared = await prepare(EndpointSettings(name="x", url="http://127.0.0.1:1", config_file=config))
    assert "-enabled = true" in prepared.diff and "+enabled = false" in prepared.diff
    assert SECRET not in prepared.diff
    assert "api_key = ****" in prepared.diff  # the context line is there, its value masked
    tune = TuneRun(TuneOptions(config_file=config, endpoint="http://127.0.0.1:1", restart_command=["true"]))
    await tune.prepare()
    diff = tune.diff_for(3)
    assert "+num_speculative_tokens = 3" in diff and SECRET not in diff
    assert SECRET in tune.text_for(3)  # the file written keeps its key, of course


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (f' api_key = "{SECRET}"', " api_key = ****"),
        (f'-  "api_key": "{SECRET}",', '-  "api_key": ****'),
        (f"+api-key: {SECRET}", "+api-key: ****"),
        (f"  server.password = '{SECRET}'", "  server.password = ****"),
        (" num_speculative_tokens = 2", " num_speculative_tokens = 2"),
        (f"--- {SECRET}_api_key = x", f"--- {SECRET}_api_key = x"),  # a file name: not a key line
    ],
)
def test_masked_diff_lines(line: str, shown: str) -> None:
    assert masked_diff(line + "\n") == shown + "\n"
