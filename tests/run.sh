#!/usr/bin/env bash
# The whole test suite, from a fresh machine: bash tests/run.sh [pytest arguments]
# Creates .venv (once), installs the project with every extra, checks formatting, lints,
# type-checks, builds the documentation site strictly (a broken link or API reference fails),
# runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/bootstrap dev,local,cli,docs
.venv/bin/ruff format --check .
.venv/bin/ruff check .
.venv/bin/mypy
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet  # into site/ (ignored)
exec .venv/bin/python -m pytest "$@"
