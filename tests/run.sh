#!/usr/bin/env bash
# The whole test suite, from a fresh machine: bash tests/run.sh [pytest arguments]
# Creates .venv (once), installs the project with every extra, checks formatting, lints,
# type-checks, runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/bootstrap dev,local,cli
.venv/bin/ruff format --check .
.venv/bin/ruff check .
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
