#!/usr/bin/env bash
# The main job: set up, list the catalog and check every environment.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/rlbench list
.venv/bin/rlbench check
