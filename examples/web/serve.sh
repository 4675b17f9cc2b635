#!/usr/bin/env bash
# The web example on the embedded default, from a fresh machine:
#   bash examples/web/serve.sh [--port 8765] [--base-url URL --model NAME]
# Installs fieldstream with the local engine and the web extra into .venv (once), then serves
# the page on http://127.0.0.1:8765 (not 8000, which mkdocs serve and vLLM take): a form filled
# field by field as the packaged SmolLM2 model writes it (or any OpenAI-compatible server with
# --base-url). http://127.0.0.1:8765/?autostart asks at once, with the default prompt.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash .ci/bootstrap local,web
exec .venv/bin/python examples/web/app.py "$@"
