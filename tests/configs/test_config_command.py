"""`spectop config ...`: set changes exactly one line; invalid values or files leave every byte as it was."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tui.cli import main
from tui.paths import sample_configs_dir

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def config_toml(tmp_path: Path) -> Path:
    target = tmp_path / "config.toml"
    shutil.copy(sample_configs_dir() / "config.toml", target)
    return target


def _changed_lines(before: bytes, after: bytes) -> list[tuple[bytes, bytes]]:
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(old) == len(new)
    return [(a, b) for a, b in zip(old, new, strict=True) if a != b]


def test_set_changes_exactly_the_intended_line(config_toml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = config_toml.read_bytes()
    assert main(["config", "set", str(config_toml), "speculative.num_speculative_tokens", "3"]) == 0
    after = config_toml.read_bytes()
    assert _changed_lines(before, after) == [
        (b"num_speculative_tokens = 2\n", b"num_speculative_tokens = 3\n")
    ]
    out = capsys.readouterr().out
    assert "-num_speculative_tokens = 2" in out and "+num_speculative_tokens = 3" in out
    assert (config_toml.parent / "config.toml.bak").read_bytes() == before


def test_set_types_the_value_by_the_schema(config_toml: Path) -> None:
    before = config_toml.read_bytes()
    assert main(["config", "set", str(config_toml), "model.gpu_memory_utilization", "1"]) == 0
    assert _changed_lines(before, config_toml.read_bytes()) == [
        (b"gpu_memory_utilization = 0.85\n", b"gpu_memory_utilization = 1.0\n")
    ]
    assert main(["config", "set", str(config_toml), "model.name", "org/Model-7B"]) == 0
    assert b'name = "org/Model-7B"\n' in config_toml.read_bytes()


def test_set_json_nested_key_keeps_layout(tmp_path: Path) -> None:
    target = tmp_path / "client.json"
    shutil.copy(sample_configs_dir() / "client_settings.json", target)
    before = target.read_bytes()
    assert main(["config", "set", str(target), "extra_body.top_p", "0.9"]) == 0
    assert _changed_lines(before, target.read_bytes()) == [(b'    "top_p": 0.95,\n', b'    "top_p": 0.9,\n')]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("speculative.num_speculative_tokens", "0"),
        ("speculative.num_speculative_tokens", "17"),
        ("speculative.num_speculative_tokens", "two"),
        ("model.gpu_memory_utilization", "1.5"),
        ("speculative.acceptance_threshold", "-0.1"),
        ("speculative.enabled", "yes"),
        ("model.name.sub", "x"),
        ("speculative..x", "1"),
    ],
)
def test_invalid_values_leave_the_file_byte_identical(
    config_toml: Path, key: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = config_toml.read_bytes()
    mtime = config_toml.stat().st_mtime_ns
    assert main(["config", "set", str(config_toml), key, value]) == 1
    assert config_toml.read_bytes() == before
    assert config_toml.stat().st_mtime_ns == mtime
    assert not (config_toml.parent / "config.toml.bak").exists()
    assert "spectop config:" in capsys.readouterr().err


def test_invalid_file_is_never_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_bytes(b'[model]\nname = "m"\n[speculative]\nnum_speculative_tokens = = 2\n')
    before = broken.read_bytes()
    assert main(["config", "set", str(broken), "model.name", "x"]) == 1
    assert broken.read_bytes() == before
    assert "line 4" in capsys.readouterr().err
    assert main(["config", "lint", str(broken)]) == 1


def test_dry_run_prints_the_diff_and_writes_nothing(config_toml: Path, capsys) -> None:
    before = config_toml.read_bytes()
    assert main(["config", "set", "--dry-run", str(config_toml), "scheduler.max_num_seqs", "32"]) == 0
    assert config_toml.read_bytes() == before
    assert "+max_num_seqs = 32" in capsys.readouterr().out


def test_set_can_fix_a_seed_error_despite_other_problems(tmp_path: Path) -> None:
    target = tmp_path / "settings.json"
    shutil.copy(FIXTURES / "seed_sglang_settings.json", target)
    assert main(["config", "lint", str(target)]) == 1
    assert main(["config", "set", str(target), "speculative_algorithm", "EAGLE"]) == 0
    assert json.loads(target.read_text())["speculative_algorithm"] == "EAGLE"
    assert main(["config", "lint", str(target)]) == 0


def test_get_show_and_forced_kind(config_toml: Path, tmp_path: Path, capsys) -> None:
    assert main(["config", "get", str(config_toml), "speculative.num_speculative_tokens"]) == 0
    assert capsys.readouterr().out == "2\n"
    assert main(["config", "get", str(config_toml), "speculative.nope"]) == 1
    assert "no key 'speculative.nope'" in capsys.readouterr().err
    assert main(["config", "show", str(config_toml)]) == 0
    shown = capsys.readouterr().out
    assert "vllm_toml" in shown and "num_speculative_tokens" in shown and "0.85" in shown
    odd = tmp_path / "odd.conf"
    odd.write_text('{"model_path": "m", "base_url": "http://x", "timeout": 5, "stream": true}\n')
    assert main(["config", "show", "--kind", "sglang", str(odd)]) == 0
    assert "sglang_json" in capsys.readouterr().out
    assert main(["config", "show", "--kind", "yaml", str(odd)]) == 1
    assert "unknown kind" in capsys.readouterr().err
    assert main(["config", "show", str(tmp_path / "missing.toml")]) == 2  # README: unreadable file -> 2


def test_lint_json_output_and_exit_codes(capsys) -> None:
    assert main(["config", "lint", "--json", str(FIXTURES / "seed_sglang_settings.json")]) == 1
    findings = json.loads(capsys.readouterr().out)
    assert {"id", "severity", "line", "key", "message", "fix"} <= set(findings[0])
    assert any(f["id"] == "sglang-unknown-algorithm" and f["line"] == 5 for f in findings)
    for sample in ("config.toml", "config_mtp_off.toml", "sglang_settings.json", "client_settings.json"):
        assert main(["config", "lint", str(sample_configs_dir() / sample)]) == 0, sample
        capsys.readouterr()


def test_launch_command_outputs(capsys) -> None:
    assert main(["config", "launch", str(sample_configs_dir() / "config.toml")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("vllm serve deepseek-ai/DeepSeek-V3 \\\n")
    assert """--speculative-config '{"method": "mtp", "num_speculative_tokens": 2}'""" in out
    assert (
        main(["config", "launch", "--format", "yaml", str(sample_configs_dir() / "sglang_settings.json")])
        == 0
    )
    assert "speculative-algorithm: EAGLE" in capsys.readouterr().out
    assert (
        main(["config", "launch", "--format", "yaml", str(sample_configs_dir() / "client_settings.json")])
        == 1
    )


def test_client_launch_never_prints_the_key(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECTOP_API_KEY", "sk-very-secret-value")
    assert main(["config", "launch", str(sample_configs_dir() / "client_settings.json")]) == 0
    out = capsys.readouterr().out
    assert "sk-very-secret-value" not in out
    assert '"Authorization: Bearer $SPECTOP_API_KEY"' in out
    assert os.environ["SPECTOP_API_KEY"] == "sk-very-secret-value"


def test_credentials_in_a_file_are_masked_and_flagged(tmp_path: Path, capsys) -> None:
    target = tmp_path / "client.json"
    target.write_text('{"base_url": "http://127.0.0.1:8000/v1", "api_key": "sk-do-not-print-me"}\n')
    assert main(["config", "show", str(target)]) == 0
    assert main(["config", "get", str(target), "api_key"]) == 0
    assert main(["config", "lint", "--json", str(target)]) == 0
    out = capsys.readouterr().out
    assert "sk-do-not-print-me" not in out
    assert "****" in out and "secret-in-file" in out
