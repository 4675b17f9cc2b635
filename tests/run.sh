#!/usr/bin/env bash
# The whole test suite, from a fresh machine: bash tests/run.sh [pytest arguments]
# Creates .venv (once), installs the project with every extra (again only when pyproject.toml
# changed), checks formatting, lints, type-checks, builds the documentation site strictly (a
# broken link or API reference fails), runs pytest. Each step says when it starts and how long
# it took; pytest names each slow test as it ends, with its time (tests/conftest.py), and
# prints the 15 slowest at the end (--durations=15; a later --durations=N wins).
#
#   VENV, PYTHON  the virtualenv and the interpreter that creates it (see .ci/bootstrap)
#   EXTRAS        the extras to install (default dev,local,torch,cli,docs); without `local` (the
#                 local engine's llama.cpp runtime) or `torch` (its torch runtime), the tests
#                 that need it are skipped, each with the reason
#   CHECKS=0      skip ruff, mypy and the site build (e.g. when the same tree was checked on
#                 another Python)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-.venv}
VENV=$venv bash .ci/bootstrap "${EXTRAS:-dev,local,torch,cli,docs}"
say() { printf 'run.sh: %s\n' "$*" >&2; }
step() { # step "what" command...: run it, say how long it took
    local what=$1 start=$SECONDS
    shift
    say "$what ..."
    "$@"
    say "$what: done in $((SECONDS - start)) s"
}
if [ "${CHECKS:-1}" != 0 ]; then
    step "ruff format --check" "$venv/bin/ruff" format --check .
    step "ruff check" "$venv/bin/ruff" check .
    step "mypy --strict" "$venv/bin/mypy"
    # into site/ (ignored)
    step "mkdocs build --strict" env NO_MKDOCS_2_WARNING=1 "$venv/bin/mkdocs" build --strict --quiet
fi
say "pytest (each slow test, which loads the real model or starts the real server, is named as it ends) ..."
exec "$venv/bin/python" -m pytest --durations=15 "$@"
