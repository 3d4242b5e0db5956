"""`spectop config ...`: set changes exactly one line; invalid values or files leave every byte as it was;
nothing injected, nothing lost through symlinks, owners, read-only files, full disks or stale temp files."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tui.cli import main
from tui.configs import atomic
from tui.configs.atomic import STALE_TEMP_AGE_S
from tui.configs.document import load_document
from tui.configs.editing import open_config, save_text
from tui.configs.lint import lint_document
from tui.paths import sample_configs_dir

FIXTURES = Path(__file__).parent / "fixtures"
KEY = "speculative.num_speculative_tokens"


@pytest.fixture
def config_toml(tmp_path: Path) -> Path:
    target = tmp_path / "config.toml"
    shutil.copy(sample_configs_dir() / "config.toml", target)
    return target


def _changed_lines(before: bytes, after: bytes) -> list[tuple[bytes, bytes]]:
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(old) == len(new)
    return [(a, b) for a, b in zip(old, new, strict=True) if a != b]


@pytest.mark.parametrize(
    ("sample", "key", "value", "line_before", "line_after"),
    [
        ("config.toml", KEY, "3", b"num_speculative_tokens = 2\n", b"num_speculative_tokens = 3\n"),
        # typed by the schema: a float field written 1 stays a float, a string field a string
        ("config.toml", "model.gpu_memory_utilization", "1", b"gpu_memory_utilization = 0.85\n",
         b"gpu_memory_utilization = 1.0\n"),
        ("config.toml", "model.name", "org/Model-7B", b'name = "deepseek-ai/DeepSeek-V3"\n',
         b'name = "org/Model-7B"\n'),
        ("client_settings.json", "extra_body.top_p", "0.9", b'    "top_p": 0.95,\n', b'    "top_p": 0.9,\n'),
    ],
)  # fmt: skip
def test_set_changes_exactly_the_intended_line(
    tmp_path: Path, sample: str, key: str, value: str, line_before: bytes, line_after: bytes, capsys
) -> None:
    target = tmp_path / sample
    shutil.copy(sample_configs_dir() / sample, target)
    before = target.read_bytes()
    assert main(["config", "set", str(target), key, value]) == 0
    assert _changed_lines(before, target.read_bytes()) == [(line_before, line_after)]
    out = capsys.readouterr().out
    assert f"-{line_before.decode()}" in out and f"+{line_after.decode()}" in out
    assert target.with_name(sample + ".bak").read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == sorted([sample, sample + ".bak"])  # no lock file, no temp file


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


def test_lint_json_output_and_exit_codes(capsys) -> None:
    assert main(["config", "lint", "--json", str(FIXTURES / "seed_sglang_settings.json")]) == 1
    findings = json.loads(capsys.readouterr().out)
    assert {"id", "severity", "line", "key", "message", "fix"} <= set(findings[0])
    assert any(f["id"] == "sglang-unknown-algorithm" and f["line"] == 5 for f in findings)


def test_launch_command_outputs(capsys) -> None:
    assert main(["config", "launch", str(sample_configs_dir() / "config.toml")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("vllm serve deepseek-ai/DeepSeek-V3 \\\n")
    assert """--speculative-config '{"method": "mtp", "num_speculative_tokens": 2}'""" in out
    client = str(sample_configs_dir() / "client_settings.json")
    assert main(["config", "launch", "--format", "yaml", client]) == 1


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


# --- saves: symlinks, owners, read-only files, full disks, stale temp files, typos -----------------------
# Owner tests chown to nobody:nogroup (65534) and need root; "not permitted" and "no space" are injected
# by monkeypatching the atomic module's os calls.

NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


def _tokens(path: Path) -> int:
    return open_config(path).document.get(("speculative", "num_speculative_tokens"))


def _temps(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(".tmp"))


def test_set_through_a_symlink_edits_the_target_and_keeps_the_link(tmp_path: Path, capsys) -> None:
    real_dir, link_dir = tmp_path / "etc", tmp_path / "deploy"
    real_dir.mkdir()
    link_dir.mkdir()
    target = real_dir / "config.toml"
    shutil.copy(sample_configs_dir() / "config.toml", target)
    link = link_dir / "config.toml"
    link.symlink_to(os.path.relpath(target, link_dir))
    before = target.read_bytes()
    assert main(["config", "set", str(link), KEY, "3"]) == 0, capsys.readouterr().err
    assert link.is_symlink() and os.readlink(link) == os.path.relpath(target, link_dir)
    assert _tokens(target) == 3  # what the server reads
    assert (real_dir / "config.toml.bak").read_bytes() == before  # the backup sits beside the target
    assert _temps(real_dir) == [] and sorted(os.listdir(link_dir)) == ["config.toml"]


def test_a_chain_of_symlinks_is_followed_to_the_file(tmp_path: Path) -> None:
    target = tmp_path / "real.toml"
    shutil.copy(sample_configs_dir() / "config.toml", target)
    (tmp_path / "middle.toml").symlink_to("real.toml")
    (tmp_path / "config.toml").symlink_to("middle.toml")
    opened = open_config(tmp_path / "config.toml")
    text = opened.text.replace("num_speculative_tokens = 2", "num_speculative_tokens = 4")
    result = save_text(tmp_path / "config.toml", text, opened.kind, opened.stamp)
    assert result.written == target.resolve()
    assert (tmp_path / "config.toml").is_symlink() and (tmp_path / "middle.toml").is_symlink()
    assert _tokens(target) == 4


@as_root
def test_owner_group_and_mode_survive_a_save_as_root(config_toml: Path, capsys) -> None:
    os.chown(config_toml, NOBODY, NOBODY)
    config_toml.chmod(0o640)
    link = config_toml.with_name("link.toml")
    link.symlink_to(config_toml)
    assert main(["config", "set", str(link), KEY, "3"]) == 0
    assert link.is_symlink()
    for path in (config_toml, config_toml.with_name("config.toml.bak")):
        info = path.stat()
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (NOBODY, NOBODY, 0o640), path
    assert _tokens(config_toml) == 3
    assert "warning" not in capsys.readouterr().err


@as_root
def test_owner_that_cannot_be_kept_is_reported(config_toml: Path, monkeypatch, capsys) -> None:
    os.chown(config_toml, NOBODY, NOBODY)
    config_toml.chmod(0o640)

    def not_permitted(fd: int, uid: int, gid: int) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(atomic.os, "fchown", not_permitted)
    assert main(["config", "set", str(config_toml), KEY, "3"]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "owner nobody:nogroup not kept" in err and "now root:root" in err
    assert _tokens(config_toml) == 3 and stat.S_IMODE(config_toml.stat().st_mode) == 0o640


def test_read_only_file_is_refused_and_force_overrides(config_toml: Path, capsys) -> None:
    config_toml.chmod(0o444)
    before = config_toml.read_bytes()
    assert main(["config", "set", str(config_toml), KEY, "3"]) == 1
    err = capsys.readouterr().err
    assert "read-only (mode 0444" in err and "--force" in err and "Traceback" not in err
    assert config_toml.read_bytes() == before
    assert not config_toml.with_name("config.toml.bak").exists() and _temps(config_toml.parent) == []
    assert main(["config", "set", "--force", str(config_toml), KEY, "3"]) == 0
    assert _tokens(config_toml) == 3 and stat.S_IMODE(config_toml.stat().st_mode) == 0o444


@pytest.mark.parametrize(
    ("mode", "file_uid", "file_gid", "uid", "groups", "writable"),
    [
        (0o444, 0, 0, 0, [0], False),  # root: no write bit at all -> read-only on purpose
        (0o400, 1000, 1000, 0, [0], False),
        (0o644, 1000, 1000, 0, [0], True),  # root may write someone else's writable file
        (0o004 | 0o002, 1000, 1000, 0, [0], True),
        (0o644, 1000, 1000, 1000, [1000], True),
        (0o444, 1000, 1000, 1000, [1000], False),
        (0o464, 1000, 50, 1000, [50], False),  # the owner bits count for the owner, not the group's
        (0o464, 1000, 50, 1001, [50], True),
        (0o446, 1000, 50, 1001, [50], False),
        (0o446, 1000, 50, 1001, [60], True),
        (0o644, 1000, 1000, 1001, [1001], False),
    ],
)
def test_mode_allows_write(
    mode: int, file_uid: int, file_gid: int, uid: int, groups: list[int], writable: bool
) -> None:
    assert atomic.mode_allows_write(mode, file_uid, file_gid, uid, groups) is writable


def test_temp_file_that_cannot_be_created_is_a_one_line_error(config_toml: Path, monkeypatch, capsys) -> None:
    real_open = os.open

    def read_only_dir(path: str | os.PathLike[str], flags: int, mode: int = 0o777, **kwargs: object) -> int:
        if flags & os.O_CREAT and Path(path).parent == config_toml.parent:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, mode, **kwargs)

    monkeypatch.setattr(atomic.os, "open", read_only_dir)
    before = config_toml.read_bytes()
    assert main(["config", "set", str(config_toml), KEY, "3"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot create a temporary file" in err[0] and "Permission denied" in err[0]
    assert config_toml.read_bytes() == before and _temps(config_toml.parent) == []


@pytest.mark.parametrize("call", ["write", "fsync"])
def test_full_disk_is_a_one_line_error(config_toml: Path, monkeypatch, capsys, call: str) -> None:
    def no_space(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, call, no_space)
    before = config_toml.read_bytes()
    assert main(["config", "set", str(config_toml), KEY, "3"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no space left on the device" in err[0] and "unchanged" in err[0]
    assert config_toml.read_bytes() == before
    assert _temps(config_toml.parent) == []


def test_full_disk_after_the_backup_keeps_the_file_and_a_whole_backup(config_toml: Path, monkeypatch) -> None:
    real_fsync = os.fsync
    temps_synced: list[int] = []

    def full_on_the_second_temp(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
            temps_synced.append(fd)
            if len(temps_synced) == 2:  # the backup's temp went through; the file's own fails
                raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", full_on_the_second_temp)
    before = config_toml.read_bytes()
    opened = open_config(config_toml)
    with pytest.raises(atomic.SaveError, match="no space left on the device; the file is unchanged"):
        save_text(config_toml, opened.text.replace("= 2", "= 3"), opened.kind, opened.stamp)
    assert config_toml.read_bytes() == before
    assert config_toml.with_name("config.toml.bak").read_bytes() == before
    assert _temps(config_toml.parent) == []


def test_stale_temp_files_of_this_file_are_removed_by_the_next_save(config_toml: Path) -> None:
    folder = config_toml.parent
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead_pid = int(finished.stdout)
    old = time.time() - 2 * STALE_TEMP_AGE_S
    stale = {
        f".config.toml.{dead_pid}.0123abcd.tmp": None,  # writer is gone
        f".config.toml.bak.{dead_pid}.89abcdef.tmp": None,  # the backup's temp, writer gone
        f".config.toml.{os.getpid()}.deadbeef.tmp": old,  # too old to belong to a running save
        ".config.toml.k3j_9x2q.tmp": old,  # older spectop's mkstemp name, old
    }
    kept = {
        f".config.toml.{os.getpid()}.feedf00d.tmp": None,  # a live writer, fresh
        ".config.toml.k3j_9x2r.tmp": None,  # mkstemp name, fresh (its writer may be running)
        f".other.toml.{dead_pid}.0123abcd.tmp": old,  # another file's temp
        f".config.toml.{dead_pid}.0123abcd.tmp.keep": old,  # not the pattern
        f"config.toml.{dead_pid}.0123abcd.tmp": old,  # not hidden: not ours
        ".config.toml.notes.tmp": old,  # not the pattern
    }
    for name, mtime in {**stale, **kept}.items():
        (folder / name).write_text("partial")
        if mtime is not None:
            os.utime(folder / name, (mtime, mtime))
    (folder / f".config.toml.{dead_pid}.aaaabbbb.tmp").mkdir()  # a folder is never removed
    assert main(["config", "set", str(config_toml), KEY, "3"]) == 0
    left = set(os.listdir(folder))
    assert not set(stale) & left
    assert set(kept) <= left and f".config.toml.{dead_pid}.aaaabbbb.tmp" in left
    atomic.remove_stale_temps(folder / "missing-dir", "config.toml")  # never raises


def test_misspelled_key_is_refused_with_a_suggestion(config_toml: Path, capsys) -> None:
    before = config_toml.read_bytes()
    assert main(["config", "set", str(config_toml), "speculative.num_speculativ_tokens", "3"]) == 1
    err = capsys.readouterr().err
    assert "did you mean 'speculative.num_speculative_tokens'?" in err and "--new-key" in err
    assert config_toml.read_bytes() == before
    assert main(["config", "set", str(config_toml), "modle.name", "x"]) == 1
    assert "did you mean 'model.name'?" in capsys.readouterr().err
    assert config_toml.read_bytes() == before
    assert main(["config", "get", str(config_toml), "num_speculative_tokens"]) == 1
    err = capsys.readouterr().err
    assert "no key 'num_speculative_tokens'" in err
    assert "did you mean 'speculative.num_speculative_tokens'?" in err


def test_new_key_adds_an_unknown_key_and_existing_unknown_keys_can_be_changed(config_toml: Path) -> None:
    assert main(["config", "set", "--new-key", str(config_toml), "model.enforce_eager", "true"]) == 0
    assert open_config(config_toml).document.get(("model", "enforce_eager")) is True
    assert main(["config", "set", str(config_toml), "model.enforce_eager", "false"]) == 0  # now in the file
    assert main(["config", "set", str(config_toml), "sim.base_step_ms", "20"]) == 0  # free-form section
    assert main(["config", "set", str(config_toml), "scheduler.max_num_batched_tokens", "4096"]) == 0


def test_lint_warns_about_unknown_keys_in_a_known_section() -> None:
    text = (
        '[model]\nname = "deepseek-ai/DeepSeek-V3"\n[speculative]\nmethod = "mtp"\n'
        "num_speculativ_tokens = 3\n[custom]\nanything = 1\n"
    )
    findings = {f.key: f for f in lint_document(load_document(text, "vllm_toml")) if f.id == "unknown-key"}
    typo = findings["speculative.num_speculativ_tokens"]
    assert typo.severity == "warning" and "did you mean 'speculative.num_speculative_tokens'?" in typo.message
    assert findings["custom"].severity == "warning"  # an unknown table at the top of the file
    assert "custom.anything" not in findings  # inside an unknown table spectop cannot tell
    sglang = load_document('{"model_path": "m", "speculative_num_step": 3}', "sglang_json")
    by_key = {f.key: f for f in lint_document(sglang) if f.id == "unknown-key"}
    assert by_key["speculative_num_step"].severity == "warning"
    assert "'speculative_num_steps'" in by_key["speculative_num_step"].message


@pytest.mark.parametrize("action", [["show"], ["get", KEY], ["set", KEY, "3"], ["lint"], ["launch"]])
def test_missing_file_exits_2(tmp_path: Path, action: list[str], capsys) -> None:
    missing = str(tmp_path / "nonexistent.toml")
    assert main(["config", action[0], missing, *action[1:]]) == 2
    assert "No such file" in capsys.readouterr().err


def test_extended_attributes_are_kept(config_toml: Path, monkeypatch, capsys) -> None:
    try:
        os.setxattr(config_toml, "user.spectop-test", b"kept")
    except OSError:
        pytest.skip("no user xattrs on this filesystem")
    assert main(["config", "set", str(config_toml), KEY, "3"]) == 0
    assert os.getxattr(config_toml, "user.spectop-test") == b"kept"
    assert os.getxattr(config_toml.with_name("config.toml.bak"), "user.spectop-test") == b"kept"

    def refused(*args: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(atomic.os, "setxattr", refused)
    assert main(["config", "set", str(config_toml), KEY, "4"]) == 0
    assert "extended attributes not kept (not permitted): user.spectop-test" in capsys.readouterr().err


def test_hard_links_are_reported(config_toml: Path, capsys) -> None:
    other = config_toml.with_name("copy.toml")
    os.link(config_toml, other)
    assert main(["config", "set", str(config_toml), KEY, "3"]) == 0
    assert "1 other hard link(s); they still hold the previous version" in capsys.readouterr().err
    assert _tokens(config_toml) == 3 and _tokens(other) == 2
