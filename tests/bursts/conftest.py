"""Shared fixtures for the burst engine tests: timed servers and a client sized for them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from timed_server import Behaviour, TimedServer


@pytest.fixture
def timed_server() -> Iterator[TimedServer]:
    with TimedServer(Behaviour()) as server:
        yield server


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with httpx.AsyncClient(limits=limits) as http:
        yield http


@pytest.fixture(autouse=True)
def _private_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
