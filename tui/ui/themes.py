"""Colour themes as data files (shipped, then the user's; a broken file is reported and skipped), and
NO_COLOR (https://no-color.org) honoured with no colour codes at all, focus shown by shape."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from textual.app import App
from textual.color import Color, ColorParseError
from textual.filter import Monochrome, NoColor
from textual.theme import Theme

from tui.paths import themes_dir, user_config_dir
from tui.validators import friendly_message

DEFAULT_THEME = "spectop-dark"
MAX_THEME_FILE_BYTES = 64_000


def _colour(value: str) -> str:
    try:
        Color.parse(value)
    except ColorParseError as error:
        raise ValueError(f"expected a colour such as '#4EA8DE', got {value!r}") from error
    return value


Colour = Annotated[str, AfterValidator(_colour)]


class ThemeFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=60)
    dark: bool = True
    primary: Colour
    secondary: Colour | None = None
    accent: Colour | None = None
    foreground: Colour | None = None
    background: Colour | None = None
    surface: Colour | None = None
    panel: Colour | None = None
    boost: Colour | None = None
    success: Colour | None = None
    warning: Colour | None = None
    error: Colour | None = None
    variables: dict[str, str] = Field(default_factory=dict)

    def to_theme(self) -> Theme:
        return Theme(**self.model_dump())


@dataclass
class LoadedThemes:
    themes: dict[str, Theme] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def load_theme_file(path: Path) -> Theme:
    """One theme file → a Theme; ValueError naming the file and field when it is broken."""
    try:
        if path.stat().st_size > MAX_THEME_FILE_BYTES:
            raise ValueError(f"{path}: larger than {MAX_THEME_FILE_BYTES} bytes, not a theme")
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot read: {error}") from error
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not valid TOML: {error}") from error
    try:
        return ThemeFile.model_validate(data).to_theme()
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(item) for item in first["loc"]) or "top level"
        raise ValueError(f"{path}: field {where}: {friendly_message(dict(first))}") from error


def load_themes(folders: list[Path] | None = None) -> LoadedThemes:
    """Every theme in the folders (shipped first, then the user's); problems are collected, not raised."""
    loaded = LoadedThemes()
    for folder in folders if folders is not None else [themes_dir(), user_config_dir() / "themes"]:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            try:
                theme = load_theme_file(path)
            except ValueError as error:
                loaded.problems.append(str(error))
                continue
            loaded.themes[theme.name] = theme
    return loaded


def next_theme(current: str, names: list[str]) -> str:
    if current not in names:
        return names[0] if names else current
    return names[(names.index(current) + 1) % len(names)]


# Focus and selection without colour (loaded only under NO_COLOR); the footer's last key's margin dropped;
# on a dialog, only the newest toast shows, at the top, never over its keys.
FOOTER_CSS = """
Footer.-compact FooterKey.-command-palette { margin-right: 0; padding-right: 1; }
ModalScreen > ToastRack { dock: top; align: right top; margin-bottom: 0; }
ModalScreen > ToastRack > ToastHolder { display: none; }
ModalScreen > ToastRack > ToastHolder:last-child { display: block; }
"""

NO_COLOR_CSS = """
EndpointCard:focus, LogPane:focus, EndpointTable:focus, DataTable:focus { border: heavy; }
EndpointCard:focus { border-title-style: bold reverse; }
DataTable > .datatable--cursor, DataTable > .datatable--fixed-cursor { text-style: bold reverse; }
OptionList > .option-list--option-highlighted { text-style: bold reverse; }
Switch:focus, Button:focus, Input:focus, Select:focus > SelectCurrent { text-style: reverse; }
Tab.-active { text-style: bold reverse; }
Input > .input--placeholder { text-style: italic; }
"""


def honour_no_color(app: App[Any]) -> None:
    """Under NO_COLOR: no colour codes, focus shown by shape and reverse video. Call from `__init__`."""
    if not app.no_color:
        return
    app._filters[:] = [NoColor() if isinstance(item, Monochrome) else item for item in app._filters]
    app.stylesheet.add_source(NO_COLOR_CSS, read_from=(__file__, "NO_COLOR_CSS"), is_default_css=False)
