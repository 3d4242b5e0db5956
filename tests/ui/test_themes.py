"""Theme files: shipped ones load, broken ones are reported and skipped, the choice is remembered."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.paths import themes_dir
from tui.state import remember_theme, remembered_theme, state_path
from tui.ui.themes import load_theme_file, load_themes, next_theme


def test_shipped_themes_load() -> None:
    loaded = load_themes([themes_dir()])
    assert loaded.problems == []
    assert {"spectop-dark", "spectop-light", "spectop-high-contrast"} <= set(loaded.themes)
    assert loaded.themes["spectop-light"].dark is False


def test_broken_theme_is_reported_with_file_and_field_and_skipped(tmp_path: Path) -> None:
    (tmp_path / "good.toml").write_text('name = "mine"\nprimary = "#112233"\n', encoding="utf-8")
    (tmp_path / "bad_colour.toml").write_text('name = "x"\nprimary = "not-a-colour"\n', encoding="utf-8")
    (tmp_path / "bad_toml.toml").write_text("name = \n", encoding="utf-8")
    (tmp_path / "missing.toml").write_text('name = "y"\n', encoding="utf-8")
    loaded = load_themes([tmp_path])
    assert list(loaded.themes) == ["mine"]
    problems = "\n".join(loaded.problems)
    assert "bad_colour.toml: field primary" in problems
    assert "bad_toml.toml: not valid TOML" in problems
    assert "missing.toml: field primary" in problems


def test_user_theme_replaces_a_shipped_one_of_the_same_name(tmp_path: Path) -> None:
    (tmp_path / "dark.toml").write_text('name = "spectop-dark"\nprimary = "#FF0000"\n', encoding="utf-8")
    loaded = load_themes([themes_dir(), tmp_path])
    assert loaded.themes["spectop-dark"].primary == "#FF0000"


def test_choice_is_remembered_under_xdg_config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert remembered_theme() is None
    assert remember_theme("spectop-light") is None
    assert state_path() == tmp_path / "spectop" / "state.json"
    assert remembered_theme() == "spectop-light"
    state_path().write_text("{broken", encoding="utf-8")
    assert remembered_theme() is None  # a broken state file is not fatal


def test_next_theme_wraps() -> None:
    assert next_theme("b", ["a", "b"]) == "a"
    assert next_theme("zzz", ["a", "b"]) == "a"


def test_single_file_error_is_a_value_error(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text('name = "t"\nprimary = "#000"\nsurprise = 1\n', encoding="utf-8")
    with pytest.raises(ValueError, match="field surprise"):
        load_theme_file(path)
