"""The suite's shape: the unit tests on every core, then the real-server suites.

pytest-xdist runs the tests (`-n auto --dist loadgroup`, pyproject.toml). Every `test_real_vllm_*.py` test
under tests/integration/ gets the `real_vllm` marker, every other one there the `llamacpp` marker; the tests
that share real servers are an xdist group (below), which runs whole on one worker, so the session fixture
that starts them does so once. Run one suite alone with `-m llamacpp` or `-m real_vllm`, or
leave both out with `-m "not llamacpp and not real_vllm"`; `-n 0` runs everything in one process.

On a machine's first run, llama-server's build and vLLM's install start in the background as soon as the
tests are collected, niced, beside the unit tests; the session fixtures then wait on the same file locks.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import pytest

INTEGRATION = Path(__file__).parent / "integration"
VLLM_PREFIX = "test_real_vllm_"
BED_CHECKS = "test_llama_servers.py"  # the llama.cpp bed's own checks run first: a broken bed fails there
# A hang guard, not a speed limit: it covers a session fixture's setup too, building llama-server (8-17 min
# on a busy 2-core machine) or installing vLLM and starting four of them.
INTEGRATION_HANG_GUARD_S = 2400
# The session fixture of the four vLLMs that several tests share: the tests that use it are one xdist group,
# so they start once, on one worker. The other vLLM tests start (and restart) their own vLLM: on two
# workers, two of those starts go at once (each takes about one core). The llama.cpp suite (about a minute)
# is one group: its bed checks run first.
SHARED_VLLMS = "vllm_servers"
PREPARATION_SCRIPTS = {"llamacpp": "llama_build.py", "real_vllm": "vllm_install.py"}
# The unit tests' longest files (`--durations`), started first so that the two workers end together
# rather than one finishing a 2-minute sim test alone at the end.
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

# Bytecode is cached even where PYTHONDONTWRITEBYTECODE is set (as on the CI machines): without the cache
# every pytest process rewrites the asserts of ~400 test modules again (collection took 33 s instead of 4 s
# on a busy 2-core machine, in each xdist worker), and every `spectop` subprocess compiles tui/ again.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


@pytest.fixture(autouse=True)
def _private_user_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the user's ~/.config, ~/.local/share or ~/.local/state/spectop (the state
    file, the histories, the step-cost models): tests on other workers would share them. A folder's own
    conftest may point one elsewhere still."""
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))


def real_server_suite(path: Path) -> str | None:
    """The marker (and xdist group) of the real-server suite a test file belongs to; None for a unit test."""
    if INTEGRATION not in path.parents:
        return None
    return "real_vllm" if path.name.startswith(VLLM_PREFIX) else "llamacpp"


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        suite = real_server_suite(item.path)
        if suite is None:
            continue
        item.add_marker(getattr(pytest.mark, suite))
        item.add_marker(pytest.mark.timeout(INTEGRATION_HANG_GUARD_S))
        if suite == "llamacpp" or SHARED_VLLMS in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group(suite))

    # Stable sort: the unit tests first (the slowest files first), then the llama.cpp bed's own checks,
    # that suite, then vLLM's.
    def order(item: pytest.Item) -> tuple[bool, bool, bool, int]:
        suite = real_server_suite(item.path)
        slow = [index for index, name in enumerate(SLOWEST_FIRST) if item.path.match(name)]
        return (
            suite is not None,
            suite == "real_vllm",
            item.path.name != BED_CHECKS,
            slow[0] if slow else len(SLOWEST_FIRST),
        )

    items.sort(key=order)


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
