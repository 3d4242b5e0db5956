"""API keys, the one rule: a key comes only from the environment variable a setting names
(`api_key_env`, `--api-key-env`, fleet's `bearer_token_env`) and goes only into the Authorization
header of a request to that endpoint; it is never an argument, never printed, logged or exported.

Every client of an endpoint (the monitor's scrapes and /v1/models, `spectop snapshot`, bursts and
their probes, the fleet's Prometheus client) builds its header here. No textual.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Protocol


class HasApiKey(Protocol):
    def api_key(self) -> str | None: ...


def api_key_from_env(name: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The key held by environment variable `name`, or None when no name is given or it is unset/empty."""
    if not name:
        return None
    return (os.environ if environ is None else environ).get(name) or None


def bearer_headers(api_key: str | None) -> dict[str, str]:
    """The Authorization header for an API key; none without a key."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def endpoint_headers(endpoint: HasApiKey) -> dict[str, str]:
    """The Authorization header for an endpoint's settings (its `api_key_env`)."""
    return bearer_headers(endpoint.api_key())
