#!/usr/bin/env bash
# Set up and run the whole test suite (CI runs exactly this through .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
# pytest exits 5 when it collects no test; that is a failure here too.
.venv/bin/python -m pytest "$@"
