"""`spectop tune` over a real llama-server's draft max.

A small launch file (`[draft] max = 4`) is read by a wrapper script, which is the restart command: it
stops the server it started before (pid file) and starts llama-server again with `--spec-draft-n-max`
from the file. The tune sweeps `draft.max`, restarts through the wrapper each time, and reports
acceptance per value from the server's own /metrics counters; the file is byte-identical afterwards.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from llama_models import ModelSet
from llama_server import LlamaServer, free_port
from llama_spectop import run_spectop

pytestmark = pytest.mark.llamacpp

VALUES = (1, 2, 4)
ORIGINAL = 4
LAUNCH_FILE = f"""# llama-server launch file: the wrapper reads it on every restart
[draft]
max = {ORIGINAL}   # --spec-draft-n-max
"""

WRAPPER = r'''
"""Restart llama-server with the draft max of launch.toml (the tune's restart command)."""
import json, os, signal, subprocess, sys, time, tomllib, urllib.request
from pathlib import Path

here = Path(__file__).parent
spec = json.loads((here / "command.json").read_text())
draft_max = tomllib.loads((here / "launch.toml").read_text())["draft"]["max"]
pid_file = here / "server.pid"


def down() -> bool:
    try:
        urllib.request.urlopen(spec["health"], timeout=1)
    except OSError:
        return True
    return False


if pid_file.exists():
    pid = int(pid_file.read_text())
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + 10
    while not down() and time.monotonic() < deadline:
        time.sleep(0.1)
    if not down():
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        time.sleep(0.5)
argv = [part.replace("{DRAFT_MAX}", str(draft_max)) for part in spec["argv"]]
with open(here / "server.stderr", "ab") as err:
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True,
        env={**os.environ, "LLAMA_TRACE": "1"},
    )
pid_file.write_text(str(process.pid))
print(f"llama-server started as pid {process.pid} with draft max {draft_max}")
'''


@pytest.fixture
def tuned_server(
    llama_server_binary: Path, gguf_models: ModelSet, tmp_path: Path
) -> Iterator[tuple[Path, Path, str, list[str]]]:
    """The launch file, the server log, the base URL and the restart command; the server is stopped after."""
    folder = tmp_path / "bed"
    folder.mkdir()
    server = LlamaServer(
        name="tuned",
        binary=llama_server_binary,
        model=gguf_models.target,
        draft=gguf_models.draft_noisy,
        workdir=folder,
        port=free_port(),
    )
    argv = server.command()
    argv[argv.index("--spec-draft-n-max") + 1] = "{DRAFT_MAX}"
    (folder / "command.json").write_text(json.dumps({"argv": argv, "health": server.url + "/health"}))
    (folder / "launch.toml").write_text(LAUNCH_FILE, encoding="utf-8")
    (folder / "wrapper.py").write_text(WRAPPER, encoding="utf-8")
    restart = [sys.executable, str(folder / "wrapper.py")]
    try:
        # The tune refuses a server that does not answer before it changes anything: start it first.
        subprocess.run(restart, check=True, capture_output=True, timeout=60)
        server.wait_healthy()
        yield folder / "launch.toml", server.log_file, server.url, restart
    finally:
        pid_file = folder / "server.pid"
        if pid_file.exists():
            pid = int(pid_file.read_text())
            for number in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(pid, number)
                except ProcessLookupError:
                    break
                time.sleep(1.0)


def test_tune_sweeps_llama_draft_max_and_reports_acceptance_from_the_server(
    tuned_server: tuple[Path, Path, str, list[str]], tmp_path: Path
) -> None:
    launch, log_file, url, restart = tuned_server
    original = launch.read_bytes()
    report = tmp_path / "tune.json"
    values = ",".join(map(str, VALUES))
    done = run_spectop(
        [
            "tune", str(launch), "--endpoint", url, "--key", "draft.max", "--values", values,
            "--concurrency", "1,2", "--restart-command", " ".join(restart), "--requests", "6",
            "--max-tokens", "64", "--health-timeout", "90", "--log-file", str(log_file), "--no-history",
            "--json", str(report),
        ],
        tmp_path,
        timeout_s=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(report.read_text(encoding="utf-8"))
    assert result["key"] == "draft.max"
    assert result["baseline_value"] == ORIGINAL  # no 0 in the sweep: the file's own value
    assert launch.read_bytes() == original
    assert httpx.get(url + "/health", timeout=5).status_code == 200
    for outcome in result["outcomes"]:
        assert outcome["started"], outcome["failure"]
        for cell in outcome["cells"]:
            assert cell["errors"] == 0, cell
            assert cell["decode_tokens_per_s"] > 0
            # The server's own counters (llamacpp:spec_decode_*): a noisy draft accepts some, not all.
            assert cell["acceptance_rate"] is not None, cell["acceptance_note"]
            assert 0.0 <= cell["acceptance_rate"] <= 1.0
            assert 1.0 <= cell["mean_acceptance_length"] <= outcome["value"] + 1 + 1e-9
            positions = cell["per_position_acceptance"]
            assert positions is None or len(positions) <= outcome["value"]  # the restart reset them
    assert set(result["best"]) == {"1", "2"} and all(v in VALUES for v in result["best"].values())
    assert "best at concurrency 1: k=" in done.stdout
