"""The suite's shape: the real-server suites, marked `llamacpp` and `real_vllm` (`-m` runs or leaves out one),
run in two lanes (xdist groups: one worker each, in order), the unit tests on the other workers beside them,
those that measure sims last (in a unit-only run, the slowest first).
Never more than two real-server tests at once; the tests that share real servers are in one lane, so their
session fixture starts them once. A test marked `quiet` (it measures a real server's speed to check a
prediction) runs alone, last in its lane: it waits for the tests running to end, and no other starts until it
has ended. llama-server's build and vLLM's install start in the background at collection, niced; the session
fixtures wait on the same file locks.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

INTEGRATION = Path(__file__).parent / "integration"
VLLM_PREFIX = "test_real_vllm_"
BED_CHECKS = "test_llama_servers.py"  # the llama.cpp bed's own checks run first: a broken bed fails there
# A hang guard, not a speed limit: it covers a session fixture's setup too (building llama-server).
INTEGRATION_HANG_GUARD_S = 2400
# The lanes, balanced by their durations on two cores (~12 minutes each besides the quiet tests): the vLLM
# tunes, autopilot and advisor, in that order (each starts its own vLLMs; one vLLM at first, beside the unit
# tests and the llama.cpp bed's start); every other real-server test.
LANE_B = ("test_real_vllm_tune.py", "test_real_vllm_autopilot.py", "test_real_vllm_advisor.py")
SHARED_VLLMS = "vllm_servers"  # the session fixture of the four shared vLLMs (tests/integration/conftest.py)
PREPARATION_SCRIPTS = {"llamacpp": "llama_build.py", "real_vllm": "vllm_install.py"}
# The unit tests' longest files, started first so that their workers end together.
SLOWEST_FIRST = (
    "advice/test_advisor_sim.py",
    "tune/test_tune_screen.py",
    "tune/test_table_apply.py",
    "tune/test_sweep.py",
    "tune/test_grid_sweep.py",
    "tune/test_tune_by_context.py",
    "ui/test_no_cut_figures.py",
    "ui/test_bench_screen.py",
    "ui/test_demo_command.py",
    "fleet/test_fleet_prometheus.py",
)

# The unit tests that measure speed on simulators (the sim's model against spectop's verdicts; and every
# test on the tune fixture's sim): last, so that they run once the real-server lanes have ended, on every
# worker, on a quiet host.
MEASURING = (
    "tune/test_*.py",
    "advice/test_advisor_sim.py",
    "ui/test_bench_screen.py",
    "autopilot/test_*.py",
    "bench/test_against_sim.py",
    "bench/test_until_significant.py",
    "bench/test_client_check.py",  # these three check the measuring client keeps up: a loaded host fails them
    "bench/test_burst_history.py",
    "advice/test_guard_app.py",
)

# Bytecode is cached even where PYTHONDONTWRITEBYTECODE is set (as on the CI machines): else every pytest
# worker rewrites the asserts of every test module again, and every `spectop` subprocess compiles tui/.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


@pytest.fixture(autouse=True)
def _private_user_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the user's config, data or state folders (other workers would share them)."""
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))


def real_server_suite(path: Path) -> str | None:
    """The marker (and xdist group) of the real-server suite a test file belongs to; None for a unit test."""
    if INTEGRATION not in path.parents:
        return None
    return "real_vllm" if path.name.startswith(VLLM_PREFIX) else "llamacpp"


def unit_only(config: pytest.Config) -> bool:
    """True when `-m` leaves out every real-server suite."""
    markers = config.option.markexpr or ""
    return all(f"not {suite}" in markers for suite in PREPARATION_SCRIPTS)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    lanes = not unit_only(config)
    for item in items:
        suite = real_server_suite(item.path)
        if suite is None:
            continue
        item.add_marker(getattr(pytest.mark, suite))
        item.add_marker(pytest.mark.timeout(INTEGRATION_HANG_GUARD_S))
        lane = "b" if item.path.name in LANE_B else "a"
        item.add_marker(pytest.mark.xdist_group(f"lane-{lane}"))

    # Stable sort: the unit tests first (the slowest files first; those that measure sims after the others
    # when the lanes run), then the real-server tests in each lane's order: the quiet ones last, the llama.cpp
    # bed's own checks first, that suite, then vLLM's, the tests on the shared vLLMs one after another (they
    # are stopped after the last).
    def order(item: pytest.Item) -> tuple[bool, bool, bool, int, bool, bool, bool, int]:
        suite = real_server_suite(item.path)
        slow = [index for index, name in enumerate(SLOWEST_FIRST) if item.path.match(name)]
        return (
            suite is not None,
            lanes
            and (
                any(item.path.match(pattern) for pattern in MEASURING)
                or "tune_sim" in getattr(item, "fixturenames", ())
            ),
            item.get_closest_marker("quiet") is not None,
            LANE_B.index(item.path.name) if item.path.name in LANE_B else -1,
            suite == "real_vllm",
            SHARED_VLLMS not in getattr(item, "fixturenames", ()),
            item.path.name != BED_CHECKS,
            slow[0] if slow else len(SLOWEST_FIRST),
        )

    items.sort(key=order)


@contextlib.contextmanager
def host_share(alone: bool) -> Iterator[None]:
    """The host shared with the run's other tests (a shared lock), or alone (exclusive): two file locks, the
    gate first, so that a test waiting to be alone stops new tests from starting while it waits."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getpid()))
    folder = Path(tempfile.gettempdir()) / f"spectop-host-{run}"
    folder.mkdir(exist_ok=True)
    with (folder / "gate").open("a") as gate, (folder / "running").open("a") as running:
        fcntl.flock(gate, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        fcntl.flock(running, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield  # closing the files releases the locks


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outside pytest-timeout's: a test's wait is not its time
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    if unit_only(item.config):
        return (yield)
    with host_share(alone=item.get_closest_marker("quiet") is not None):
        return (yield)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: with the real-server lanes, one worker per core and one more (on two cores: the lanes and
    one for the unit tests; four made the unit tests that measure sims fail under load ~18); three per core
    for the unit tests alone, which wait on apps, local servers and subprocesses more than they compute
    (their slowest tests take as long beside five other workers as beside three)."""
    cores = os.cpu_count() or 1
    return 3 * cores if unit_only(config) else cores + 1


_PREPARING: list[subprocess.Popen[bytes]] = []


def _prepare_real_servers(config: pytest.Config, test_files: Iterable[Path]) -> None:
    """Build llama-server and install vLLM in the background (each script returns at once when its cache
    is valid) for the real-server suites among `test_files`."""
    if config.option.collectonly or _PREPARING:
        return
    suites = {real_server_suite(path) for path in test_files}
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    for suite, script in PREPARATION_SCRIPTS.items():
        if suite not in suites:
            continue
        log = Path(tempfile.gettempdir()) / f"spectop-{Path(script).stem}.log"
        if reporter is not None:
            reporter.write_line(f"{suite}: checking its cache, filled in the background if need be ({log})")
        with log.open("wb") as out:
            _PREPARING.append(
                subprocess.Popen(
                    ["nice", "-n", "15", sys.executable, str(INTEGRATION / script)],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )


def pytest_collection_finish(session: pytest.Session) -> None:
    # Under xdist, the workers collect too, but the controller starts the preparation.
    if not hasattr(session.config, "workerinput"):
        _prepare_real_servers(session.config, (item.path for item in session.items))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    """Under xdist, the controller (which outlives the workers) starts the preparation, from the first
    worker's collection."""
    config = node.config  # type: ignore[attr-defined]
    _prepare_real_servers(config, (config.rootpath / nodeid.split("::")[0] for nodeid in ids))


def pytest_sessionfinish(session: pytest.Session) -> None:
    for process in _PREPARING:  # a session that ended early (-x, ctrl+c) leaves no build running
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait()
