#!/usr/bin/env bash
# The main job: set up, then `rlbench demo`: the shipped baselines evaluated on a quick suite,
# a dataset through a local mirror, the fast quadrotor trained and flown on PyBullet, every
# Result verified and ranked on the embedded leaderboard, then its site served until Ctrl-C.
# Extra arguments go to `rlbench demo` (e.g. --no-serve, --data-dir DIR, --port N).
# It installs only what the demo needs (no system package); scripts/test.sh installs the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh demo
exec .venv/bin/rlbench demo "$@"
