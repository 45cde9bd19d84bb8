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
if ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
  # a .venv made with --without-pip (or whose pip was removed): give it one
  echo "== .venv has no pip; installing it with ensurepip"
  if ! .venv/bin/python -m ensurepip --upgrade >/dev/null; then
    echo "error: .venv has no pip and its Python cannot install one (no ensurepip; on Debian: apt-get install python3-venv); remove .venv and run this again" >&2
    exit 1
  fi
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
# torch first, pinned, and its CPU build: PyPI's torch wheel for Linux x86_64 is the CUDA build
# (pinned or not), with several GB of NVIDIA packages. So torch comes from PyTorch's CPU index,
# unless pip's own configuration already offers a CPU wheel of it (the project's machines
# carry 2.13.0+cpu in a local wheel folder, and cannot reach that index). TORCH_INDEX_URL
# overrides both (TORCH_INDEX_URL=https://pypi.org/simple: PyPI's CUDA build).
TORCH=2.13.0
TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu
torch_installed() {
  .venv/bin/python -c "import importlib.metadata as m, sys; sys.exit(not m.version('torch').startswith('$TORCH'))" 2>/dev/null
}
offered_cpu_torch() {
  # what pip would take from its configured wheel folders alone (no index): a +cpu build?
  .venv/bin/python -m pip install --dry-run --no-deps --no-index --ignore-installed --quiet --report - "torch==$TORCH" 2>/dev/null \
    | .venv/bin/python -c "import json, sys; sys.exit(not any(p['metadata']['version'].endswith('+cpu') for p in json.load(sys.stdin)['install']))" 2>/dev/null
}
if torch_installed; then
  :
elif [ -n "${TORCH_INDEX_URL:-}" ]; then
  echo "== installing torch $TORCH from TORCH_INDEX_URL=$TORCH_INDEX_URL"
  pip_install "torch==$TORCH" --index-url "$TORCH_INDEX_URL"
elif offered_cpu_torch; then
  echo "== installing torch $TORCH, the CPU wheel in pip's configured wheel folders"
  pip_install "torch==$TORCH"
else
  echo "== installing torch $TORCH, the CPU build, from $TORCH_CPU_INDEX"
  pip_install "torch==$TORCH" --index-url "$TORCH_CPU_INDEX"
fi
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
