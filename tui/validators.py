"""Field checks shared by the pydantic models of the files spectop reads."""

from __future__ import annotations


def check_http_url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise ValueError(f"expected an http:// or https:// URL, got {value!r}")
    return value


def check_env_var_name(value: str) -> str:
    """The NAME of an environment variable; catches an API key pasted in its place."""
    if not (value and value.replace("_", "").isalnum() and value.isascii() and not value[0].isdigit()):
        raise ValueError(
            "expected the NAME of an environment variable (letters, digits, _), not the key itself"
        )
    return value
