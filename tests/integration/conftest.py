"""Session fixtures for the integration suites: real llama-servers and real vLLMs (CPU build), from caches
that a machine's first run fills. Markers, xdist groups and order: tests/conftest.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import TypeVar

import pytest
from llama_build import LlamaBuildError, ensure_llama_server
from llama_models import ModelSet, make_models
from llama_server import LlamaServer, LoopbackServer, ServerError, kill_groups
from vllm_install import VLLM_VERSION, VllmInstallImpossible, cache_dir, ensure_vllm
from vllm_models import VllmModels
from vllm_models import make_models as make_vllm_models
from vllm_server import ManagedVllm, VllmServer, make_managed

# The long-lived servers of each suite (vLLM's at k = 3 where there is a draft), shared by the whole session.
SERVER_KINDS = ("nodraft", "same", "noisy", "random")
Server = TypeVar("Server", bound=LoopbackServer)


@pytest.fixture(scope="session")
def llama_server_binary() -> Path:
    try:
        return ensure_llama_server(log=lambda line: print(line, flush=True))
    except LlamaBuildError as exc:
        pytest.fail(f"could not build llama-server: {exc}")


@pytest.fixture(scope="session")
def gguf_models(tmp_path_factory: pytest.TempPathFactory) -> ModelSet:
    return make_models(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="session")
def new_llama(llama_server_binary: Path, gguf_models: ModelSet) -> Callable[[str, str, Path], LlamaServer]:
    """A llama-server (not started) by name, draft kind and work folder, serving the target model."""

    def new(name: str, kind: str, workdir: Path) -> LlamaServer:
        target, draft = gguf_models.target, gguf_models.draft(kind)
        return LlamaServer(name=name, binary=llama_server_binary, model=target, draft=draft, workdir=workdir)

    return new


@contextmanager
def all_running(servers: dict[str, Server]) -> Iterator[dict[str, Server]]:
    """Every server launched at once, then each waited for (its log kept on failure); all stopped after."""
    try:
        for server in servers.values():
            server.launch()
        for server in servers.values():
            try:
                server.wait_healthy()
            except ServerError as exc:
                pytest.fail(f"{server.name} did not start (log kept in {server.output_file}): {exc}")
        yield servers
    finally:
        timeout_s = max(server.stop_timeout_s for server in servers.values())
        kill_groups(
            [server.process.pid for server in servers.values() if server.process is not None], timeout_s
        )
        for server in servers.values():
            server.reap()


@pytest.fixture(scope="session")
def llama_servers(
    new_llama: Callable[[str, str, Path], LlamaServer], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, LlamaServer]]:
    """The four long-lived servers: no draft, identical draft, noisy draft, random draft."""
    workdir = tmp_path_factory.mktemp("servers")
    with all_running({kind: new_llama(kind, kind, workdir) for kind in SERVER_KINDS}) as servers:
        yield servers


@pytest.fixture
def make_server(
    new_llama: Callable[[str, str, Path], LlamaServer], tmp_path: Path
) -> Iterator[Callable[[str], LlamaServer]]:
    """A factory of extra, test-owned servers (for tests that kill or restart one); all stopped afterwards."""
    started: list[LlamaServer] = []

    def factory(kind: str) -> LlamaServer:
        server = new_llama(f"own-{kind}-{len(started)}", kind, tmp_path)
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


SHARED_VLLMS = "vllm_servers"
_STOP_SHARED_VLLMS: list[Callable[[], None]] = []


@pytest.fixture(scope="session")
def vllm_servers(
    vllm_python: Path, vllm_models: VllmModels, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, VllmServer]]:
    """Four vLLMs started at once: no draft, the target as its own draft, a noisy draft, a random one."""
    workdir = tmp_path_factory.mktemp("vllm-servers")
    vllm = partial(VllmServer, python=vllm_python, model=vllm_models.target, workdir=workdir)
    with ExitStack() as running:
        servers = {kind: vllm(name=kind, draft=vllm_models.draft(kind)) for kind in SERVER_KINDS}
        running.enter_context(all_running(servers))
        _STOP_SHARED_VLLMS.append(running.close)
        yield servers


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """The shared vLLMs stop after the last test that uses them (those tests run one after another, first in
    their lane: tests/conftest.py), not at the session's end: idle, each still takes ~10% of a core."""
    uses = SHARED_VLLMS in getattr(item, "fixturenames", ())
    if uses and SHARED_VLLMS not in getattr(nextitem, "fixturenames", ()):
        while _STOP_SHARED_VLLMS:
            _STOP_SHARED_VLLMS.pop()()


@pytest.fixture
def managed(vllm_python: Path, vllm_models: VllmModels, tmp_path: Path) -> Iterator[ManagedVllm]:
    """A vLLM of the test's own (k=2) that spectop may edit and restart; stopped after."""
    server = make_managed(tmp_path / "bed", vllm_python, vllm_models, k=2)
    try:
        server.start()
        yield server
    finally:
        server.stop()
