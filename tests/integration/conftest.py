"""The real server for the integration tests: llama.cpp's OpenAI-compatible server (xllamacpp)
on SmolLM2-135M, started once per test session in a child process on 127.0.0.1 and a free
port, stopped at the end (see llama_server.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_server import LlamaServer, start  # this folder is on sys.path (rootdir conftest)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    log = Path(tmp_path_factory.mktemp("llama")) / "server.log"
    server = start(log=log)
    try:
        yield server
    finally:
        server.stop()
