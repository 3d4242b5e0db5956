"""The SVG snapshots are one Textual's and one Rich's rendering: the test extra pins both exactly, and a
test environment with other releases says so here, not as 30 snapshot diffs."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
RENDERERS = ("textual", "rich")


def test_the_test_extra_pins_textual_and_rich_and_they_are_installed() -> None:
    extra = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]["test"]
    pins = dict(requirement.split("==", 1) for requirement in extra if "==" in requirement)
    assert set(RENDERERS) <= pins.keys(), f"the test extra must pin {RENDERERS} exactly: {extra}"
    installed = {name: version(name) for name in RENDERERS}
    assert installed == {name: pins[name] for name in RENDERERS}, (
        "the snapshots were drawn by the pinned releases; reinstall with `pip install -e '.[test]'`"
    )
