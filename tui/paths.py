"""Where spectop's data folders are, in a source checkout and in an installed wheel."""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_REPO_DIR = _PACKAGE_DIR.parent


def _data_dir(name: str) -> Path:
    installed = _PACKAGE_DIR / f"_{name}"  # the wheel carries it inside the package
    if installed.is_dir():
        return installed
    return _REPO_DIR / name


def themes_dir() -> Path:
    return _data_dir("themes")


def sample_configs_dir() -> Path:
    return _data_dir("sample_configs")
