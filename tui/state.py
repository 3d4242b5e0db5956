"""spectop's remembered choices (`state.json`: the theme, the table's columns), this module its one owner:
reading never raises, `remember` changes one key under a file lock (choices made at once all land)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tui.configs.atomic import file_lock, write_file
from tui.paths import user_config_dir

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
    """Store one choice, keeping the others; a problem description instead of raising."""
    path = state_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(path):
            data = read_state()
            data[key] = value
            write_file(path, json.dumps(data, indent=2) + "\n")
    except OSError as error:
        return f"{path}: cannot save the {key} choice: {error}"
    return None


def remember_table(choice: TableChoice) -> str | None:
    return remember("table", choice.model_dump())


def remembered_theme() -> str | None:
    theme = read_state().get("theme")
    return theme if isinstance(theme, str) else None


def remember_theme(name: str) -> str | None:
    return remember("theme", name)
