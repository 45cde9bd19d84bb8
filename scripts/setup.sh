#!/usr/bin/env bash
# Create .venv and install rlbench-suite with everything the main job and the tests need.
# Idempotent: a second run only checks that everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
EXTRAS="${RLBENCH_EXTRAS:-classic,robotics,multiagent,baselines,datasets,plots,dev}"

if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# torch first, pinned to the CPU wheel: an unpinned torch pulls a multi-GB CUDA build.
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[${EXTRAS}]"
echo "== installed: $(.venv/bin/rlbench --version)"
