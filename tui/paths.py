"""Where spectop's folders are: its shipped data (in a source checkout and in an installed wheel), and
the user's configuration and data folders (XDG). Nothing else in tui/ computes a folder."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_REPO_DIR = _PACKAGE_DIR.parent


def _data_dir(name: str) -> Path:
    installed = _PACKAGE_DIR / f"_{name}"  # the wheel carries it inside the package
    return installed if installed.is_dir() else _REPO_DIR / name


def themes_dir() -> Path:
    return _data_dir("themes")


def sample_configs_dir() -> Path:
    return _data_dir("sample_configs")


def user_config_dir() -> Path:
    """`$XDG_CONFIG_HOME/spectop` (else `~/.config/spectop`): spectop.toml, themes, the remembered theme."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "spectop"


def user_data_dir() -> Path:
    """`$XDG_DATA_HOME/spectop` (else `~/.local/share/spectop`): kept bursts and tunes, recovery copies."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "spectop"


def step_cost_file() -> Path:
    """The step-cost models fitted by `spectop tune --calibrate` (tui/advice/stepcost.py)."""
    return user_data_dir() / "stepcost.json"


def home_dir() -> Path:
    """The user's home folder (paths under it are shown as `~/…`)."""
    return Path.home()
