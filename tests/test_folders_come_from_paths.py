"""The user's folders (XDG config and data) are computed in one place, tui/paths.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tui.paths import user_config_dir, user_data_dir

PACKAGE = Path(__file__).resolve().parent.parent / "tui"
COMPUTES_A_FOLDER = re.compile(r"""XDG_(CONFIG|DATA|STATE|CACHE)_HOME["']|Path\.home\(\)""")


def test_only_tui_paths_computes_the_users_folders() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "paths.py" or path.parent != PACKAGE
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if COMPUTES_A_FOLDER.search(line) and not line.lstrip().startswith("#")
    ]
    assert found == [], "use tui.paths.user_config_dir() / user_data_dir():\n" + "\n".join(found)


def test_the_folders_follow_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "c"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "d"))
    assert user_config_dir() == tmp_path / "c" / "spectop"
    assert user_data_dir() == tmp_path / "d" / "spectop"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_data_dir() == tmp_path / "home" / ".local" / "share" / "spectop"
