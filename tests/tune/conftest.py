"""The tune tests' fixtures: a real `spectop sim` restarted over the demo's control socket."""

from __future__ import annotations

import contextlib
import difflib
import io
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.sim.conftest import write_vllm_config
from tui.cli import main
from tui.sim.supervisor import CONTROL_SOCKET, DemoSim, DemoSims
from tui.tune.result import TuneCell, TuneResult, ValueOutcome

RESTART_CLIENT = Path(__file__).with_name("restart_sim.py")
ROOT = Path(__file__).resolve().parents[2]

# The speed model: acceptance per position, step costs, no content effect. With it k=2 is best at
# concurrency 1 and speculation off (k=0) is best at concurrency 8 (computed in the tests). The sim runs it
# at twice the modelled speed: the tests compare ratios of speeds, which the speed does not change.
SIM_MODEL = """acceptance = [0.8, 0.7, 0.6, 0.5, 0.45, 0.4, 0.35, 0.3]
content_effect = 0.0
step_base_ms = 10.0
step_per_seq_ms = 8.0
verify_cost_per_draft = 1.0
draft_cost_ms = 1.0
prefill_base_ms = 1.0
prefill_ms_per_token = 0.001
spec_prefill_overhead = 0.0
draft_memory_per_token = 0.02
seed = 7
speed = 2.0
"""


def write_config(path: Path, *, k: int = 2, enabled: bool = True) -> Path:
    """tests/sim's vLLM config.toml with SIM_MODEL, its k line commented (comments must survive a tune)."""
    write_vllm_config(path, k=k, enabled=enabled, sim=SIM_MODEL)
    line = f"num_speculative_tokens = {k}\n"
    text = path.read_text(encoding="utf-8").replace(line, line.replace("\n", "   # draft tokens per step\n"))
    path.write_text(text, encoding="utf-8")
    return path


def changed_lines(before: str, after: str) -> list[str]:
    """The lines a diff takes out (-) and puts in (+), headers left out."""
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return [line for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]


def tune_result(rates: dict[tuple[int, int], float | None] | None = None, **fields: Any) -> TuneResult:
    """A tune of vLLM's k (baseline 0) with `rates` ((value, concurrency) -> tok/s) as its cells."""
    if rates is not None:
        cells = [
            TuneCell(value=v, concurrency=c, ok=True, decode_tokens_per_s=rate)
            for (v, c), rate in rates.items()
        ]
        values = sorted({cell.value for cell in cells})
        fields["outcomes"] = [
            ValueOutcome(
                value=v,
                started=True,
                cells=sorted((c for c in cells if c.value == v), key=lambda c: c.concurrency),
            )
            for v in values
        ]
    outcomes: list[ValueOutcome] = fields["outcomes"]
    defaults: dict[str, Any] = {
        "started_at": datetime(2026, 12, 1, tzinfo=UTC), "config_file": "config.toml", "kind": "vllm_toml",
        "key": "speculative.num_speculative_tokens", "endpoint": "http://127.0.0.1:8000",
        "restart_command": ["true"], "values": [o.value for o in outcomes],
        "concurrencies": sorted({c.concurrency for o in outcomes for c in o.cells}), "original_value": None,
        "baseline_value": 0, "requests": 8, "max_tokens": 32, "prompts": "mixed",
    }  # fmt: skip
    return TuneResult(**{**defaults, **fields})


def spectop(*argv: str) -> tuple[int, str, str]:
    """`spectop ARGV` run in this process (no interpreter start per run): its exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def health(url: str) -> int | None:
    """The server's /health status (None: no answer)."""
    try:
        return httpx.get(url + "/health", timeout=5).status_code
    except httpx.HTTPError:
        return None


def spectop_process(*argv: str) -> subprocess.Popen[str]:
    """`spectop ARGV` as its own process, to be signalled."""
    command = [sys.executable, "-m", "tui", *argv]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@dataclass
class TuneSim:
    sims: DemoSims
    sim: DemoSim
    config: Path

    @property
    def url(self) -> str:
        return self.sim.url

    @property
    def restart_command(self) -> list[str]:
        """What `sims.restart_command` runs, by a client that does not import spectop (restart_sim.py)."""
        return [sys.executable, str(RESTART_CLIENT), str(self.sims.folder / CONTROL_SOCKET), self.sim.name]


@contextmanager
def running_sim(config: Path, name: str = "tuned", *, load_rps: float = 0.0) -> Iterator[TuneSim]:
    """One `spectop sim` on `config` (its files beside it), restartable through the demo's control socket."""
    folder = config.parent
    sims = DemoSims(folder, background_load_rps=load_rps)
    sim = DemoSim.in_folder(name, config, folder)
    sims.sims.append(sim)
    try:
        sims.start(sim)
        sims.watch()
        yield TuneSim(sims, sim, config)
    finally:
        sims.stop()


@pytest.fixture
def tune_sim(tmp_path: Path) -> Iterator[TuneSim]:
    folder = tmp_path / "sim"
    folder.mkdir()
    with running_sim(write_config(folder / "config.toml")) as sim:
        yield sim
