#!/usr/bin/env bash
# The whole test suite, from a fresh machine: bash tests/run.sh [pytest arguments]
# Creates .venv (once), installs the project with every extra (again only when pyproject.toml
# changed), checks formatting, lints, type-checks, builds the documentation site strictly (a
# broken link or API reference fails), runs pytest.
#
#   VENV, PYTHON  the virtualenv and the interpreter that creates it (see .ci/bootstrap)
#   EXTRAS        the extras to install (default dev,local,cli,docs); without `local`, the
#                 tests that need it are skipped, each with the reason
#   CHECKS=0      skip ruff, mypy and the site build (e.g. when the same tree was checked on
#                 another Python)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-.venv}
VENV=$venv bash .ci/bootstrap "${EXTRAS:-dev,local,cli,docs}"
if [ "${CHECKS:-1}" != 0 ]; then
    "$venv/bin/ruff" format --check .
    "$venv/bin/ruff" check .
    "$venv/bin/mypy"
    NO_MKDOCS_2_WARNING=1 "$venv/bin/mkdocs" build --strict --quiet # into site/ (ignored)
fi
exec "$venv/bin/python" -m pytest "$@"
