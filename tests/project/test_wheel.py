"""An installed, non-editable spectop finds its themes and sample configs."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import tui

REPO = Path(__file__).resolve().parents[2]

PIP_WHEEL = ("-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w")


def test_the_wheel_carries_themes_and_sample_configs(tmp_path: Path) -> None:
    subprocess.run([sys.executable, *PIP_WHEEL, str(tmp_path), str(REPO)], check=True, timeout=300)
    (wheel,) = tmp_path.glob("spectop-*.whl")
    assert wheel.name.startswith(f"spectop-{tui.__version__}-")  # the version is written once, in tui/
    names = set(zipfile.ZipFile(wheel).namelist())
    themes = {Path(name).name for name in names if name.startswith("tui/_themes/")}
    assert {path.name for path in (REPO / "themes").glob("*.toml")} <= themes
    assert "tui/_sample_configs/config.toml" in names

    target = tmp_path / "installed"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        timeout=300,
    )
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from tui.paths import themes_dir, sample_configs_dir;"
        "print(themes_dir()); print(sample_configs_dir())"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(target)], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    themes_path, samples_path = (Path(line) for line in result.stdout.split())
    assert themes_path.is_relative_to(target) and any(themes_path.glob("*.toml"))
    assert samples_path.is_relative_to(target) and (samples_path / "config_mtp_off.toml").is_file()
    # `spectop config example` prints them from the installed package (README points there, not to paths)
    example = (
        "import sys; sys.path.insert(0, sys.argv[1]); from tui.cli import main;"
        "raise SystemExit(main(['config', 'example', 'vllm-off']))"
    )
    printed = subprocess.run(
        [sys.executable, "-c", example, str(target)], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert printed.stdout == (REPO / "sample_configs" / "config_mtp_off.toml").read_text(encoding="utf-8")
