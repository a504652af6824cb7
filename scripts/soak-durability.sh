#!/usr/bin/env bash
# The durability tests at large counts (CI runs them small): kill -9 cycles and power-loss seeds.
# Usage: scripts/soak-durability.sh [KILL_CYCLES] [POWERLOSS_SEEDS]
set -euo pipefail
cd "$(dirname "$0")/.."
export ROCKETSTORE_KILL_CYCLES="${1:-300}"
export ROCKETSTORE_POWERLOSS_SEEDS="${2:-2000}"
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python3
exec "$PY" -m pytest -q tests/durability
