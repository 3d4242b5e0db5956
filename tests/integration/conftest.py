"""Session fixtures for the llama-server integration suite.

Every test collected under this folder gets the `llamacpp` marker and runs after the unit tests. Run this
suite alone with `.venv/bin/python -m pytest tests/integration -v`, or leave it out with `-m "not llamacpp"`.
The first run on a machine builds llama-server (about 8 minutes on 2 cores); later runs reuse the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from llama_build import LlamaBuildError, ensure_llama_server
from llama_models import ModelSet, make_models
from llama_server import LlamaServer

THIS_FOLDER = Path(__file__).parent
SERVER_DRAFTS = ("nodraft", "same", "noisy", "random")


BED_CHECKS = "test_llama_servers.py"  # the test bed's own checks run first: a broken bed fails there


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def is_bed_check(item: pytest.Item) -> bool:
        return Path(str(item.fspath)) == THIS_FOLDER / BED_CHECKS

    for item in items:
        if THIS_FOLDER in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.llamacpp)

    def is_integration(item: pytest.Item) -> bool:
        return THIS_FOLDER in Path(str(item.fspath)).parents

    # Stable sort: the unit tests first, then the test bed's own checks, then the rest of this suite.
    items.sort(key=lambda item: (is_integration(item), not is_bed_check(item)))


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
