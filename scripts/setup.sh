#!/usr/bin/env bash
# Create .venv and install rlbench-suite.
#   bash scripts/setup.sh        everything the tests need (scripts/test.sh, .ci/run): every
#                                extra, and the system packages some tests use (Mesa EGL,
#                                PostgreSQL, Chromium) where apt-get may install them
#   bash scripts/setup.sh demo   only what `rlbench demo` needs (scripts/main.sh): the `demo`
#                                extra of pyproject.toml, no system package
# RLBENCH_EXTRAS overrides the extras. Idempotent: a second run only checks what is there.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
PROFILE="${1:-tests}"
case "$PROFILE" in
  tests) DEFAULT_EXTRAS="classic,robotics,multiagent,text,baselines,datasets,leaderboard,distributed,plots,docs,dev" ;;
  demo) DEFAULT_EXTRAS="demo" ;;
  *) echo "error: unknown set-up '$PROFILE'; accepted: tests (the default) or demo" >&2; exit 2 ;;
esac
EXTRAS="${RLBENCH_EXTRAS:-$DEFAULT_EXTRAS}"

if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
pip_install() {
  # quiet, minus the notes about local wheel folders some machines' pip config names
  .venv/bin/python -m pip install -q "$@" 2>&1 | { grep -v "^WARNING: Location 'file:" || true; }
}
APT_UPDATED=0
apt_install() {
  # Debian packages, as root only; the package lists are fetched once per run
  # a failure is reported, not fatal: the tests that need the package skip with a message
  if [ "$APT_UPDATED" = 0 ]; then apt-get update -qq || true; APT_UPDATED=1; fi
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; then
    echo "== warning: apt-get install $* failed; the tests that need it will be skipped"
  fi
}
can_apt() { command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; }
pip_install --upgrade pip
# torch first, pinned: an unpinned torch pulls a multi-GB CUDA build. The project's machines
# carry the CPU wheel of 2.13.0 locally; elsewhere set TORCH_INDEX_URL, e.g.
# https://download.pytorch.org/whl/cpu, to get the CPU build.
pip_install "torch==2.13.0" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
pip_install -e ".[${EXTRAS}]"
if [ "$PROFILE" = demo ]; then
  echo "== installed for the demo: $(.venv/bin/rlbench --version) (the tests need more: bash scripts/setup.sh)"
  exit 0
fi
# MuJoCo renders rgb_array frames headless through EGL (the package sets MUJOCO_GL=egl when
# there is no display): install Mesa's EGL where it is missing and we may.
if ! .venv/bin/python -c "import ctypes.util as u, sys; sys.exit(u.find_library('EGL') is None)"; then
  if can_apt; then
    echo "== installing Mesa EGL for headless MuJoCo rendering"
    apt_install libegl1 libegl-mesa0 libgl1-mesa-dri
  else
    echo "== note: libEGL not found; MuJoCo rendering needs it (apt-get install libegl1 libegl-mesa0)"
  fi
fi
# The leaderboard's tests run against PostgreSQL too (a throwaway cluster on 127.0.0.1):
# install Debian's server where it is missing and we may.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  if can_apt; then
    echo "== installing PostgreSQL for the leaderboard's database tests"
    apt_install postgresql
  else
    echo "== note: PostgreSQL not found; its leaderboard tests will be skipped (apt-get install postgresql)"
  fi
fi
# The leaderboard's browser tests drive Debian's Chromium through Playwright (Playwright's
# own browser download is not used).
if ! command -v chromium >/dev/null; then
  if can_apt; then
    echo "== installing Chromium for the leaderboard's browser tests"
    apt_install chromium
  else
    echo "== note: Chromium not found; the leaderboard's browser tests will be skipped (apt-get install chromium)"
  fi
fi
echo "== installed: $(.venv/bin/rlbench --version)"
