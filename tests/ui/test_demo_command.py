"""`spectop demo` start-up and shutdown: real `spectop sim` subprocesses, copies of the samples."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from tui.commands.demo import DemoError, demo_sims, start_sims
from tui.paths import sample_configs_dir


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_demo_starts_two_sims_on_free_ports_and_stops_them() -> None:
    samples_before = {path.name: path.read_bytes() for path in sample_configs_dir().iterdir()}
    with demo_sims(background_load_rps=0.5) as sims:
        folder = sims.folder
        assert [endpoint.name for endpoint in sims.endpoints] == ["mtp-on", "mtp-off"]
        ports = set()
        for endpoint, process in zip(sims.endpoints, sims.processes, strict=True):
            assert endpoint.url.startswith("http://127.0.0.1:")
            ports.add(endpoint.url.rsplit(":", 1)[1])
            assert endpoint.config_file is not None and endpoint.config_file.parent == folder
            assert endpoint.log_file is not None and endpoint.log_file.parent == folder
            assert endpoint.restart_command == ["kill", "-HUP", str(process.pid)]
            page = httpx.get(f"{endpoint.url}/metrics", timeout=5.0).text
            assert "vllm:generation_tokens_total" in page
        assert len(ports) == 2
        on_text = (folder / "config.toml").read_text(encoding="utf-8")
        assert "enabled = true" in on_text
        pids = [process.pid for process in sims.processes]
    assert not any(_alive(pid) for pid in pids)
    assert not folder.exists()
    assert {path.name: path.read_bytes() for path in sample_configs_dir().iterdir()} == samples_before


def test_a_sim_that_cannot_start_is_reported_and_nothing_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tui.commands.demo as demo

    broken = tmp_path / "samples"
    broken.mkdir()
    (broken / "config.toml").write_text("[model\nbroken", encoding="utf-8")
    (broken / "config_mtp_off.toml").write_text("", encoding="utf-8")
    monkeypatch.setattr(demo, "sample_configs_dir", lambda: broken)
    folder = tmp_path / "demo"
    folder.mkdir()
    with pytest.raises(DemoError, match="mtp-on exited"):
        start_sims(folder)
