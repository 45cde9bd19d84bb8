#!/usr/bin/env bash
# Set up and run the whole test suite (CI runs exactly this through .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
# pytest exits 5 when it collects no test; that is a failure here too. Two workers
# (pytest-xdist) by default: every test runs in its own process state and temp folders.
.venv/bin/python -m pytest -n "${RLBENCH_TEST_WORKERS:-2}" --durations=25 "$@"
