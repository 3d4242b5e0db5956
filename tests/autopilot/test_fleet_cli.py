"""`spectop autopilot --prometheus` on four sims: a dry run says what it would do and why; changes nothing."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from tests.autopilot.conftest import DECAYING, ROOT, SimFleet
from tests.fleet.conftest import NEEDS_PROMETHEUS
from tui.autopilot.targets import from_templates

pytestmark = NEEDS_PROMETHEUS


def test_the_templates_name_each_instance_s_file_and_command() -> None:
    target = from_templates(
        "10.0.0.5:8001", "vllm a", "/etc/vllm/{port}.toml", "restart.sh {host} {job} {instance}"
    )
    assert target.config == Path("/etc/vllm/8001.toml")
    assert target.restart_command == ["restart.sh", "10.0.0.5", "vllm a", "10.0.0.5:8001"]
    assert target.url == "http://10.0.0.5:8001"
    assert target.health_timeout_s == 120  # the default; --health-timeout sets it for slow starters
    slow = from_templates("10.0.0.5:8001", None, "/{port}.toml", "true", health_timeout_s=900)
    assert slow.health_timeout_s == 900 and slow.changer(None).health_timeout_s == 900  # type: ignore[arg-type]


def test_a_health_timeout_must_be_positive() -> None:
    command = [
        sys.executable, "-m", "tui", "autopilot", "--prometheus", "http://127.0.0.1:9", "--config-template",
        "{port}.toml", "--restart-template", "true", "--health-timeout", "0",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 2 and "--health-timeout must be > 0" in done.stderr + done.stdout


def test_a_dry_run_on_a_fleet_proposes_and_changes_nothing(sim_fleet: SimFleet, tmp_path: Path) -> None:
    for instance, sim in sim_fleet.by_instance.items():
        (tmp_path / f"port-{instance.rsplit(':', 1)[1]}.toml").symlink_to(sim.config)
        sim_fleet.control(instance, {"acceptance": DECAYING})
    found = {sim.config: sim.config.read_bytes() for sim in sim_fleet.by_instance.values()}
    command = [
        sys.executable, "-m", "tui", "autopilot", "--prometheus", sim_fleet.prometheus.url,
        "--config-template", str(tmp_path / "port-{port}.toml"), "--restart-template", "false {port}",
        "--sim-step-cost", "--interval", "1", "--sustained", "2", "--audit", str(tmp_path / "trail.jsonl"),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert process.stdout is not None
    lines = []
    for line in process.stdout:  # until the proposal
        lines.append(line.rstrip())
        if "(dry run: --auto to act)" in line:
            process.send_signal(signal.SIGINT)
            break
    lines += process.stdout.read().splitlines()
    assert process.wait() == 0
    print("\n".join(lines))
    assert lines[0].startswith("spectop autopilot: dry run (--auto to act)")
    assert any("would set k=2 on 127.0.0.1:" in line and "k=2 would be" in line for line in lines)
    assert sum("config left as found (k=4)" in line for line in lines) == 4
    assert {path: path.read_bytes() for path in found} == found
