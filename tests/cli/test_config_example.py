"""`spectop config example NAME` prints the sample configs shipped with spectop (a wheel install has them
only inside the package), each a file spectop itself reads as its kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import Spectop, completion_script
from tui.commands.config import EXAMPLES
from tui.paths import sample_configs_dir


def test_every_shipped_sample_config_has_a_name() -> None:
    shipped = {path.name for path in sample_configs_dir().iterdir() if path.name != "README.md"}
    assert {file for file, _ in EXAMPLES.values()} == shipped


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("vllm", "vllm_toml"),
        ("vllm-off", "vllm_toml"),
        ("sglang", "sglang_json"),
        ("client", "client_json"),
        ("spectop", None),
    ],
)
def test_an_example_prints_the_shipped_file_as_it_is(
    run_spectop: Spectop, tmp_path: Path, name: str, kind: str | None
) -> None:
    shown = run_spectop("config", "example", name)
    assert shown.returncode == 0, shown.stderr
    shipped = sample_configs_dir() / EXAMPLES[name][0]
    assert shown.stdout == shipped.read_text(encoding="utf-8")
    if kind is not None:  # the printed file is one spectop edits: redirected to a file, it opens as its kind
        written = tmp_path / shipped.name
        written.write_text(shown.stdout, encoding="utf-8")
        assert f"[{kind}]" in run_spectop("config", "show", str(written)).stdout


def test_a_bad_name_lists_the_choices(run_spectop: Spectop) -> None:
    shown = run_spectop("config", "example", "vlm")
    assert shown.returncode == 2
    assert shown.stderr.startswith("usage: spectop config example ")
    for name in EXAMPLES:
        assert f"'{name}'" in shown.stderr


def test_fish_completes_the_example_names_not_file_names() -> None:
    script = completion_script("fish")
    condition = "-n '_shtab_spectop_using config example; and test $_shtab_spectop_npos -eq 0'"
    lines = [line for line in script.splitlines() if condition in line]
    assert any('-ka "vllm vllm-off sglang client spectop"' in line for line in lines)
    assert not any("__fish_complete_path" in line for line in lines)
