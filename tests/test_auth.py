"""API keys (tui/auth.py): read only from the variable a setting names, sent only as a Bearer header,
and that header is built in one place for every client of an endpoint."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tui.auth import api_key_from_env, bearer_headers, endpoint_headers
from tui.settings import EndpointSettings

TUI = Path(__file__).resolve().parents[1] / "tui"
# A header written by hand: {"Authorization": ...} or headers["Authorization"] = ...
HAND_MADE = re.compile(r"""["']Authorization["']\s*[:\]]""", re.IGNORECASE)


def test_the_key_comes_from_the_named_variable_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECTOP_AUTH_TEST_KEY", "s3cret")
    monkeypatch.setenv("SPECTOP_AUTH_EMPTY", "")
    assert api_key_from_env("SPECTOP_AUTH_TEST_KEY") == "s3cret"
    assert api_key_from_env("SPECTOP_AUTH_EMPTY") is None  # empty is no key, not an empty Bearer
    assert api_key_from_env(None) is None
    assert api_key_from_env("K", {"K": "from a mapping"}) == "from a mapping"
    endpoint = EndpointSettings(name="a", url="http://127.0.0.1:1", api_key_env="SPECTOP_AUTH_TEST_KEY")
    assert endpoint_headers(endpoint) == {"Authorization": "Bearer s3cret"}
    assert endpoint_headers(EndpointSettings(name="b", url="http://127.0.0.1:1")) == {}
    assert bearer_headers(None) == bearer_headers("") == {}
    assert "s3cret" not in endpoint.model_dump_json()  # settings hold the variable's name, not the key


def test_the_authorization_header_is_built_in_tui_auth_only() -> None:
    """The monitor, `spectop snapshot`, bursts and the fleet client all go through tui/auth.py (the
    simulator, a server, checks the header and is left out)."""
    hand_made = [
        f"{path.relative_to(TUI)}:{number}"
        for path in sorted(TUI.rglob("*.py"))
        if path.name != "auth.py" and "sim" not in path.relative_to(TUI).parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if HAND_MADE.search(line)
    ]
    assert hand_made == []
