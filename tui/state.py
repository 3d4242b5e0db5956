"""spectop's remembered choices: `$XDG_CONFIG_HOME/spectop/state.json` (the theme, the table's columns).

One JSON object; each choice is one key. Reading never raises (a missing or broken file is no choice);
writing keeps the other keys and replaces the file atomically, and returns a problem instead of raising
(a read-only home is fine). Written from a thread: the callers are on the event loop.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tui.settings import user_config_dir

STATE_FILE_NAME = "state.json"
MAX_COLUMNS = 32


class TableChoice(BaseModel):
    """The dashboard table's columns (keys, in order) and its sort."""

    model_config = ConfigDict(extra="ignore")

    columns: list[str] = Field(default_factory=list, max_length=MAX_COLUMNS)
    sort: str | None = None
    reverse: bool = False


def state_path() -> Path:
    return user_config_dir() / STATE_FILE_NAME


def read_state() -> dict[str, Any]:
    try:
        data = json.loads(state_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remembered_table() -> TableChoice | None:
    data = read_state().get("table")
    if not isinstance(data, dict):
        return None
    try:
        return TableChoice.model_validate(data)
    except ValidationError:
        return None  # a broken choice is no choice


def remember(key: str, value: Any) -> str | None:
    """Store one choice; a problem description instead of raising."""
    path = state_path()
    data = read_state()
    data[key] = value
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError as error:
        return f"{path}: cannot save the {key} choice: {error}"
    return None


def remember_table(choice: TableChoice) -> str | None:
    return remember("table", choice.model_dump())
