"""`spectop snapshot --prometheus URL`: Prometheus's labels (instance, model, backend) and its own error
text are untrusted like a server's /metrics page, so no control sequence reaches stdout or stderr raw,
in the text table and in the JSON lines (escaped there, not lost). A real subprocess against a fake
Prometheus on 127.0.0.1 (issue 11, item 1).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tests.cli.test_sanitize_cli import assert_no_raw_controls, spectop
from tests.fleet.fake_fleet import Fleet40, instances
from tests.fleet.fake_prometheus import FakePrometheus
from tests.test_sanitize import HOSTILE


def hostile_fleet() -> Fleet40:
    members = instances(4)
    members[0].name = f"10.1.0.1{HOSTILE}:8000"  # the instance label
    members[1].model = f"qwen{HOSTILE}"  # the model_name label
    return Fleet40(members=members)


@pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
async def test_snapshot_of_a_fleet_prints_no_control_sequence(json_output: bool) -> None:
    fleet = hostile_fleet()
    async with FakePrometheus(fleet.answer) as prometheus:
        code, out, err = await spectop(
            "snapshot", "--prometheus", prometheus.url, "--timeout", "5", *(["--json"] if json_output else [])
        )
    assert code == 1, err  # the fleet's last instance is down
    assert_no_raw_controls(out + err)
    if json_output:
        lines = [json.loads(line) for line in out.splitlines()]
        assert {line["url"] for line in lines} >= {fleet.members[0].name}  # escaped, not lost
        assert {line["model"] for line in lines} >= {fleet.members[1].model}
    else:
        assert "10.1.0.1evil" in out and "qwenevil" in out


async def test_a_failing_prometheus_error_is_printed_without_control_sequences() -> None:
    fleet = hostile_fleet()
    fleet.failing = (422, {"status": "error", "errorType": f"bad{HOSTILE}", "error": f"no {HOSTILE}"}, 0.0)
    async with FakePrometheus(fleet.answer) as prometheus:
        code, out, err = await spectop("snapshot", "--prometheus", prometheus.url, "--timeout", "5")
    assert code == 1
    assert "error (badevil" in err and "Traceback" not in err
    assert_no_raw_controls(out + err)
